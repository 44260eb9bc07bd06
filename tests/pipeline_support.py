"""Sample SNS events and readers for what the pipeline logs and emits."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from supervisor.incident.signals import Signal, stamp
from supervisor.incident.store import IncidentStore

EVENTS = Path(__file__).parent / "events"


@cache
def _load(name: str) -> str:
    return (EVENTS / name).read_text()


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(_load(name))
    return event


def direct_event(
    function: str = "data-processor",
    *,
    message_id: str | None = None,
    at: datetime | None = None,
    error_type: str = "Errors",
    sent: str | None = None,
) -> dict[str, Any]:
    """The sample direct-incident event, as a new message (or a redelivery, given its id and time);
    ``sent``: the SNS Timestamp's text as given."""
    event = load_event("sns_direct_incident.json")
    sns = event["Records"][0]["Sns"]
    sns["MessageId"] = message_id or str(uuid.uuid4())
    sns["Timestamp"] = sent or stamp(at or datetime.now(UTC))
    message = json.loads(sns["Message"])
    sns["Message"] = json.dumps(message | {"lambda_name": function, "error_type": error_type})
    return event


def alarm_event(
    state_change_time: str, *, at: datetime | None = None, sent: str | None = None
) -> dict[str, Any]:
    """The sample data-processor alarm as a new message: its ``StateChangeTime`` as given, published by SNS
    ``at`` (or with the ``sent`` Timestamp text as given)."""
    event = load_event("sns_alarm_errors.json")
    sns = event["Records"][0]["Sns"]
    sns["MessageId"] = str(uuid.uuid4())
    sns["Timestamp"] = sent or stamp(at or datetime.now(UTC))
    sns["Message"] = json.dumps(json.loads(sns["Message"]) | {"StateChangeTime": state_change_time})
    return event


def with_records(*events: dict[str, Any]) -> dict[str, Any]:
    """One SNS event carrying the records of several."""
    return {"Records": [copy.deepcopy(r) for event in events for r in event["Records"]]}


def outcomes(response: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = response["outcomes"]
    return found


def json_logs(caplog: pytest.LogCaptureFixture, message: str) -> list[dict[str, Any]]:
    """The records logged with ``message``, as the JSON lines Powertools writes to CloudWatch."""
    formatter = LambdaPowertoolsFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.getMessage() == message]


def emf_documents(stdout: str) -> list[dict[str, Any]]:
    """The CloudWatch embedded-metric-format documents printed to stdout."""
    documents = []
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            documents.append(json.loads(line))
    return documents


def emitted(stdout: str) -> dict[str, float]:
    """Every metric value emitted, summed per metric name."""
    totals: dict[str, float] = {}
    for document in emf_documents(stdout):
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                values = value if isinstance(value, list) else [value]
                totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(values)
    return totals


def stuck_incident(
    incidents: IncidentStore,
    minutes_ago: float,
    *,
    function: str = "data-processor",
    status: str = "INVESTIGATING",
) -> str:
    """An incident created (and, for INVESTIGATING, started) ``minutes_ago`` that never finished."""
    then = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    past = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: then)
    item, created = past.claim(
        Signal("m-stuck", "direct", function, "Errors", "stuck", then), window_seconds=0
    )
    assert created
    if status == "INVESTIGATING":
        past.transition(str(item["incident_id"]), "RECEIVED", "INVESTIGATING")
    return str(item["incident_id"])


def published_notifications(sandbox: Any) -> list[dict[str, Any]]:
    """The notifications on the sandbox's diagnoses topic since the last call, as its SQS reader got them
    (SNS envelopes: Subject, Message, MessageAttributes)."""
    from chaos.sandbox import names
    from chaos.workload.alarms import drain_envelopes

    sqs = sandbox.session(names.OPERATOR).client("sqs")
    return drain_envelopes(sqs, sandbox.world.diagnoses_queue_url)


def deny_publish(sandbox: Any, user: str, undo: Callable[[Callable[[], object]], None]) -> Callable[[], None]:
    """Deny ``user`` every sns:Publish (an explicit deny, as an SCP or a broken policy would); the
    function that lifts it, also registered with ``undo`` in case the test stops first."""
    from chaos.sandbox import names

    iam = sandbox.session(names.OPERATOR).client("iam")
    deny = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Action": "sns:Publish", "Resource": "*"}],
    }
    iam.put_user_policy(UserName=user, PolicyName="deny-publish", PolicyDocument=json.dumps(deny))
    lifted: list[bool] = []

    def lift() -> None:
        if not lifted:
            iam.delete_user_policy(UserName=user, PolicyName="deny-publish")
            lifted.append(True)

    undo(lift)
    return lift


WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


class StorageFaults:
    """Fails chosen DynamoDB writes of one boto3 client once each, as a write that failed after all of
    botocore's retries would: a before-call hook answers for the endpoint with a 500 (no request is sent).

    ``fail`` holds the 1-based numbers of the writes to fail; ``writes`` records every write seen, as
    (operation, table, what it wrote), and ``failed`` the numbers that were failed."""

    def __init__(self, client: Any, fail: set[int] | None = None) -> None:
        self.fail = set(fail or ())
        self.writes: list[tuple[str, str, str]] = []
        self.failed: list[int] = []
        self._params: dict[str, Any] = {}
        client.meta.events.register("before-parameter-build.dynamodb", self._before_build)
        client.meta.events.register("before-call.dynamodb", self._before_call)

    def _before_build(self, params: dict[str, Any], **_: Any) -> None:
        self._params = dict(params)  # the API's parameters; before-call sees the serialised request

    def _before_call(self, model: Any, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        from botocore.awsrequest import AWSResponse

        if model.name not in WRITES:
            return None
        params = self._params
        self.writes.append((model.name, str(params.get("TableName")), _what(params)))
        number = len(self.writes)
        if number not in self.fail:
            return None
        self.fail.discard(number)
        self.failed.append(number)
        error = {"Code": "InternalServerError", "Message": f"injected: write {number} ({model.name}) failed"}
        response = AWSResponse("https://dynamodb.invalid/", 500, {}, None)
        return response, {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 500}}


def _what(params: dict[str, Any]) -> str:
    """A short name for what a write does: the status it sets, or the item it puts."""
    values = params.get("ExpressionAttributeValues") or {}
    target = values.get(":target", {}).get("S")
    if target:
        return f"-> {target}"
    expression = str(params.get("UpdateExpression", ""))
    if expression:
        return expression.split(",")[0].split("=")[0].removeprefix("SET ").strip()
    item = params.get("Item") or {}
    key = item.get("incident_id", {}).get("S", "")
    return "pointer" if key.startswith("latest#") else "item"


def item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's measure of an item: attribute names plus value sizes."""

    def size(attribute: dict[str, Any]) -> int:
        (kind, value), *_ = attribute.items()
        if kind == "L":
            return sum(size(v) for v in value) + 3
        return len(value) if isinstance(value, bytes) else len(str(value).encode())

    return sum(len(name) + size(attribute) for name, attribute in item.items())
