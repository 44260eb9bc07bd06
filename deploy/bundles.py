"""What goes into each deployable: our packages (copied as source) and the distributions they need
(installed with their dependencies, at the versions pinned in constraints.txt). The Lambda zips, the
MCP server image's requirements file and the bundle tests all read this one list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bundle:
    name: str
    packages: tuple[str, ...]
    requirements: tuple[str, ...]
    entry_point: str  # module:function, as Lambda's Handler or the container's command

    @property
    def entry_module(self) -> str:
        return self.entry_point.split(":", 1)[0]


_STATE = ("boto3", "aws-lambda-powertools", "pydantic", "pydantic-settings")
_REDACTION = "ahocorasick-rs"  # mcp_server.secret_kinds: every deployable redacts what it sends

SUPERVISOR = Bundle(
    "supervisor",
    ("supervisor", "mcp_server"),  # the supervisor imports the tool contract from mcp_server
    (
        *_STATE,
        "langgraph",
        "langchain-core",
        "langchain-aws",
        "langchain",
        "mcp",
        "httpx2",
        "anyio",
        "json-repair",
        "tenacity",
        _REDACTION,
    ),
    "supervisor.orchestrator:handler",
)
# The watchdog uses the supervisor's incident store, which validates names with mcp_server.lambda_names.
WATCHDOG = Bundle(
    "watchdog", ("watchdog", "supervisor", "mcp_server"), (*_STATE, _REDACTION), "watchdog.handler:handler"
)
# The executor applies plans and verifies recovery through the MCP client (supervisor.agent.mcp_client); it
# reads the plan with the supervisor's remediation code, which validates names with mcp_server.
EXECUTOR = Bundle(
    "executor",
    ("executor", "supervisor", "mcp_server"),
    (*_STATE, "mcp", "httpx2", "anyio", _REDACTION),
    "executor.handler:handler",
)
# The image also runs the incident console (its own service in the template), which reads incidents
# through supervisor.incident, prices LLM calls with supervisor.agent.prices and records a decision on a
# plan with executor.approvals: source only, none of their distributions (langchain and the rest are never
# imported by the console).
MCP_SERVER = Bundle(
    "mcp-server",
    ("mcp_server", "console", "supervisor", "executor"),
    (
        "mcp",
        "boto3",
        "pydantic",
        "pydantic-settings",
        "starlette",
        "sse-starlette",
        "uvicorn",
        "anyio",
        "httpx2",
        "pyjwt[crypto]",
        "jinja2",
        "secure",
        _REDACTION,
    ),
    "mcp_server.cli:main",
)
LAMBDA_BUNDLES = (SUPERVISOR, WATCHDOG, EXECUTOR)
