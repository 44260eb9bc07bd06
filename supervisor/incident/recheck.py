"""The re-check of a provisional diagnosis (``supervisor.incident.stage``): scheduled as an SQS message
delayed until ``recheck_at``, run by ``orchestrator.handler`` when the queue delivers it.

A re-check claims the incident with a conditional write (only a DIAGNOSED incident with ``final = false``
and no unexpired re-check claim), runs the same investigation again, stores the final diagnosis beside the
provisional one in incident-context with what changed (``supervisor.incident.revision``), makes the
incident final under its claim and publishes the final notification (``notify_once``, stage "final").

Idempotent under SQS's at-least-once delivery and under the watchdog:

- a message for an incident that is final already finds nothing to claim: it only makes sure the final
  notification is sent (``notify_once`` sends it at most once);
- a message arriving while another delivery holds the claim is reported as a batch item failure, so SQS
  delivers it again after the visibility timeout (by then it is final, or the claim has lapsed);
- a final diagnosis stored whose move failed is moved by the next delivery without another run;
- a failed investigation makes the provisional diagnosis final as it stands, with the reason: never stuck;
- a malformed message is rejected with its reason, logged and counted, and never retried.

The handler answers with ``batchItemFailures`` (the event source mapping reports them,
``FunctionResponseTypes: ReportBatchItemFailures``): what failed to be recorded is delivered again, up to the
queue's ``maxReceiveCount``, then kept in its dead-letter queue; the watchdog covers what never ran.
"""

from __future__ import annotations

import json
import uuid
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.notify import METRICS_NAMESPACE, notify_once
from supervisor.incident.outcome import STAGE_ATTRIBUTES, headline_of, outcome_attributes
from supervisor.incident.runs import log_run, no_diagnosis_reason
from supervisor.incident.signals import stamp
from supervisor.incident.stage import (
    FINAL,
    MalformedRecheck,
    claim_recheck,
    delay_until,
    is_provisional,
    make_final,
    parse_recheck,
    release_recheck,
    send_recheck,
    sqs_client,
)
from supervisor.incident.store import Item, TransitionConflict, from_item

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools import Logger

    from supervisor.agent.run import AgentResult
    from supervisor.incident.notify import Notifier
    from supervisor.incident.store import IncidentStore
    from supervisor.settings import SupervisorSettings

SQS_SOURCE: Final[str] = "aws:sqs"
PROVISIONAL_DIAGNOSIS: Final[str] = "provisional_diagnosis"  # incident-context: the provisional one, kept
CHANGES: Final[str] = "recheck_changes"  # incident-context: what the final changed from it

RecheckAction = Literal["rejected", "finalised", "stands", "already_final", "in_progress", "unrecorded"]


@dataclass
class RecheckOutcome:
    """What happened to one re-check message."""

    action: RecheckAction
    message_id: str | None
    incident_id: str | None = None
    reason: str | None = None
    notification: str | None = None  # as for an alarm's outcome; None when notifications are off
    remediation: str | None = None  # where planning left the final diagnosis; None when off

    @property
    def retry(self) -> bool:
        """Whether SQS must deliver it again (a batch item failure)."""
        failed_notice = (self.notification or "").startswith("failed")
        return self.action in ("in_progress", "unrecorded") or failed_notice


class Pipeline(Protocol):
    """What a re-check uses of the incident pipeline (``supervisor.incident.pipeline``)."""

    store: IncidentStore
    settings: SupervisorSettings
    logger: Logger
    session: boto3.Session
    notifier: Notifier | None

    def run_agent(
        self, incident: dict[str, Any], incident_id: str, function_name: str, context: Any
    ) -> AgentResult: ...

    def remediate(self, incident_id: str) -> str | None: ...


