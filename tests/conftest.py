"""Shared fixtures: one sandbox per test session, and a way to undo what a test broke."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.alarms import drain_sns_events
from chaos.workload.runtime import LocalLambdaRuntime
from tests.mcp_support import server_process

Undo = Callable[[Callable[[], object]], None]


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_aws() -> None:
    """Nothing in the tests may reach a real account through the developer's environment."""
    for variable in [v for v in os.environ if v.startswith("AWS_")]:
        del os.environ[variable]


@pytest.fixture(scope="session")
def sandbox_started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, float]]:
    """The session's sandbox and how long it took to start and provision."""
    started = time.monotonic()
    with running_sandbox(tmp_path_factory.mktemp("sandbox")) as sandbox:
        yield sandbox, time.monotonic() - started


@pytest.fixture(scope="session")
def sandbox(sandbox_started: tuple[Sandbox, float]) -> Sandbox:
    return sandbox_started[0]


@pytest.fixture(scope="session")
def mcp_server_url(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`incident-mcp-server` as shipped, for the whole session: key from SSM, AWS as the read-only
    mcp-server profile, SSE and Streamable HTTP on one port."""
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    with server_process(env, tmp_path_factory.mktemp("mcp") / "server.log") as server:
        yield server.url


@pytest.fixture
def undo() -> Iterator[Undo]:
    """Register restore steps; they run after the test, last registered first, even if it failed."""
    steps: list[Callable[[], object]] = []
    yield steps.append
    for step in reversed(steps):
        step()


@pytest.fixture
def runtime(sandbox: Sandbox) -> Iterator[LocalLambdaRuntime]:
    with LocalLambdaRuntime(
        sandbox.session(names.LAMBDA_SERVICE), alarm_topic_arn=sandbox.world.topic_arn
    ) as rt:
        yield rt


@pytest.fixture
def alarm_events(sandbox: Sandbox) -> Callable[[], list[dict[str, object]]]:
    """Drains the trigger queue now (so a test sees only its own alarms) and returns a drain function."""
    sqs = sandbox.session(names.OPERATOR).client("sqs")

    def drain(wait_seconds: int = 0) -> list[dict[str, object]]:
        return drain_sns_events(
            sqs,
            sandbox.world.trigger_queue_url,
            sandbox.world.trigger_subscription_arn,
            wait_seconds=wait_seconds,
        )

    drain()
    return drain
