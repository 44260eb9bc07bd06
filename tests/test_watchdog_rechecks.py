"""The watchdog covers a re-check that never ran (watchdog/rechecks.py): it sends it again once, then makes
the provisional diagnosis final as it stands and sends the final notification. As the watchdog's own
identity, on the sandbox's DynamoDB, SQS and SNS; time is the stores' clocks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.aws_actions import on_each_action
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from deploy import policies
from supervisor.incident.signals import stamp
from supervisor.incident.stage import NEVER_RAN, claim_recheck
from supervisor.incident.store import IncidentStore
from tests.recheck_support import (
    BOUND,
    Clock,
    Queue,
    create_queue,
    provisional_incident,
    resend_overdue_recheck,
    state_of,
)
from watchdog.handler import Watchdog, build_watchdog

MakePipeline = Callable[..., Any]
Notified = Callable[[], list[dict[str, Any]]]
GRACE = timedelta(seconds=600)


@pytest.fixture
def queue(sandbox: Sandbox) -> Iterator[Queue]:
    created = create_queue(sandbox, f"incident-rechecks-{uuid.uuid4().hex[:8]}")
    yield created
    created.sqs.delete_queue(QueueUrl=created.url)


def _watchdog(sandbox: Sandbox, incidents: IncidentStore, clock: Clock, **overrides: Any) -> Watchdog:
    settings: dict[str, Any] = {
        "incident_state_table": incidents.state_table,
        "incident_context_table": incidents.context_table,
        "diagnoses_topic_arn": sandbox.world.diagnoses_topic_arn,
        "recheck_grace_seconds": int(GRACE.total_seconds()),
    }
    watchdog = build_watchdog(sandbox.session(names.WATCHDOG), **(settings | overrides))
    watchdog.store.clock = clock
    return watchdog


def _provisional(sandbox: Sandbox, make_pipeline: MakePipeline) -> tuple[Any, str, datetime]:
    """A provisional diagnosis whose re-check was never sent (the supervisor has no queue): the
    pipeline, the incident and its re-check time."""
    pipeline = make_pipeline(
        cloudtrail_delivery_bound_seconds=BOUND, diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn
    )
    incident_id, _, alarm_at = provisional_incident(sandbox, pipeline, Clock(datetime.now(UTC)))
    return pipeline, incident_id, alarm_at + timedelta(seconds=BOUND)


def test_a_recheck_that_never_ran_is_sent_again_once_then_the_diagnosis_is_made_final_as_it_stands(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, notified: Notified, queue: Queue
) -> None:
    pipeline, incident_id, due = _provisional(sandbox, make_pipeline)
    (provisional_notice,) = notified()
    clock = Clock(due + GRACE - timedelta(seconds=1))
    watchdog = _watchdog(sandbox, incidents, clock, recheck_queue_url=queue.url)

    assert watchdog.run().rechecks_resent == []  # not yet a grace period past its time
    assert queue.receive() == []
    clock.now = resent = due + GRACE + timedelta(seconds=1)
    report = watchdog.run()
    assert (report.rechecks_resent, report.provisional_made_final) == ([incident_id], [])
    state = state_of(incidents, incident_id)
    assert (state["final"], state["recheck_resent_at"]) == (False, stamp(resent))
    (message,) = queue.receive()  # sent with no delay
    assert json.loads(message["Body"]) == {"incident_id": incident_id, "kind": "recheck"}
    assert watchdog.run().rechecks_resent == []  # once
    assert queue.receive() == []

    clock.now = resent + GRACE - timedelta(seconds=1)
    assert watchdog.run().provisional_made_final == []
    clock.now = resent + GRACE + timedelta(seconds=1)  # it never ran: the provisional diagnosis stands
    report = watchdog.run()
    assert (report.provisional_made_final, report.notified) == ([incident_id], [incident_id])
    state = state_of(incidents, incident_id)
    assert (state["status"], state["final"], state["final_reason"]) == ("DIAGNOSED", True, NEVER_RAN)
    (final_notice,) = notified()
    assert final_notice["Subject"].startswith("[DIAGNOSED] data-processor (final): ")
    assert NEVER_RAN in json.loads(final_notice["Message"])["content"]["description"]
    assert provisional_notice["MessageId"] != final_notice["MessageId"]

    again = watchdog.run()
    assert (again.provisional_made_final, again.notified, again.rechecks_resent) == ([], [], [])
    late = pipeline.handle(queue.event([message]), None)  # the message sent again arrives after all
    assert [(o["action"], o["notification"]) for o in late["outcomes"]] == [("already_final", "sent before")]
    assert notified() == []


def test_without_a_queue_the_watchdog_makes_the_provisional_diagnosis_final_after_the_grace(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, notified: Notified
) -> None:
    _, incident_id, due = _provisional(sandbox, make_pipeline)
    notified()
    clock = Clock(due + GRACE + timedelta(seconds=1))
    report = _watchdog(sandbox, incidents, clock).run()
    assert (report.rechecks_resent, report.provisional_made_final) == ([], [incident_id])
    assert "recheck_resent_at" not in state_of(incidents, incident_id)
    assert len(notified()) == 1


def test_the_watchdog_leaves_a_recheck_that_is_running_alone(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, notified: Notified
) -> None:
    pipeline, incident_id, due = _provisional(sandbox, make_pipeline)
    notified()
    pipeline.store.clock = lambda: due + GRACE  # a re-check started late, and runs now
    assert claim_recheck(pipeline.store, incident_id, "running") is not None
    report = _watchdog(sandbox, incidents, Clock(due + 2 * GRACE)).run()
    assert report.provisional_made_final == []
    assert report.lost == [{"incident_id": incident_id, "status": "DIAGNOSED"}]
    state = state_of(incidents, incident_id)
    assert (state["final"], state["recheck_claim"]) == (False, "running")
    assert notified() == []


def test_the_watchdog_sends_a_recheck_again_with_what_its_role_grants(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """As the watchdog's identity (IAM enforced), every action the re-check coverage takes is in its
    template role's grant, and sqs:SendMessage is among them."""
    session = sandbox.session(names.WATCHDOG)
    used: set[str] = set()
    on_each_action(session, used.add)
    incident_id, report = resend_overdue_recheck(sandbox, incidents, session)
    assert report.rechecks_resent == [incident_id]
    assert state_of(incidents, incident_id)["recheck_resent_at"]
    granted = policies.actions(policies.watchdog_statements("/aws/lambda/incident-watchdog"))
    assert "sqs:SendMessage" in used
    assert used <= granted
