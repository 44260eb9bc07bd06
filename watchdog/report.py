"""What a watchdog sweep reports, and how it notifies: shared by the sweep and its re-check cover."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import EphemeralMetrics, Metrics

from supervisor.incident.notify import CLAIMED_ELSEWHERE, PUBLISHED, SENT_BEFORE, Notifier, notify_once
from supervisor.incident.store import IncidentStore, Item


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
    remediations_ended: list[dict[str, Any]] = field(default_factory=list)  # NO_PLAN, EXPIRED, UNDO_FAILED
    remediations_resent: list[str] = field(default_factory=list)  # a dead run: the executor asked again
    remediation_failed: list[dict[str, Any]] = field(default_factory=list)  # asking it again failed

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
            "remediations_ended": self.remediations_ended,
            "remediations_resent": self.remediations_resent,
            "remediation_failed": self.remediation_failed,
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
