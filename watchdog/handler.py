"""The scheduled Lambda entry point, ``watchdog.handler.handler`` (EventBridge, every 5 minutes)."""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from supervisor.incident.notify import METRICS_NAMESPACE, Notifier, sns_client
from supervisor.incident.stage import sqs_client
from supervisor.incident.store import IncidentStore, dynamodb_client
from watchdog.rechecks import RecheckCover
from watchdog.remediations import RemediationCover
from watchdog.settings import WatchdogSettings
from watchdog.sweep import Notices, SweepReport, sweep

SERVICE = "incident-watchdog"
METRICS_SERVICE = "watchdog"


class Watchdog:
    def __init__(
        self,
        store: IncidentStore,
        settings: WatchdogSettings,
        logger: Logger,
        notifier: Notifier | None = None,
        sqs: Any = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.logger = logger
        self.notifier = notifier  # None: notifications are off
        self.sqs = sqs  # the queues' client; None without RECHECK_QUEUE_URL or REMEDIATION_QUEUE_URL

    def run(self) -> SweepReport:
        """One sweep; its metrics (in embedded metric format, namespace ``IncidentResponse``) are
        flushed at the end: StaleIncidentsFailed, RechecksResent, ProvisionalMadeFinal,
        NotificationsPublished, NotificationPublishFailed."""
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service=METRICS_SERVICE)
        notices = None
        if self.notifier is not None:
            notices = Notices(
                self.notifier,
                metrics,
                retry_window=timedelta(hours=self.settings.notify_retry_hours),
                grace=timedelta(seconds=self.settings.notify_grace_seconds),
            )
        rechecks = RecheckCover(
            self.sqs, self.settings.recheck_queue_url, timedelta(seconds=self.settings.recheck_grace_seconds)
        )
        remediations = RemediationCover(
            timedelta(seconds=self.settings.stale_after_seconds),
            timedelta(seconds=self.settings.executor_lease_seconds),
            self.sqs,
            self.settings.remediation_queue_url,
            notices,
        )
        try:
            report = sweep(
                self.store, self.settings.stale_after_seconds, self.logger, notices, rechecks, remediations
            )
            metrics.add_metric(name="StaleIncidentsFailed", unit=MetricUnit.Count, value=len(report.failed))
            resent, made_final = len(report.rechecks_resent), len(report.provisional_made_final)
            metrics.add_metric(name="RechecksResent", unit=MetricUnit.Count, value=resent)
            metrics.add_metric(name="ProvisionalMadeFinal", unit=MetricUnit.Count, value=made_final)
        finally:
            metrics.flush_metrics()
        return report


def build_watchdog(session: boto3.Session | None = None, **overrides: Any) -> Watchdog:
    settings = WatchdogSettings(**overrides)
    session = session or boto3.Session()
    logger = Logger(service=SERVICE)
    store = IncidentStore(
        dynamodb_client(session), settings.incident_state_table, settings.incident_context_table
    )
    notifier = (
        Notifier(sns_client(session), settings.diagnoses_topic_arn, settings.console_url, logger)
        if settings.diagnoses_topic_arn
        else None
    )
    sqs = sqs_client(session) if settings.recheck_queue_url or settings.remediation_queue_url else None
    return Watchdog(store, settings, logger, notifier, sqs)


@cache
def _watchdog() -> Watchdog:
    return build_watchdog()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _watchdog().run().as_dict()
