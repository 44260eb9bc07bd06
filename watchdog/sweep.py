"""Fail incidents whose investigation died: RECEIVED or INVESTIGATING, not updated for too long; and
cover provisional diagnoses whose re-check never ran (``watchdog.rechecks``).

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

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, Metrics
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.notify import CLAIMED_ELSEWHERE, PUBLISHED, SENT_BEFORE, Notifier, notify_once
from supervisor.incident.outcome import RecordedOutcome, recorded_outcome
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, Item, Status, TransitionConflict
from watchdog.rechecks import RecheckCover, cover_rechecks

STALE_REASON = "stale watchdog timeout"
RETRIED_STATUSES: tuple[Status, ...] = ("DIAGNOSED", "FAILED", "ERROR")


@dataclass
class SweepReport:
    cutoff: str
    examined: int = 0
    failed: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # moved to the outcome their investigation stored
    lost: list[dict[str, Any]] = field(default_factory=list)  # moved on before the watchdog's write
    notified: list[str] = field(default_factory=list)  # published by this sweep
    notify_failed: list[dict[str, Any]] = field(default_factory=list)  # left for the next sweep
    rechecks_resent: list[str] = field(default_factory=list)  # a re-check that never ran, sent again
    recheck_failed: list[dict[str, Any]] = field(default_factory=list)  # sending it again failed
    provisional_made_final: list[str] = field(default_factory=list)  # still never re-checked: stands

    def as_dict(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff,
            "examined": self.examined,
            "failed": self.failed,
            "finished": self.finished,
            "lost": self.lost,
            "notified": self.notified,
            "notify_failed": self.notify_failed,
            "rechecks_resent": self.rechecks_resent,
            "recheck_failed": self.recheck_failed,
            "provisional_made_final": self.provisional_made_final,
        }


@dataclass
class Notices:
    """How the watchdog notifies: the topic's notifier, the metrics failures are counted in, and which
    unsent notifications a sweep retries (terminal incidents updated within ``retry_window``, and at
    least ``grace`` ago, so that the orchestrator normally sends its own)."""

    notifier: Notifier
    metrics: Metrics | EphemeralMetrics
    retry_window: timedelta = timedelta(hours=24)
    grace: timedelta = timedelta(seconds=60)

    def send(self, store: IncidentStore, incident_id: str, seen: Item | None, report: SweepReport) -> str:
        result = notify_once(store, self.notifier, incident_id, seen, self.metrics)
        if result == PUBLISHED:
            report.notified.append(incident_id)
        elif result not in (SENT_BEFORE, CLAIMED_ELSEWHERE):
            report.notify_failed.append({"incident_id": incident_id, "error": result})
        return result


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
    """Notify the terminal incidents of the retry window whose notification was never sent (one range
    query per terminal status on the status index, never a scan)."""
    if notices.retry_window <= timedelta(0):
        return
    now = store.clock()
    since, until = now - notices.retry_window, now - notices.grace
    for status in RETRIED_STATUSES:
        for item in store.unnotified_between(status, since, until):
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
) -> SweepReport:
    cutoff, items = find_stale(store, stale_after_seconds)
    report = SweepReport(cutoff=cutoff)
    fail_stale(store, items, report, logger, notices)
    if rechecks is not None:  # provisional diagnoses whose re-check never ran (watchdog.rechecks)
        cover_rechecks(store, rechecks, report, logger, notices)
    if notices is not None:  # after the failures: those are within the grace, so not tried twice
        retry_unsent(store, notices, report, logger)
    logger.info("watchdog_sweep", extra=report.as_dict())
    return report
