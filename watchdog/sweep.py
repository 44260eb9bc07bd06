"""Fail incidents whose investigation died: RECEIVED or INVESTIGATING, not updated for too long.

Each is moved to FAILED by a conditional write on the status and ``updated_at`` the sweep saw, so an
incident that moved on in the meantime (a late diagnosis, a re-entry) is left as it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools import Logger

from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, Item, TransitionConflict

STALE_REASON = "stale watchdog timeout"


@dataclass
class SweepReport:
    cutoff: str
    examined: int = 0
    failed: list[str] = field(default_factory=list)
    lost: list[dict[str, Any]] = field(default_factory=list)  # moved on before the watchdog's write

    def as_dict(self) -> dict[str, Any]:
        return {"cutoff": self.cutoff, "examined": self.examined, "failed": self.failed, "lost": self.lost}


def find_stale(store: IncidentStore, stale_after_seconds: int) -> tuple[str, list[Item]]:
    """The cutoff and the open incidents last updated before it (two index queries, no scan)."""
    cutoff = store.clock() - timedelta(seconds=stale_after_seconds)
    items = [*store.not_updated_since("INVESTIGATING", cutoff), *store.not_updated_since("RECEIVED", cutoff)]
    return stamp(cutoff), items


def fail_stale(store: IncidentStore, items: list[Item], report: SweepReport, logger: Logger) -> None:
    for item in items:
        incident_id = str(item["incident_id"])
        report.examined += 1
        try:
            store.transition(
                incident_id,
                str(item["status"]),
                "FAILED",
                expected_updated_at=str(item["updated_at"]),
                reason=STALE_REASON,
            )
        except TransitionConflict as conflict:
            current = conflict.current or {}
            report.lost.append({"incident_id": incident_id, "status": current.get("status")})
            logger.info(
                "watchdog_lost_race",
                extra={"incident_id": incident_id, "was": item["status"], "now": current.get("status")},
            )
            continue
        report.failed.append(incident_id)
        logger.warning(
            "watchdog_failed_incident",
            extra={
                "incident_id": incident_id,
                "from_status": item["status"],
                "last_update": item["updated_at"],
                "reason": STALE_REASON,
            },
        )


def sweep(store: IncidentStore, stale_after_seconds: int, logger: Logger) -> SweepReport:
    cutoff, items = find_stale(store, stale_after_seconds)
    report = SweepReport(cutoff=cutoff)
    fail_stale(store, items, report, logger)
    logger.info("watchdog_sweep", extra=report.as_dict())
    return report
