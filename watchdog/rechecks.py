"""Cover a re-check that never ran (``supervisor.incident.stage``, ``supervisor.incident.recheck``).

A provisional diagnosis whose ``recheck_at`` is more than the grace period past was never re-checked: its
message was not sent (the supervisor died, or SQS refused it), or it was sent and never ran to the end (the
queue's retries ran out). Each sweep, for such an incident:

1. with a re-check queue, and not sent again before: it is recorded on the item (``recheck_resent_at``,
   a conditional write, so at most once) and the re-check is sent again, to run at once;
2. still provisional a grace period after that (or with no queue, at once): it is made final as it
   stands, with the reason ``the re-check never ran: the provisional diagnosis stands``, and its final
   notification is sent. The write is conditional on no re-check holding an unexpired claim.

Provisional incidents are read with one range query on the status index over the last ``LOOKBACK``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.signals import stamp
from supervisor.incident.stage import (
    NEVER_RAN,
    RECHECK_RESENT_AT,
    make_final,
    mark_resent,
    overdue,
    send_recheck,
)
from supervisor.incident.store import IncidentStore, Item, TransitionConflict
from watchdog.report import Notices, SweepReport

LOOKBACK: Final[timedelta] = timedelta(days=1)  # provisional incidents diagnosed this recently are covered


@dataclass
class RecheckCover:
    """Where the watchdog sends a re-check again (no queue: none is sent), and how long it waits each
    time: after ``recheck_at``, and after sending it again."""

    sqs: Any | None
    queue_url: str | None
    grace: timedelta


def cover_rechecks(
    store: IncidentStore,
    cover: RecheckCover,
    report: SweepReport,
    logger: Logger,
    notices: Notices | None = None,
) -> None:
    now = store.clock()
    for item in overdue(store, now - LOOKBACK, now - cover.grace):
        resent_at = item.get(RECHECK_RESENT_AT)
        if cover.queue_url and resent_at is None:
            _send_again(store, cover, item, report, logger)
        elif resent_at is None or str(resent_at) < stamp(now - cover.grace):
            _make_final(store, item, report, logger, notices)


def _send_again(
    store: IncidentStore, cover: RecheckCover, item: Item, report: SweepReport, logger: Logger
) -> None:
    incident_id = str(item["incident_id"])
    log = {"incident_id": incident_id, "recheck_at": item.get("recheck_at")}
    if mark_resent(store, incident_id) is None:  # another sweep did, or it became final
        return
    try:
        message_id = send_recheck(cover.sqs, str(cover.queue_url), incident_id, 0)
    except (ClientError, BotoCoreError) as error:  # recorded as sent: it is made final after the grace
        failure = f"{type(error).__name__}: {error}"
        logger.exception("watchdog_recheck_not_sent", extra=log | {"error": failure})
        report.recheck_failed.append({"incident_id": incident_id, "error": failure})
        return
    report.rechecks_resent.append(incident_id)
    logger.warning("watchdog_recheck_resent", extra=log | {"sqs_message_id": message_id})


def _make_final(
    store: IncidentStore, item: Item, report: SweepReport, logger: Logger, notices: Notices | None
) -> None:
    incident_id = str(item["incident_id"])
    try:
        final = make_final(store, incident_id, token=None, reason=NEVER_RAN)
    except TransitionConflict as conflict:  # re-checked (or being re-checked) meanwhile
        current = conflict.current or {}
        report.lost.append({"incident_id": incident_id, "status": current.get("status")})
        logger.info("watchdog_lost_race", extra={"incident_id": incident_id, "now": current.get("status")})
        return
    report.provisional_made_final.append(incident_id)
    logger.warning(
        "watchdog_made_provisional_final",
        extra={"incident_id": incident_id, "recheck_at": item.get("recheck_at"), "reason": NEVER_RAN},
    )
    if notices is not None:
        notices.send(store, incident_id, final, report)
