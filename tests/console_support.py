"""Incidents for the console's tests, made by the real code: a diagnosed one through the whole pipeline
(fault, invocation, CloudWatch alarm, SNS, agent, DynamoDB), and plain ones claimed by IncidentStore."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from chaos.faults.iam import REVOKE_S3
from chaos.loopback import LOOPBACK, free_port, served_in_thread, wait_healthy
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.signals import Signal
from supervisor.incident.store import IncidentStore
from tests.fault_scenarios import fresh_logs
from tests.fixture_types import Inject
from tests.oauth_issuer import LocalIssuer
from tests.pipeline_support import outcomes

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
HOSTILE_LINE = f"[ERROR] AccessDenied while reading the order {HOSTILE}"


def hostile_log_line(sandbox: Sandbox, function: str = names.FUNCTION_NAME) -> None:
    """A log line of the function that carries markup, as any workload could print."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    group, stream = f"/aws/lambda/{function}", f"2026/01/01/[$LATEST]{uuid.uuid4().hex}"
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    logs.put_log_events(
        logGroupName=group,
        logStreamName=stream,
        logEvents=[{"timestamp": int(time.time() * 1000), "message": HOSTILE_LINE}],
    )


def diagnose_incident(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    invocation: dict[str, object] | None = None,
) -> str:
    """A real permission-loss incident, diagnosed by the rules model, with a hostile line in its logs; the
    failing invocation sends ``invocation`` (default: the first input batch)."""
    fresh_logs(sandbox, names.FUNCTION_NAME)
    hostile_log_line(sandbox)
    inject(REVOKE_S3)
    assert runtime.invoke(names.FUNCTION_NAME, invocation or names.input_event()).status == "failed"
    (event,) = alarm_events(wait_seconds=2)
    (outcome,) = outcomes(make_pipeline().handle(event, None))
    assert outcome["status"] == "DIAGNOSED", outcome
    return str(outcome["incident_id"])


def claimed(store: IncidentStore, function: str, at: datetime, status: str = "RECEIVED") -> str:
    """An incident claimed by IncidentStore as the pipeline claims it, then moved to ``status``, every
    write stamped ``at`` (so the tests choose the order of the status index)."""
    store = IncidentStore(store.dynamodb, store.state_table, store.context_table, clock=lambda: at)
    signal = Signal(
        message_id=str(uuid.uuid4()),
        source="direct",
        function_name=function,
        error_type="Errors",
        detail="test incident",
        observed_at=at,
    )
    item, created = store.claim(signal, window_seconds=0)
    assert created
    incident_id = str(item["incident_id"])
    if status != "RECEIVED":
        store.transition(incident_id, "RECEIVED", "INVESTIGATING")
        store.transition(incident_id, "INVESTIGATING", status)
    return incident_id


def ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


@contextmanager
def served_knowing_its_url(make: Callable[[str], ASGIApp]) -> Iterator[str]:
    """``make(url)`` served with uvicorn on a free loopback port at ``url``: for an app that must know its
    own public URL (the console's OAuth redirect URI) before it is served."""
    port = free_port()
    url = f"http://{LOOPBACK}:{port}"
    server = uvicorn.Server(
        uvicorn.Config(make(url), host=LOOPBACK, port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_healthy(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def local_issuer(client_id: str, secret: str | None = None) -> Iterator[LocalIssuer]:
    """A LocalIssuer served over HTTP on loopback that knows one client."""
    issuer = LocalIssuer(clients={client_id: secret})
    with served_in_thread(issuer.app()) as url:
        issuer.issuer = url
        yield issuer


def assert_page_headers(headers: Mapping[str, str]) -> None:
    """The security headers of a console page: no framing, no sniffing, no referrer to another site, no
    caching, and a Content-Security-Policy that allows the console's own script and stylesheet only."""
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in headers["content-security-policy"].split(";")
        if directive.strip()
    }
    assert policy["default-src"] == ["'none'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"  # no-referrer would null a form's Origin
    assert headers["cache-control"] == "no-store"
