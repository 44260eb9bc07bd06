"""The MCP conformance suites (@modelcontextprotocol/conformance, a release and a prerelease) against the
shipped server over Streamable HTTP: every scenario that applies to a tools-only server passes; the
others are listed here, and in docs/tools.md, with the reason they do not apply."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaos.mcp_process import ServerProcess, server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from tests.node_tools import ROOT, bin_script, run_node, version


@dataclass(frozen=True)
class Suite:
    package: str  # the alias in node-tools/package.json
    selection: tuple[str, ...]  # the CLI's flags choosing the scenarios
    applies: frozenset[str]  # scenarios that must pass

    @property
    def id(self) -> str:
        return f"{version(self.package)} {' '.join(self.selection)}"


COMMON = frozenset(
    {"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"}
)
SUITES = {
    "0.1 at 2025-11-25": Suite("conformance-0.1", ("--spec-version", "2025-11-25"), COMMON),
    "0.2 at 2025-11-25": Suite(
        "conformance-0.2", ("--requirements", "2025-11-25"), COMMON | {"server-session-lifecycle"}
    ),
    "0.2 at 2026-07-28": Suite(
        "conformance-0.2",
        ("--requirements", "2026-07-28"),
        frozenset(
            {
                "server-stateless",
                "tools-list",
                "server-sse-multiple-streams",
                "dns-rebinding-protection",
                "caching",
                "http-header-validation",
                "input-required-result-unsupported-methods",
            }
        ),
    ),
}

FIXTURE_TOOL = "calls a tool of the suite's reference server that this server does not have"
NO_PROMPTS = "the server has no prompts (it advertises tools only)"
NO_RESOURCES = "the server has no resources (it advertises tools only)"
MID_CALL_INPUT = "the tools never ask the client for input mid-call (SEP-2322 input-required results)"
NOT_APPLICABLE = {
    "logging-set-level": "no `logging` capability: the tools send no log notifications",
    "completion-complete": "nothing to complete (no prompts, no resource templates)",
    "tools-call-simple-text": FIXTURE_TOOL
    + " (`test_simple_text`; the suite counts the unknown-tool error as a pass)",
    "tools-call-error": FIXTURE_TOOL
    + " (`test_error_handling`; the suite counts the unknown-tool error as a pass)",
    "tools-call-image": FIXTURE_TOOL + ": the tools return JSON, never images",
    "tools-call-audio": FIXTURE_TOOL + ": the tools return JSON, never audio",
    "tools-call-embedded-resource": FIXTURE_TOOL + ": the tools embed no resources",
    "tools-call-mixed-content": FIXTURE_TOOL + ": the tools return JSON only",
    "tools-call-with-logging": FIXTURE_TOOL + ": the tools send no log notifications",
    "tools-call-with-progress": FIXTURE_TOOL + ": the tools answer within their deadline, without progress",
    "tools-call-sampling": FIXTURE_TOOL + ": the tools never ask the client's model (sampling)",
    "tools-call-elicitation": FIXTURE_TOOL + ": the tools never ask the user (elicitation)",
    "elicitation-sep1034-defaults": "the tools never ask the user (elicitation)",
    "elicitation-sep1330-enums": "the tools never ask the user (elicitation)",
    "json-schema-2020-12": FIXTURE_TOOL + " (`json_schema_2020_12_tool`)",
    "server-sse-polling": "POSTs are answered with plain JSON, so there is no event stream to resume; "
    "the suite runs no check",
    "resources-list": NO_RESOURCES,
    "resources-read-text": NO_RESOURCES,
    "resources-read-binary": NO_RESOURCES,
    "resources-templates-read": NO_RESOURCES,
    "resources-subscribe": NO_RESOURCES,
    "resources-unsubscribe": NO_RESOURCES,
    "sep-2164-resource-not-found": NO_RESOURCES + ": `resources/read` is 'method not found' (-32601), "
    "not 'resource not found' (-32602)",
    "prompts-list": NO_PROMPTS,
    "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS,
    "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
    "http-custom-header-server-validation": "no tool declares an `x-mcp-header` parameter (SEP-2243)",
    **{
        f"input-required-result-{name}": MID_CALL_INPUT
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "missing-input-response",
            "non-tool-request",
            "result-type",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "validate-input",
        )
    },
    **{
        f"tasks-{name}": "the tasks extension: the tools answer within their deadline, no long-running tasks"
        for name in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
}
# Checks inside applicable scenarios that exercise something this server does not have.
NOT_APPLICABLE_CHECKS = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): FIXTURE_TOOL
    + " (`test_missing_capability`, which needs the client's sampling capability; no tool here needs one)",
    ("server-stateless", "sep-2575-missing-capability-http-400"): FIXTURE_TOOL
    + " (`test_missing_capability`)",
    ("caching", "sep-2549-prompts-list-caching-hints"): NO_PROMPTS,
    ("caching", "sep-2549-resources-list-caching-hints"): NO_RESOURCES,
    ("caching", "sep-2549-resources-templates-list-caching-hints"): NO_RESOURCES,
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


@pytest.fixture(scope="module")
def server(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The shipped server without a key (the suites send none), on loopback as that requires."""
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    log = tmp_path_factory.mktemp("conformance") / "server.log"
    with server_process(env, log, "--insecure-no-auth") as process:
        yield process


def _run(suite: Suite, url: str, output: Path) -> dict[str, list[dict[str, str]]]:
    """Each scenario's checks, as the suite wrote them."""
    script = bin_script(suite.package, "conformance")
    result = run_node(script, "server", "--url", f"{url}/mcp", *suite.selection, "--output-dir", str(output))
    scenarios = {}
    for directory in output.iterdir():
        match = RESULT_DIR.match(directory.name)
        assert match, f"unexpected result directory {directory.name}"
        scenarios[match["scenario"]] = json.loads((directory / "checks.json").read_text())
    assert scenarios, f"the suite ran nothing:\n{result.stdout}\n{result.stderr}"
    return scenarios


@pytest.mark.parametrize("name", list(SUITES))
def test_every_applicable_scenario_passes(server: ServerProcess, name: str, tmp_path: Path) -> None:
    suite = SUITES[name]
    scenarios = _run(suite, server.url, tmp_path)
    unclassified = set(scenarios) - suite.applies - set(NOT_APPLICABLE)
    assert not unclassified, f"{suite.id}: new scenarios, say whether they apply: {sorted(unclassified)}"
    assert suite.applies <= set(scenarios), (
        f"{suite.id} no longer runs {sorted(suite.applies - set(scenarios))}"
    )
    failures = [
        f"{scenario}: {check['id']}: {check.get('errorMessage', check.get('description'))}"
        for scenario in sorted(suite.applies)
        for check in scenarios[scenario]
        if check["status"] == "FAILURE" and (scenario, check["id"]) not in NOT_APPLICABLE_CHECKS
    ]
    assert not failures, f"{suite.id}:\n" + "\n".join(failures)


def test_the_tools_page_lists_what_does_not_apply_and_why() -> None:
    page = (ROOT / "docs" / "tools.md").read_text()
    section = page[page.index("### Conformance") :]
    section = section[: section.index("\n## ")]
    missing = [name for name in NOT_APPLICABLE if f"`{name}`" not in section]
    assert not missing, f"docs/tools.md's conformance section does not list {missing}"
    for scenario, check in NOT_APPLICABLE_CHECKS:
        assert f"`{check}`" in section, f"docs/tools.md does not list {scenario}/{check}"
