"""The drill's infrastructure faults: each gives the supervisor overrides for one scenario, and checks
afterwards what the fault observed (connections, requests)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from chaos.bedrock_fake import FakeConverse, aws_error
from chaos.drill.checks import Check
from chaos.drill.scenarios import Infra
from chaos.drill.settings import DrillSettings
from chaos.loopback import BlackHole, FlappingProxy, free_port, served_in_thread
from chaos.sandbox import names

BEDROCK_MODEL = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@dataclass
class InfraFault:
    """Supervisor setting overrides while the fault is in place; ``checks`` run once it was handled.
    ``checks`` receive the failed attempts the audit record lists (for the retry scenario)."""

    overrides: dict[str, Any]
    checks: Callable[[list[str]], list[Check]] = field(default=lambda _: [])


@contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) environment variables for the duration; then put them back."""
    saved = {key: os.environ.get(key) for key in values}

    def apply(changes: dict[str, str | None]) -> None:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    apply(values)
    try:
        yield
    finally:
        apply(saved)


@contextmanager
def infra_fault(kind: Infra | None, mcp_url: str, settings: DrillSettings) -> Iterator[InfraFault]:
    """The fault of ``kind`` in place around the scenario (``mcp_url`` is the healthy server)."""
    if kind is None:
        yield InfraFault({"mcp_server_url": f"{mcp_url}/sse"})
    elif kind == "mcp-down":
        yield InfraFault({"mcp_server_url": f"http://127.0.0.1:{free_port()}/sse"})
    elif kind == "mcp-timeout":
        with BlackHole() as hole:
            timeout = settings.mcp_timeout_seconds
            yield InfraFault(
                {
                    "mcp_server_url": f"{hole.url}/sse",
                    "mcp_connect_timeout": timeout,
                    "mcp_init_timeout": timeout,
                },
                lambda _: [
                    Check(
                        "one retry",
                        len(hole.accepted) == 2,
                        f"{len(hole.accepted)} connection(s) to the silent server (expected 2: try + retry)",
                    )
                ],
            )
    elif kind == "mcp-flapping":
        with FlappingProxy(int(mcp_url.rsplit(":", 1)[1]), settings.reset_connections) as proxy:
            yield InfraFault(
                {"mcp_server_url": f"{proxy.url}/sse"},
                lambda failed: [
                    Check(
                        "recovered on retry",
                        len(failed) == 1 and failed[0].startswith("mcp_connection") and proxy.forwarded > 0,
                        f"failed attempts {failed}; {proxy.reset} connection(s) reset, then "
                        f"{proxy.forwarded} forwarded",
                    )
                ],
            )
    else:
        fake = FakeConverse(
            script=[aws_error(403, "AccessDeniedException", "not authorized to perform bedrock:InvokeModel")]
            * 3
        )
        with served_in_thread(fake.app()) as url, _environment(_fake_bedrock_env(url)):
            yield InfraFault(
                {"mcp_server_url": f"{mcp_url}/sse", "supervisor_model": BEDROCK_MODEL},
                lambda _: [
                    Check(
                        "no retry",
                        len(fake.requests) == 1,
                        f"{len(fake.requests)} request(s) to Bedrock (expected 1: no retry of AccessDenied)",
                    )
                ],
            )


def _fake_bedrock_env(url: str) -> dict[str, str | None]:
    """Bedrock at the fake endpoint with throwaway credentials, in the sandbox's region (the product takes
    its region from the environment and has none of its own); nothing else changes endpoint."""
    return {
        "AWS_PROFILE": None,  # a named profile would take precedence over the throwaway keys
        "AWS_REGION": names.DEFAULT_REGION,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url,
        "AWS_ACCESS_KEY_ID": "drill",
        "AWS_SECRET_ACCESS_KEY": "drill",
        "AWS_SESSION_TOKEN": "drill",
    }
