"""Publishing an incident's outcome (``supervisor.incident.notification`` builds the message):
``notify_once`` publishes it exactly once over every attempt, the orchestrator's deliveries and the
watchdog's sweeps alike, with a claim on the incident-state item.

boto3, Powertools and the standard library only: it may run on a redelivery, on the orchestrator's cold
path, and in the watchdog.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, Metrics, MetricUnit
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.lifecycle import NOTICED, TERMINAL
from supervisor.incident.notification import Notification, build_notification
from supervisor.incident.recall import recalled
from supervisor.incident.remediation_notice import remediation_notice
from supervisor.incident.stage import is_provisional
from supervisor.incident.store import notice_prefix

if TYPE_CHECKING:
    from supervisor.incident.store import IncidentStore

METRICS_NAMESPACE: Final[str] = "IncidentResponse"  # the orchestrator's and the watchdog's metrics
NOTIFY_LEASE: Final[timedelta] = timedelta(minutes=15)  # Lambda's longest run: an older claim was abandoned
RECORD_ATTEMPTS: Final[int] = 3  # writes of a published notification's record (each with botocore's retries)
RECORD_BACKOFF_SECONDS: Final[float] = 0.2
PUBLISHED: Final[str] = "published"
SENT_BEFORE: Final[str] = "sent before"
CLAIMED_ELSEWHERE: Final[str] = "sent before, or being sent by another delivery"


def sns_client(session: Any) -> Any:
    """The SNS client of the notifications: standard retries, bounded timeouts."""
    return session.client(
        "sns",
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=5, read_timeout=10
        ),
    )


class Notifier:
    """Publishes notifications to one topic."""

    def __init__(self, sns: Any, topic_arn: str, console_url: str | None, logger: Logger) -> None:
        self.sns = sns
        self.topic_arn = topic_arn
        self.console_url = console_url
        self.logger = logger

    def publish(
        self,
        incident: Mapping[str, Any],
        diagnosis: Mapping[str, Any] | None,
        revision: Mapping[str, Any] | None = None,
        recall: list[str] | None = None,
    ) -> str:
        """Publish the notification of ``incident``; the SNS message id. Raises what boto3 raises."""
        return self.send(build_notification(incident, diagnosis, self.console_url, revision, recall))

    def send(self, notification: Notification) -> str:
        response = self.sns.publish(**notification.publish_arguments(self.topic_arn))
        return str(response["MessageId"])


def stored_diagnosis(
    store: IncidentStore, incident_id: str
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The diagnosis stored in incident-context for ``incident_id`` (None when there is none), and what a
    re-check changed from the provisional one (None when none has)."""
    item = store.get_context(incident_id) or {}
    text, changes = item.get("diagnosis", {}).get("S"), item.get("recheck_changes", {}).get("S")
    return (dict(json.loads(text)) if text else None), (dict(json.loads(changes)) if changes else None)


def notification_stage(item: Mapping[str, Any]) -> str:
    """The notification due for an incident-state item: its status for a remediation status people are
    told of (``NOTICED``), "provisional" for a provisional diagnosis (its final one follows when it
    becomes final), else "final"."""
    if item.get("status") in NOTICED:
        return str(item["status"])
    return "provisional" if is_provisional(item) else "final"