class Rechecks:
    """The re-checks of one pipeline: its store, settings, logger, notifier and agent run."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self._sqs: Any = None

    @property
    def sqs(self) -> Any:
        if self._sqs is None:
            self._sqs = sqs_client(self.pipeline.session)
        return self._sqs

    @staticmethod
    def accepts(event: object) -> bool:
        """Whether ``event`` is an SQS event (its first record from ``aws:sqs``)."""
        records = event.get("Records") if isinstance(event, dict) else None
        first = records[0] if isinstance(records, list) and records else None
        return isinstance(first, dict) and first.get("eventSource") == SQS_SOURCE

    def schedule(self, incident_id: str, recheck_at: str) -> None:
        """Send the re-check of a provisional ``incident_id``, delayed until ``recheck_at``. A failed send
        is logged, never raised: the diagnosis stands as recorded, and the watchdog sends it again."""
        pipeline = self.pipeline
        queue_url = pipeline.settings.recheck_queue_url
        log = {"incident_id": incident_id, "recheck_at": recheck_at}
        if not queue_url:
            reason = "RECHECK_QUEUE_URL is not set: the watchdog makes it final as it stands"
            pipeline.logger.warning("recheck_not_scheduled", extra=log | {"reason": reason})
            return
        delay = delay_until(recheck_at, pipeline.store.clock())
        try:
            message_id = send_recheck(self.sqs, queue_url, incident_id, delay)
        except (ClientError, BotoCoreError) as error:
            failure = (
                f"{type(error).__name__}: {error}; the watchdog sends it again once {recheck_at} is past"
            )
            pipeline.logger.exception("recheck_not_sent", extra=log | {"error": failure})
            return
        extra = log | {"delay_seconds": delay, "sqs_message_id": message_id}
        pipeline.logger.info("recheck_scheduled", extra=extra)

    def handle(self, event: object, context: Any) -> dict[str, Any]:
        """Each record of an SQS event (``accepts``); ``batchItemFailures`` names those SQS must deliver
        again."""
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="supervisor")
        records = event.get("Records") if isinstance(event, dict) else None
        outcomes = [self._one(record, context, metrics) for record in records or []]
        metrics.add_metric(name="RecheckRecords", unit=MetricUnit.Count, value=len(outcomes))
        metrics.flush_metrics()
        failures = [{"itemIdentifier": o.message_id} for o in outcomes if o.retry and o.message_id]
        return {"batchItemFailures": failures, "outcomes": [asdict(o) for o in outcomes]}

    def _one(self, record: object, context: Any, metrics: EphemeralMetrics) -> RecheckOutcome:
        pipeline = self.pipeline
        message_id = record.get("messageId") if isinstance(record, dict) else None
        try:
            if not isinstance(record, dict) or record.get("eventSource") != SQS_SOURCE:
                raise MalformedRecheck("the record is not an SQS message")
            incident_id = parse_recheck(record.get("body"))
        except MalformedRecheck as malformed:
            reason = f"not a re-check: {malformed}"
            pipeline.logger.warning("rejected_message", extra={"message_id": message_id, "reason": reason})
            metrics.add_metric(name="RejectedMessages", unit=MetricUnit.Count, value=1)
            return RecheckOutcome("rejected", message_id, reason=reason)
        return self.run(incident_id, message_id, context, metrics)

    def run(
        self, incident_id: str, message_id: str | None, context: Any, metrics: EphemeralMetrics
    ) -> RecheckOutcome:
        """Re-check ``incident_id`` now (an SQS message's, or ``incident-diagnose --remediate`` once its
        time has come): investigate again, make it final, notify, then plan it."""
        pipeline = self.pipeline
        outcome = self._recheck(incident_id, message_id, context, metrics)
        pipeline.logger.info(f"recheck_{outcome.action}", extra=asdict(outcome))
        if outcome.action not in ("finalised", "stands", "already_final"):
            return outcome
        if pipeline.notifier is not None:
            outcome.notification = notify_once(pipeline.store, pipeline.notifier, incident_id, None, metrics)
        if not (outcome.notification or "").startswith("failed"):
            outcome.remediation = pipeline.remediate(incident_id)  # a final diagnosis now
        return outcome

    def _recheck(
        self, incident_id: str, message_id: str | None, context: Any, metrics: EphemeralMetrics
    ) -> RecheckOutcome:
        store, token = self.pipeline.store, uuid.uuid4().hex
        try:
            claimed = claim_recheck(store, incident_id, token)
            if claimed is None:
                return self._not_claimed(incident_id, message_id)
            recorded = store.get_context(incident_id)
            action, reason = self._run(claimed, from_item(recorded or {}), token, context, metrics)
        except (ClientError, BotoCoreError, TransitionConflict) as error:
            self.pipeline.logger.exception("recheck_not_recorded", extra={"incident_id": incident_id})
            with suppress(ClientError, BotoCoreError):  # else it lapses after RECHECK_LEASE
                release_recheck(store, incident_id, token)
            failure = f"{type(error).__name__}: {error}; SQS delivers it again"
            return RecheckOutcome("unrecorded", message_id, incident_id, failure)
        return RecheckOutcome(action, message_id, incident_id, reason)

    def _not_claimed(self, incident_id: str, message_id: str | None) -> RecheckOutcome:
        current = self.pipeline.store.get(incident_id)
        if current is None:
            reason = f"no incident {incident_id} in {self.pipeline.store.state_table}"
            self.pipeline.logger.warning(
                "rejected_message", extra={"message_id": message_id, "reason": reason}
            )
            return RecheckOutcome("rejected", message_id, incident_id, reason)
        if is_provisional(current):
            since = current.get("recheck_claimed_at")
            reason = f"another re-check holds it since {since}: SQS delivers this one again"
            return RecheckOutcome("in_progress", message_id, incident_id, reason)
        return RecheckOutcome(
            "already_final", message_id, incident_id, f"{current['status']}, not provisional"
        )

    def _run(
        self, item: Item, recorded: dict[str, Any], token: str, context: Any, metrics: EphemeralMetrics
    ) -> tuple[RecheckAction, str | None]:
        """Investigate again and make the incident final; raises what DynamoDB raises."""
        incident_id, store = str(item["incident_id"]), self.pipeline.store
        if recorded.get(FINAL) is True and PROVISIONAL_DIAGNOSIS in recorded:  # stored, its move failed
            headline = headline_of(json.loads(recorded["diagnosis"]), str(item["function_name"]))
            make_final(store, incident_id, token=token, headline=headline)
            return "finalised", "the final diagnosis was stored by an earlier delivery"
        if "diagnosis" not in recorded or "incident" not in recorded:
            return "stands", self._stands(item, token, "no provisional diagnosis is stored to re-check")
        try:
            result = self.pipeline.run_agent(
                json.loads(recorded["incident"]), incident_id, str(item["function_name"]), context
            )
        except Exception as error:  # AgentError or a crash: the provisional diagnosis stands
            category = getattr(error, "category", "unknown")
            message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            self.pipeline.logger.exception("recheck_investigation_failed", extra={"incident_id": incident_id})
            metrics.add_metric(name="RechecksFailed", unit=MetricUnit.Count, value=1)
            return "stands", self._stands(
                item, token, f"the re-check's investigation failed ({category}: {message})"
            )
        max_tokens = self.pipeline.settings.max_tokens_per_incident
        log_run(self.pipeline.logger, incident_id, result, max_tokens, metrics)
        if result.diagnosis is None:
            metrics.add_metric(name="RechecksFailed", unit=MetricUnit.Count, value=1)
            why = f"the re-check ended without a diagnosis ({no_diagnosis_reason(result, max_tokens)})"
            return "stands", self._stands(item, token, why)
        final = result.diagnosis.model_dump(mode="json")
        self._store_final(item, recorded, result, final)
        make_final(store, incident_id, token=token, headline=headline_of(final, str(item["function_name"])))
        metrics.add_metric(name="RechecksFinished", unit=MetricUnit.Count, value=1)
        return "finalised", None

    def _stands(self, item: Item, token: str, why: str) -> str:
        """Make the provisional diagnosis final as it stands; the reason recorded."""
        reason = f"{why}: the provisional diagnosis stands"
        make_final(self.pipeline.store, str(item["incident_id"]), token=token, reason=reason)
        return reason

    def _store_final(self, item: Item, recorded: dict[str, Any], result: Any, final: dict[str, Any]) -> None:
        """The re-check's audit record (its chain, tool results and replay hash), with the provisional
        diagnosis kept beside the final one and what changed: one item, under DynamoDB's 400 KB (the
        chain gives way to the rest, ``audit.context_item``)."""
        from supervisor.incident.audit import context_item
        from supervisor.incident.revision import changes

        provisional = json.loads(recorded["diagnosis"])
        extra: dict[str, object] = {key: recorded[key] for key in STAGE_ATTRIBUTES if key in recorded}
        extra |= {
            FINAL: True,
            PROVISIONAL_DIAGNOSIS: recorded["diagnosis"],
            "provisional_recorded_at": recorded.get("recorded_at"),
            CHANGES: json.dumps(changes(provisional, final)),
        }
        self.pipeline.store.put_context(
            context_item(
                incident_id=str(item["incident_id"]),
                function_name=str(item["function_name"]),
                incident=json.loads(recorded["incident"]),
                result=result,
                model=self.pipeline.settings.supervisor_model,
                recorded_at=stamp(self.pipeline.store.clock()),
                extra=extra,
            )
            | outcome_attributes("DIAGNOSED", None)
        )
