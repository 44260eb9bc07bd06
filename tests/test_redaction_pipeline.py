"""A function that logs secrets, through the whole pipeline: fault, alarm, the agent reading through the MCP
server over SSE, the stored incident, the notification and the console page. No secret reaches any of them;
the placeholders show the line was read and replaced, not missed."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from console.app import create_app
from console.settings import ConsoleSettings
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import IncidentStore
from tests.console_support import diagnose_incident
from tests.fixture_types import Inject

SECRETS = {
    "email": "bob.smith@example.com",
    "card_number": "4111111111111111",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
}


def _readable(value: object) -> str:
    """A binary attribute as text: the tool results are stored gzipped."""
    assert isinstance(value, bytes)
    try:
        return gzip.decompress(value).decode()
    except gzip.BadGzipFile:
        return value.decode("utf-8", "replace")


def _stored(sandbox: Sandbox, incidents: IncidentStore) -> str:
    """Every item of both incident tables, as text (binary attributes unpacked)."""
    dynamodb = sandbox.session(names.OPERATOR).client("dynamodb")
    items = [
        item
        for table in (incidents.state_table, incidents.context_table)
        for item in dynamodb.scan(TableName=str(table))["Items"]
    ]
    return json.dumps(items, default=_readable)


def test_no_logged_secret_reaches_the_record_the_notification_or_the_console(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    marker = uuid.uuid4().hex
    key = "/".join(["incoming", marker, *SECRETS.values()]) + ".json"
    invocation = {"key": key, "work_seconds": 0}
    incident_id = diagnose_incident(sandbox, runtime, alarm_events, inject, make_pipeline, invocation)

    stored = _stored(sandbox, incidents)
    placeholders = "/".join([marker, *(f"[REDACTED:{kind}]" for kind in SECRETS)])
    assert placeholders in stored.replace("\\/", "/"), "the logged line was read, its secrets replaced"
    page = TestClient(
        create_app(
            ConsoleSettings(state_table=incidents.state_table, context_table=str(incidents.context_table)),
            sandbox.session(names.SUPERVISOR),
        ),
        base_url="http://127.0.0.1",
    ).get(f"/incidents/{incident_id}")
    assert page.status_code == 200
    sent = json.dumps(notified())
    for kind, secret in SECRETS.items():
        assert secret not in stored, f"the stored incident holds the {kind}"
        assert secret not in sent, f"the notification holds the {kind}"
        assert secret not in page.text, f"the console page shows the {kind}"