def notify_once(
    store: IncidentStore,
    notifier: Notifier,
    incident_id: str,
    seen: Mapping[str, Any] | None,
    metrics: Metrics | EphemeralMetrics,
) -> str:
    """Publish the notification of the terminal ``incident_id`` exactly once over every attempt, whoever
    makes it (an orchestrator delivery, a watchdog sweep): a conditional write claims it, a publish that
    fails gives the claim back for the next attempt, and a published one is recorded (``notified_at``).

    An incident whose diagnosis is provisional gets the provisional notification; once final, its final
    one; once its fix moves, one notice per status of ``NOTICED`` (``notification_stage``): each stage is
    claimed and recorded on its own attributes, so each is sent once, a provisional one never once the
    incident is final, and a remediation notice only while the incident is in its status.

    ``seen`` is the item as the caller last read it (read here when None or read before the outcome): its
    stage decides which notification is due. What happened:
    ``PUBLISHED``, ``SENT_BEFORE``, ``CLAIMED_ELSEWHERE`` or ``"failed: <error>"``; never raises for a
    failed publish, and never changes the incident's status. A failure is logged (``notification_failed``)
    and counted (``NotificationPublishFailed``); a publish is counted as ``NotificationsPublished``."""
    logger = notifier.logger
    log = {"incident_id": incident_id, "topic_arn": notifier.topic_arn}
    token, stage = uuid.uuid4().hex, "final"
    try:
        if seen is None or seen.get("status") not in TERMINAL | NOTICED:  # not read, or read before
            seen = store.get(incident_id) or {}
        stage = log["stage"] = notification_stage(seen)
        if f"{notice_prefix(stage)}notified_at" in seen:
            return SENT_BEFORE
        item = store.claim_notification(incident_id, token, NOTIFY_LEASE, stage)
        if item is None:
            return CLAIMED_ELSEWHERE
        if stage in NOTICED:
            context = store.get_context(incident_id) or {}
            message_id = notifier.send(remediation_notice(item, context, notifier.console_url))
        else:
            diagnosed = item["status"] == "DIAGNOSED"
            stored = stored_diagnosis(store, incident_id) if diagnosed else (None, None)
            message_id = notifier.publish(item, *stored, recalled(store, item) if diagnosed else None)
    except Exception as error:  # denied, throttled, unreachable, unreadable: logged, counted, retried
        failure = f"{type(error).__name__}: {error}"
        logger.exception("notification_failed", extra=log | {"error": failure})
        metrics.add_metric(name="NotificationPublishFailed", unit=MetricUnit.Count, value=1)
        try:
            store.notification_failed(incident_id, token, failure, stage)
        except (ClientError, BotoCoreError):  # the claim lapses after NOTIFY_LEASE
            logger.exception("notification_claim_kept", extra=log)
        return f"failed: {failure}"
    metrics.add_metric(name="NotificationsPublished", unit=MetricUnit.Count, value=1)
    logger.info("notification_published", extra=log | {"sns_message_id": message_id})
    _record_sent(store, (incident_id, stage), token, message_id, logger)
    return PUBLISHED


def notify_now(store: IncidentStore, notifier: Notifier | None, incident_id: str, service: str) -> str:
    """``notify_once`` for the status ``incident_id`` is in now, its metrics flushed at once: the notices
    of a fix, sent by the component that moved it (the supervisor, the executor)."""
    if notifier is None:
        return "not sent: no topic is set (DIAGNOSES_TOPIC_ARN)"
    metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service=service)
    try:
        return notify_once(store, notifier, incident_id, None, metrics)
    finally:
        metrics.flush_metrics()


def _record_sent(
    store: IncidentStore, notice: tuple[str, str], token: str, message_id: str, logger: Logger
) -> None:
    """Record a published message, trying again on a failed write: nobody else can record it, and once
    the claim lapses (NOTIFY_LEASE) an unrecorded notification would be published a second time."""
    incident_id, stage = notice
    log = {"incident_id": incident_id, "stage": stage, "sns_message_id": message_id}
    for attempt in range(1, RECORD_ATTEMPTS + 1):
        try:
            store.notification_sent(incident_id, token, message_id, stage)
            return
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                break  # the claim lapsed and was taken over: trying again cannot help
        except BotoCoreError:
            pass
        logger.warning("notification_record_failed", extra=log | {"attempt": attempt}, exc_info=True)
        if attempt < RECORD_ATTEMPTS:
            time.sleep(RECORD_BACKOFF_SECONDS * attempt)
    logger.error("notification_not_recorded", extra=log)
