"""Shared fixtures: one sandbox per test session, and a way to undo what a test broke."""

from __future__ import annotations

import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest

from chaos.bedrock_fake import FakeConverse
from chaos.faults.chaos import Chaos, Fault
from chaos.loopback import served_in_thread
from chaos.mcp_process import server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.sandbox.world import create_incident_tables
from chaos.workload.alarms import drain_sns_events
from chaos.workload.function_urls import FunctionUrls
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import IncidentStore, dynamodb_client
from supervisor.orchestrator import build_pipeline
from tests.console_support import diagnose_incident
from tests.fault_scenarios import RestoreSteps
from tests.fixture_types import Inject as Inject  # the tests import the fixture types from here too
from tests.fixture_types import Undo as Undo
from tests.pipeline_support import published_notifications


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, the longest first (``@pytest.mark.slow(seconds)``): handed out last, one would
    run alone at the end while the other worker idles (xdist hands tests out in this order)."""

    def expected_seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("slow")
        return float(marker.args[0]) if marker else 0.0

    items.sort(key=expected_seconds, reverse=True)


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_aws() -> None:
    """Nothing in the tests may reach a real account through the developer's environment."""
    for variable in [v for v in os.environ if v.startswith("AWS_")]:
        del os.environ[variable]


@pytest.fixture(autouse=True)
def _no_handler_on_a_closed_capture() -> Iterator[None]:
    """A handler a test bound to its captured stdout or stderr (a CLI's logging set up in-process, the
    first powertools Logger of a service, which keeps its handler) writes to stderr once the capture
    closes: the sandbox's threads keep logging, and each of their lines would otherwise print a logging
    error into the run's output."""
    yield
    loggers = [logging.getLogger(), *logging.root.manager.loggerDict.values()]
    for logger in (item for item in loggers if isinstance(item, logging.Logger)):
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
                handler.stream = sys.stderr  # not setStream: it would flush the closed one


# The session's sandbox runs its rate limits this many times faster than AWS (docs/sandbox.md#time-scale):
# its LookupEvents allowance is shared by every test of a worker and its MCP server, as an account's is.
# Tests of AWS's own pace start a sandbox of their own at 1.
TIME_SCALE = 10.0
PACE = "MCP_CLOUDTRAIL_LOOKUPS_PER_SECOND"


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The session's sandbox (how long it takes to start is measured by bench/sandbox_runtime.py); the
    MCP servers the tests build in process are paced as its env file says (MCP_CLOUDTRAIL_...). CloudTrail
    delivers at once here, so that a test finds its own change: the drawn delays are tested in
    test_emulator_extensions.py, a diagnosis made before delivery in test_recheck.py and the drill."""
    with (
        running_sandbox(
            tmp_path_factory.mktemp("sandbox"), time_scale=TIME_SCALE, cloudtrail_delay=0
        ) as sandbox,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv(PACE, sandbox.env[PACE])
        yield sandbox


@pytest.fixture
def operator(sandbox: Sandbox) -> boto3.Session:
    """The sandbox's operator: the identity that provisions, breaks and restores the world."""
    return sandbox.session(names.OPERATOR)


@pytest.fixture(scope="session")
def mcp_answer_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's MCP server records every answer it sends (``MCP_ANSWER_LOG``)."""
    return tmp_path_factory.mktemp("mcp-answers") / "answers.jsonl"


@pytest.fixture(scope="session")
def mcp_server_url(
    sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory, mcp_answer_log: Path
) -> Iterator[str]:
    """`incident-mcp-server` as shipped, for the whole session: key from SSM, AWS as the read-only
    mcp-server profile, SSE and Streamable HTTP on one port, its answers recorded in ``mcp_answer_log``."""
    with shipped_mcp_server(sandbox, tmp_path_factory.mktemp("mcp"), mcp_answer_log) as url:
        yield url


@contextmanager
def shipped_mcp_server(sandbox: Sandbox, log_dir: Path, answer_log: Path | None = None) -> Iterator[str]:
    """The shipped server on ``sandbox``: its key from SSM, AWS as the read-only mcp-server profile."""
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    env |= {"MCP_ANSWER_LOG": str(answer_log)} if answer_log else {}
    with server_process(env, log_dir / "server.log") as server:
        yield server.url


@pytest.fixture
def undo() -> Iterator[Undo]:
    """Register restore steps; they run after the test, last registered first, even if it failed."""
    steps: list[Callable[[], object]] = []
    yield steps.append
    for step in reversed(steps):
        step()


@pytest.fixture
def steps(undo: Undo) -> RestoreSteps:
    """Restore steps a test can also run on demand (to check the restore), run after it in any case."""
    restore = RestoreSteps()
    undo(restore.restore)
    return restore


@pytest.fixture
def inject(sandbox: Sandbox, undo: Undo) -> Inject:
    """``inject(fault, **params)``: the chaos injector on data-processor, as the operator; restored after
    the test (and the restore is checked to find saved state)."""
    chaos = Chaos(sandbox.session(names.OPERATOR), say=lambda _: None)

    def inject(fault: Fault, **params: Any) -> None:
        chaos.inject(fault, names.FUNCTION_NAME, **params)
        undo(
            lambda: (
                chaos.restore(fault, names.FUNCTION_NAME) or pytest.fail(f"{fault.name} had no saved state")
            )
        )

    return inject


