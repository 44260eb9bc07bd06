"""A function that logs secrets, through the whole pipeline: fault, alarm, the agent reading through the MCP
server over SSE, the stored incident, the notification and the console page. No secret reaches any of them,
the role's temporary credentials of a function that prints its environment included; the placeholders show
the line was read and replaced, not missed."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from chaos.drill.scenarios import CREDENTIAL_VARIABLES, printed_credentials
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from console.app import create_app
from console.settings import ConsoleSettings
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import IncidentStore
from tests.console_support import diagnose_incident
from tests.fixture_types import Inject

# Characters of a credential that may not appear anywhere: more than the 17 every session token of the
# sandbox's STS starts with.
PIECE = 20
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


def _shown(
    sandbox: Sandbox, incidents: IncidentStore, incident_id: str, notified: Callable[[], list[dict[str, Any]]]
) -> dict[str, str]:
    """What the incident left where people and tools read it: both tables, the notification sent, and the
    incident's console page."""
    page = TestClient(
        create_app(
            ConsoleSettings(state_table=incidents.state_table, context_table=str(incidents.context_table)),
            sandbox.session(names.SUPERVISOR),
        ),
        base_url="http://127.0.0.1",
    ).get(f"/incidents/{incident_id}")
    assert page.status_code == 200
    stored = _stored(sandbox, incidents)
    return {
        "the stored incident": stored.replace("\\/", "/"),
        "the notification": json.dumps(notified()),
        "the console page": page.text,
    }


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

    shown = _shown(sandbox, incidents, incident_id, notified)
    placeholders = "/".join([marker, *(f"[REDACTED:{kind}]" for kind in SECRETS)])
    assert placeholders in shown["the stored incident"], "the logged line was read, its secrets replaced"
    for kind, secret in SECRETS.items():
        for where, text in shown.items():
            assert secret not in text, f"{where} holds the {kind}"


def test_a_function_that_prints_its_environment_leaks_none_of_its_credentials(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    """data-processor logs its whole environment (as Python prints a dict), the temporary credentials of its
    role among it, then fails: the line is read, and none of the three values reaches anything shown."""
    invocation = {"key": names.INPUT_KEYS[0], "work_seconds": 0, "debug": True}
    incident_id = diagnose_incident(sandbox, runtime, alarm_events, inject, make_pipeline, invocation)

    logs = sandbox.session(names.OPERATOR).client("logs")
    events = logs.filter_log_events(logGroupName=f"/aws/lambda/{names.FUNCTION_NAME}")["events"]
    credentials = printed_credentials(event["message"] for event in events)
    assert len(credentials) == len(CREDENTIAL_VARIABLES), "the environment was printed with its credentials"
    shown = _shown(sandbox, incidents, incident_id, notified)
    assert "environment: {" in shown["the stored incident"], "the line was read"
    # the tool cut the line inside the token: the open quote's value runs to the cut, and is replaced
    assert "'AWS_SESSION_TOKEN': '[REDACTED:aws_session_token]" in shown["the stored incident"]
    for name, value in zip(CREDENTIAL_VARIABLES, credentials, strict=True):
        pieces = {value[i : i + PIECE] for i in range(len(value) - PIECE + 1)}  # a cut value leaks its start
        for where, text in shown.items():
            assert not [p for p in pieces if p in text], f"{where} holds part of {name}"
