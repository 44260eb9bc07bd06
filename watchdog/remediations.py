"""Bring every remediation in flight to an end (``supervisor.incident.lifecycle``). The watchdog writes no
AWS resource: it ends what needs no undo, and asks the executor to finish what does.

- PLANNING not updated for the stale period: planning died before it stored anything, so nothing was
  applied; it ends NO_PLAN.
- AWAITING_APPROVAL past its approval deadline: no approval can be used any more; it ends EXPIRED.
- APPLYING or VERIFYING not updated for the executor's lease: its run died. The executor's queue is asked
  to look (the next run undoes what the dead one recorded); still there a lease later (the executor never
  came), it ends UNDO_FAILED with what the dead run recorded, for a person to check.

Each move is a conditional write on the status and ``updated_at`` the sweep saw; one range query on the
status index per state, never a scan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.lifecycle import APPROVAL_DEADLINE, EXECUTION, PLAN, Status
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, Item, TransitionConflict
from supervisor.remediation.queue import send_request
from watchdog.report import Notices, SweepReport

RESENT_AT: Final[str] = "remediation_resent_at"
PLANNING_DIED: Final[str] = "planning never finished: nothing was applied"


@dataclass
class RemediationCover:
    """How long PLANNING may stand, the executor's lease, and its queue (None: no request is sent)."""

    stale: timedelta
    lease: timedelta
    sqs: Any | None
    queue_url: str | None
    notices: Notices | None = None  # each end's notice; None: notifications are off


def cover_remediations(
    store: IncidentStore,
    cover: RemediationCover,
    report: SweepReport,
    logger: Logger,
) -> None:
    now = store.clock()
    for item in store.not_updated_since("PLANNING", now - cover.stale):
        _end(store, item, "NO_PLAN", PLANNING_DIED, report, logger)
    for item in store.not_updated_since("AWAITING_APPROVAL", now):
        deadline = str(item.get(APPROVAL_DEADLINE, ""))
        if deadline and deadline <= stamp(now):
            why = f"no approval was used by {deadline}: nothing was applied"
            _end(store, item, "EXPIRED", why, report, logger)
    for status in ("APPLYING", "VERIFYING"):
        for item in store.not_updated_since(status, now - cover.lease):
            _dead_run(store, cover, item, now, report, logger)
    for ended in report.remediations_ended:
        if cover.notices is not None:
            cover.notices.send(store, ended["incident_id"], None, report)


def _dead_run(
    store: IncidentStore,
    cover: RemediationCover,
    item: Item,
    now: datetime,
    report: SweepReport,
    logger: Logger,
) -> None:
    incident_id = str(item["incident_id"])
    resent = item.get(RESENT_AT)
    if cover.queue_url and resent is None:
        try:
            _mark_resent(store, item)
            message_id = send_request(cover.sqs, cover.queue_url, incident_id)
        except (ClientError, BotoCoreError, TransitionConflict) as error:
            logger.exception("watchdog_remediation_not_resent", extra={"incident_id": incident_id})
            report.remediation_failed.append({"incident_id": incident_id, "error": str(error)})
            return
        report.remediations_resent.append(incident_id)
        logger.warning("watchdog_remediation_resent", extra={"incident_id": incident_id, "sqs": message_id})
        return
    if resent is None or str(resent) < stamp(now - cover.lease):
        why = (
            f"the executor's run died {item['status']} and no run finished its undo; {_recorded(store, item)}"
        )
        _end(store, item, "UNDO_FAILED", why, report, logger)


def _mark_resent(store: IncidentStore, item: Item) -> None:
    """Record the request on the item, conditionally (a lease after it, the watchdog gives up)."""
    try:
        store.dynamodb.update_item(
            TableName=store.state_table,
            Key={"incident_id": {"S": str(item["incident_id"])}},
            UpdateExpression=f"SET {RESENT_AT} = :now",
            ConditionExpression="#s = :status AND updated_at = :seen",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":now": {"S": stamp(store.clock())},
                ":status": {"S": str(item["status"])},
                ":seen": {"S": str(item["updated_at"])},
            },
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            raise TransitionConflict(str(item["incident_id"]), str(item["status"]), None) from None
        raise


def _recorded(store: IncidentStore, item: Item) -> str:
    """What the dead run recorded it applied, and the step it was calling (a person checks each)."""
    try:
        context = store.get_context(str(item["incident_id"])) or {}
    except (ClientError, BotoCoreError) as error:
        return f"its record could not be read ({error})"
    text = context.get(EXECUTION, {}).get("S")
    record = json.loads(text) if text else {}
    calls = [(c["step"], c["call"]) for c in record.get("calls", [])]
    calling = record.get("calling")
    if calling is not None and calling not in {step for step, _ in calls}:
        steps = json.loads(context[PLAN]["S"])["steps"] if PLAN in context else []
        calls += [(calling, steps[calling - 1]["call"])] if len(steps) >= calling else []
    if not calls:
        return "it recorded no applied call"
    applied = [f"step {step}: {call['operation']} {json.dumps(call['params'])}" for step, call in calls]
    return "check and undo by hand: " + "; ".join(applied)


def _end(
    store: IncidentStore,
    item: Item,
    target: Status,
    reason: str,
    report: SweepReport,
    logger: Logger,
) -> None:
    incident_id = str(item["incident_id"])
    try:
        store.transition(
            incident_id,
            str(item["status"]),
            target,
            expected_updated_at=str(item["updated_at"]),
            reason=reason,
        )
    except TransitionConflict as conflict:  # it moved on meanwhile: left as it is
        current = conflict.current or {}
        report.lost.append({"incident_id": incident_id, "status": current.get("status")})
        return
    report.remediations_ended.append({"incident_id": incident_id, "status": target})
    logger.warning(
        "watchdog_ended_remediation",
        extra={
            "incident_id": incident_id,
            "from_status": item["status"],
            "to_status": target,
            "reason": reason,
        },
    )
