"""Fail incidents whose investigation died: RECEIVED or INVESTIGATING, not updated for too long; cover
provisional diagnoses whose re-check never ran (``watchdog.rechecks``) and remediations in flight
(``watchdog.remediations``).

Each is moved to FAILED by a conditional write on the status and ``updated_at`` the sweep saw, so an
incident that moved on in the meantime (a late diagnosis, a re-entry) is left as it is. An investigation
that recorded its outcome in incident-context but never moved there (the write failed, and no redelivery
came) is moved to that outcome instead: a stored diagnosis is never failed as stale.

With a topic (``Notices``), every incident the sweep fails is notified, and so is every terminal incident
of the retry window whose notification was never sent (the orchestrator's publish failed, or it died
before it): both through ``notify_once``, the orchestrator's own claim, so each is sent exactly once
whoever gets there first. A failed publish is logged, counted and left for the next sweep; it never
changes an incident's status."""

from __future__ import annotations

from datetime import timedelta

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.lifecycle import NOTICED, Status
from supervisor.incident.outcome import RecordedOutcome, recorded_outcome
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, Item, TransitionConflict
from watchdog.rechecks import RecheckCover, cover_rechecks
from watchdog.remediations import RemediationCover, cover_remediations
from watchdog.report import Notices as Notices  # where the handler and the tests import them from
from watchdog.report import SweepReport as SweepReport

STALE_REASON = "stale watchdog timeout"
RETRIED_STATUSES: tuple[Status, ...] = ("DIAGNOSED", "FAILED", "ERROR")


def find_stale(store: IncidentStore, stale_after_seconds: int) -> tuple[str, list[Item]]:
    """The cutoff and the open incidents last updated before it (two index queries, no scan)."""
    cutoff = store.clock() - timedelta(seconds=stale_after_seconds)
    items = [*store.not_updated_since("INVESTIGATING", cutoff), *store.not_updated_since("RECEIVED", cutoff)]
    return stamp(cutoff), items


def fail_stale(
    store: IncidentStore,
    items: list[Item],
    report: SweepReport,
    logger: Logger,
    notices: Notices | None = None,
) -> None:
    for item in items:
        incident_id = str(item["incident_id"])
        report.examined += 1
        recorded = _recorded(store, item, logger)
        target, reason = (recorded.status, recorded.reason) if recorded else ("FAILED", STALE_REASON)
        try:
            final = store.transition(
                incident_id,
                str(item["status"]),
                target,
                expected_updated_at=str(item["updated_at"]),
                reason=reason,
                headline=recorded.headline if recorded else None,
            )
        except TransitionConflict as conflict:
            current = conflict.current or {}
            report.lost.append({"incident_id": incident_id, "status": current.get("status")})
            logger.info(
                "watchdog_lost_race",
                extra={"incident_id": incident_id, "was": item["status"], "now": current.get("status")},
            )
            continue
        (report.finished if recorded else report.failed).append(incident_id)
        logger.warning(
            "watchdog_finished_incident" if recorded else "watchdog_failed_incident",
            extra={
                "incident_id": incident_id,
                "from_status": item["status"],
                "to_status": target,
                "last_update": item["updated_at"],
                "reason": reason,
            },
        )
        if notices is not None:
            notices.send(store, incident_id, final, report)


def _recorded(store: IncidentStore, item: Item, logger: Logger) -> RecordedOutcome | None:
    """The outcome a stale investigation stored; None when it stored none, or when incident-context
    cannot be read (then it is failed as stale, as it would have been before outcomes were stored)."""
    if item["status"] != "INVESTIGATING":
        return None
    try:
        return recorded_outcome(store, str(item["incident_id"]))
    except (ClientError, BotoCoreError, ValueError):
        logger.exception("watchdog_context_unreadable", extra={"incident_id": item["incident_id"]})
        return None


def retry_unsent(store: IncidentStore, notices: Notices, report: SweepReport, logger: Logger) -> None:
    """Notify the terminal incidents of the retry window whose notification was never sent, and the
    remediations whose status's notice was not (one range query per status on the status index, never
    a scan)."""
    if notices.retry_window <= timedelta(0):
        return
    now = store.clock()
    since, until = now - notices.retry_window, now - notices.grace
    for status in (*RETRIED_STATUSES, *sorted(NOTICED)):
        stage = status if status in NOTICED else "final"
        for item in store.unnotified_between(status, since, until, stage):
            incident_id = str(item["incident_id"])
            result = notices.send(store, incident_id, item, report)
            logger.info(
                "watchdog_notification_retried",
                extra={"incident_id": incident_id, "status": status, "notification": result},
            )


def sweep(
    store: IncidentStore,
    stale_after_seconds: int,
    logger: Logger,
    notices: Notices | None = None,
    rechecks: RecheckCover | None = None,
    remediations: RemediationCover | None = None,
) -> SweepReport:
    cutoff, items = find_stale(store, stale_after_seconds)
    report = SweepReport(cutoff=cutoff)
    fail_stale(store, items, report, logger, notices)
    if rechecks is not None:  # provisional diagnoses whose re-check never ran (watchdog.rechecks)
        cover_rechecks(store, rechecks, report, logger, notices)
    if remediations is not None:  # plans, approvals and runs in flight (watchdog.remediations)
        cover_remediations(store, remediations, report, logger)
    if notices is not None:  # after the failures: those are within the grace, so not tried twice
        retry_unsent(store, notices, report, logger)
    logger.info("watchdog_sweep", extra=report.as_dict())
    return report
