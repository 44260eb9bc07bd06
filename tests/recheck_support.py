"""The re-check queue in the sandbox: a queue per test, Lambda's SQS events built from what it holds, and a
clock the test moves."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.sqs_poller import sqs_record
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.signals import stamp
from supervisor.incident.stage import sqs_client
from supervisor.incident.store import IncidentStore, dynamodb_client
from tests.fault_scenarios import fresh_logs
from tests.pipeline_support import direct_event, stuck_incident
from watchdog.rechecks import RecheckCover, cover_rechecks
from watchdog.sweep import SweepReport

BOUND = 900  # CLOUDTRAIL_DELIVERY_BOUND_SECONDS, its default


@dataclass
class Clock:
    """The store's clock, where the test puts it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Queue:
    url: str
    arn: str
    sqs: Any  # the operator's client: reads what the product sent

    def attribute(self, name: str) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=[name])["Attributes"]
        return int(attributes[name])

    def receive(self, wait_seconds: float = 0) -> list[dict[str, Any]]:
        """The messages visible now, or the first that becomes visible within ``wait_seconds``."""
        deadline = time.monotonic() + wait_seconds
        while True:
            left = max(0, min(20, round(deadline - time.monotonic())))
            found: list[dict[str, Any]] = self.sqs.receive_message(
                QueueUrl=self.url, MaxNumberOfMessages=10, WaitTimeSeconds=left
            ).get("Messages", [])
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.2)

    def event(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The SQS event Lambda's event source mapping would invoke the supervisor with."""
        return {"Records": [sqs_record(message, self.arn) for message in messages]}


def create_queue(sandbox: Sandbox, name: str) -> Queue:
    sqs = sandbox.session(names.OPERATOR).client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(url, arn, sqs)


def recheck_record(
    incident_id: str, body: str | None = None, message_id: str = "m-recheck"
) -> dict[str, Any]:
    """One SQS record carrying a re-check of ``incident_id`` (or ``body`` as given)."""
    body = body if body is not None else json.dumps({"incident_id": incident_id, "kind": "recheck"})
    return {
        "messageId": message_id,
        "body": body,
        "eventSource": "aws:sqs",
        "awsRegion": names.DEFAULT_REGION,
    }


def provisional_incident(
    sandbox: Sandbox, pipeline: IncidentPipeline, clock: Clock
) -> tuple[str, dict[str, Any], datetime]:
    """A provisional diagnosis of data-processor, with no failure in its logs or metrics: its first failure
    is the alarm's time, a direct message sent now; the store's clock is a minute after it. The incident's
    id, the SNS event and the alarm's time."""
    fresh_logs(sandbox, names.FUNCTION_NAME)
    sandbox.reset_cloudwatch()
    alarm_at = datetime.now(UTC)
    clock.now = alarm_at + timedelta(minutes=1)
    pipeline.store.clock = clock
    event = direct_event(at=alarm_at)
    (outcome,) = pipeline.handle(event, None)["outcomes"]
    assert (outcome["action"], outcome["status"]) == ("investigated", "DIAGNOSED"), outcome
    return str(outcome["incident_id"]), event, alarm_at


def state_of(incidents: IncidentStore, incident_id: str) -> dict[str, Any]:
    state = incidents.get(incident_id)
    assert state is not None, f"no incident {incident_id}"
    return state


def recheck_at(alarm_at: datetime) -> str:
    return stamp(alarm_at + timedelta(seconds=BOUND))


def resend_overdue_recheck(
    sandbox: Sandbox, incidents: IncidentStore, session: Any
) -> tuple[str, SweepReport]:
    """The watchdog's re-check coverage as ``session``: a provisional diagnosis whose re-check time is 25
    minutes past is sent its re-check again, on a queue of its own (deleted afterwards). The incident and
    the sweep's report."""
    queue = create_queue(sandbox, f"incident-rechecks-{uuid.uuid4().hex[:8]}")
    then = datetime.now(UTC) - timedelta(minutes=30)
    incident_id = stuck_incident(incidents, minutes_ago=31, function=f"fn-provisional-{uuid.uuid4().hex[:6]}")
    past = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: then)
    stage = {"final": False, "recheck_at": stamp(then + timedelta(minutes=5))}
    past.transition(incident_id, "INVESTIGATING", "DIAGNOSED", headline=stage)
    store = IncidentStore(dynamodb_client(session), incidents.state_table, incidents.context_table)
    report = SweepReport(cutoff=stamp(store.clock()))
    cover = RecheckCover(sqs_client(session), queue.url, timedelta(minutes=10))
    try:
        cover_rechecks(store, cover, report, Logger(service="test"))
    finally:
        queue.sqs.delete_queue(QueueUrl=queue.url)
    return incident_id, report