@pytest.fixture
def runtime(sandbox: Sandbox) -> Iterator[LocalLambdaRuntime]:
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE), accounts=sandbox.lambda_accounts()) as rt:
        yield rt


@pytest.fixture
def traffic(runtime: LocalLambdaRuntime) -> Iterator[Callable[[], None]]:
    """``start()``: the function invoked every half second until the test ends, as its callers would."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.5):
            runtime.invoke(names.FUNCTION_NAME, names.input_event())

    thread = threading.Thread(target=loop, daemon=True)
    yield thread.start
    stop.set()
    if thread.is_alive():
        thread.join(timeout=30)


@pytest.fixture
def urls(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> Iterator[tuple[FunctionUrls, list[Invocation]]]:
    """Function URLs as Lambda serves them, and every invocation the runtime makes meanwhile; CloudWatch
    reset first."""
    sandbox.reset_cloudwatch()
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    yield sandbox.function_urls(runtime), seen
    runtime.observers.remove(seen.append)


@pytest.fixture
def alarm_events(sandbox: Sandbox) -> Callable[[], list[dict[str, object]]]:
    """Resets CloudWatch's metrics and alarm states and drains the trigger queue now (so that a test sees
    only its own alarms), and returns a drain function."""
    sandbox.reset_cloudwatch()
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


@pytest.fixture
def diagnosed_incident(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
) -> str:
    """The id of a real permission-loss incident, diagnosed through the whole pipeline by the rules model,
    with a hostile line in its logs."""
    return diagnose_incident(sandbox, runtime, alarm_events, inject, make_pipeline)


@pytest.fixture
def notified(sandbox: Sandbox) -> Callable[[], list[dict[str, Any]]]:
    """Reads the diagnoses topic through its SQS subscription; emptied first, so a test sees its own."""
    published_notifications(sandbox)
    return lambda: published_notifications(sandbox)


Fake = TypeVar("Fake", bound=FakeConverse)


@contextmanager
def serving_converse(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """``fake`` served locally, reached by Bedrock clients through AWS_ENDPOINT_URL_BEDROCK_RUNTIME."""
    with served_in_thread(fake.app()) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_REGION", names.DEFAULT_REGION)
        yield fake


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConverse]:
    """A local Converse endpoint that Bedrock clients reach through AWS_ENDPOINT_URL_BEDROCK_RUNTIME."""
    with serving_converse(FakeConverse(script=[]), monkeypatch) as fake:
        yield fake


@pytest.fixture
def incidents(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[IncidentStore]:
    """Fresh incident tables for one test (so the circuit breaker counts only its incidents), reached as
    the supervisor identity. Afterwards no incident may be left RECEIVED or INVESTIGATING, unless the
    test is marked ``open_incidents``."""
    suffix = uuid.uuid4().hex[:8]
    state, context = f"incident-state-{suffix}", f"incident-context-{suffix}"
    approvals = f"incident-approvals-{suffix}"  # tests/test_executor_run.py finds it by the suffix
    operator = sandbox.session(names.OPERATOR).client("dynamodb")
    create_incident_tables(operator, state, context, approvals)
    store = IncidentStore(dynamodb_client(sandbox.session(names.SUPERVISOR)), state, context)
    yield store
    try:
        if request.node.get_closest_marker("open_incidents") is None:
            far_future = store.clock().replace(year=2999)
            left = [
                f"{item['incident_id']} is {status}"
                for status in ("RECEIVED", "INVESTIGATING")
                for item in store.not_updated_since(status, far_future)
            ]
            assert not left, f"incidents left in a non-terminal state: {left}"
    finally:
        for table in (state, context, approvals):
            operator.delete_table(TableName=table)


@pytest.fixture
def make_pipeline(
    sandbox: Sandbox, mcp_server_url: str, incidents: IncidentStore
) -> Callable[..., IncidentPipeline]:
    """Pipelines as ``build_pipeline`` makes them for Lambda, on this test's tables, as the supervisor
    identity (MCP key from SSM), talking to the session's MCP server over SSE. Their diagnoses are final at
    once (``cloudtrail_delivery_bound_seconds`` 0) unless a test sets the bound: tests/test_recheck.py
    does, for the provisional ones."""

    def make(model: Any = None, **overrides: Any) -> IncidentPipeline:
        settings: dict[str, Any] = {
            "incident_state_table": incidents.state_table,
            "incident_context_table": incidents.context_table,
            "mcp_server_url": f"{mcp_server_url}/sse",
            "backoff_base": 0.1,
            "cloudtrail_delivery_bound_seconds": 0,
        }
        pipeline = build_pipeline(sandbox.session(names.SUPERVISOR), **(settings | overrides))
        pipeline.model = model
        return pipeline

    return make
