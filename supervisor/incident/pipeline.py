"""The incident pipeline behind ``orchestrator.handler``: for each SNS record, claim the incident,
skip duplicates, apply the circuit breaker, investigate, and end in a terminal state with a reason.

Everything up to the investigation (parsing, dedup, the breaker) imports boto3 and Powertools only;
the agent stack (LangGraph, LangChain, the MCP client) is imported when an incident is investigated.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.lifecycle import INVESTIGATED, TERMINAL
from supervisor.incident.notify import METRICS_NAMESPACE, Notifier, notify_once
from supervisor.incident.outcome import headline_of, outcome_attributes, recorded_outcome
from supervisor.incident.runs import log_run, no_diagnosis_reason
from supervisor.incident.signals import MalformedMessage, Signal, parse_event, stamp
from supervisor.incident.store import IncidentStore, Item, TransitionConflict, incident_id_for

if TYPE_CHECKING:
    from collections.abc import Callable

    import boto3
    from langchain_core.language_models import BaseChatModel

    from supervisor.agent.run import AgentResult
    from supervisor.incident.recheck import Rechecks
    from supervisor.remediation.planning import Remediation
    from supervisor.schemas import Diagnosis, LlmCallRecord, ToolCallRecord
    from supervisor.settings import SupervisorSettings

BREAKER_REASON = "circuit breaker: too many incidents in window"

Action = Literal["rejected", "duplicate", "circuit_open", "investigated", "unrecorded"]


@dataclass
class Outcome:
    """What happened to one SNS record."""

    action: Action
    message_id: str | None
    incident_id: str | None = None
    status: str | None = None
    reason: str | None = None
    notification: str | None = None  # "published", "failed: ...", or why none was sent; None when off
    remediation: str | None = None  # where planning left a DIAGNOSED incident; None when off


class NotificationsNotSent(RuntimeError):
    """A notification could not be published (the incidents' outcomes stand): the handler fails so that
    Lambda delivers the event again, and the redelivery publishes what is still unsent."""

    def __init__(self, message: str, incident_ids: list[str]) -> None:
        super().__init__(message)
        self.incident_ids = incident_ids


class IncidentsNotRecorded(RuntimeError):
    """DynamoDB failed to record some records' incidents (a claim, a start, an outcome), or the MCP server
    could not say which functions an alarmed queue or topic is tied to: the handler fails so that Lambda
    redelivers the event, and the redelivery finishes the job. Records already handled are
    then skipped as duplicates; the same message resumes an incident it left unstarted (RECEIVED) or gave
    back (INVESTIGATING, ``released_for``), and an investigation whose outcome is stored is moved to it."""


def _resumable(item: Item, signal: Signal) -> bool:
    """Whether this delivery may take over an open incident at once: the message that opened it, when
    its start was never written, or the message an unfinished investigation was given back to."""
    if item["status"] == "RECEIVED":
        return item.get("message_id") == signal.message_id
    return item.get("released_for") == signal.message_id


def _age_seconds(stamp_text: str, now: datetime) -> float:
    then = datetime.fromisoformat(stamp_text.replace("Z", "+00:00"))
    return (now - then).total_seconds()


class IncidentPipeline:
    def __init__(
        self,
        store: IncidentStore,
        settings: SupervisorSettings,
        logger: Logger,
        session: boto3.Session,
        model: BaseChatModel | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.logger = logger
        self.session = session
        self.notifier = notifier  # None: notifications are off
        self.model = model  # None: built from settings.supervisor_model when first needed
        self._api_key: str | None = None  # read once per cold start
        self.on_record: Callable[[LlmCallRecord | ToolCallRecord], None] | None = None  # live progress
        self._rechecks: Rechecks | None = None
        self._remediation: Remediation | None = None
        self.last_result: AgentResult | None = None  # the newest investigation's (its report)

    @property
    def rechecks(self) -> Rechecks:
        """The re-checks of provisional diagnoses: scheduled after a DIAGNOSED move, run from SQS."""
        if self._rechecks is None:
            from supervisor.incident.recheck import Rechecks

            self._rechecks = Rechecks(self)
        return self._rechecks

    def remediate(self, incident_id: str) -> str | None:
        """Plan a final DIAGNOSED incident (``Remediation.begin``); None when ``REMEDIATION`` is off."""
        if self.settings.remediation and self._remediation is None:
            from supervisor.remediation.planning import Remediation

            made = Remediation.configured(self.store, self.session, self.settings, self.logger, self.model)
            self._remediation = replace(made, notifier=self.notifier)
        return self._remediation.begin(incident_id) if self._remediation else None

    def handle(self, event: object, context: Any) -> dict[str, Any]:
        """An SNS event of alarms, or an SQS event of re-checks (``supervisor.incident.recheck``)."""
        if self.rechecks.accepts(event):
            return self.rechecks.handle(event, context)
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="supervisor")
        outcomes = []
        for parsed in parse_event(event, now=self.store.clock()):
            if isinstance(parsed, MalformedMessage):
                outcomes.append(self._reject(parsed, metrics))
            elif parsed.alarmed_resource is not None and not parsed.function_name:
                outcomes += self._per_consumer(parsed, context, metrics)
            else:
                outcomes.append(self.process(parsed, context, metrics))
        metrics.add_metric(name="SnsRecords", unit=MetricUnit.Count, value=len(outcomes))
        metrics.flush_metrics()
        unrecorded = [o for o in outcomes if o.action == "unrecorded"]
        if unrecorded:
            raise IncidentsNotRecorded(
                "; ".join(f"message {o.message_id}: {o.reason}" for o in unrecorded)
                + " (the event will be redelivered)"
            )
        unsent = [o for o in outcomes if o.notification and o.notification.startswith("failed")]
        if unsent:
            raise NotificationsNotSent(
                "; ".join(f"incident {o.incident_id}: notification {o.notification}" for o in unsent)
                + " (the event will be redelivered)",
                [str(o.incident_id) for o in unsent],
            )
        return {"outcomes": [asdict(o) for o in outcomes]}

    def _reject(self, rejected: MalformedMessage, metrics: EphemeralMetrics) -> Outcome:
        self.logger.warning(
            "rejected_message", extra={"message_id": rejected.message_id, "reason": rejected.reason}
        )
        metrics.add_metric(name="RejectedMessages", unit=MetricUnit.Count, value=1)
        return Outcome("rejected", rejected.message_id, reason=rejected.reason)

    def process(self, signal: Signal, context: Any, metrics: EphemeralMetrics) -> Outcome:
        """One signal, from its claim to its terminal state (``incident-diagnose --remediate``'s entry)."""
        if signal.source == "direct" and (missing := self._missing_function(signal)):
            reason = f"lambda_name {signal.function_name!r} names no function ({missing}): not an incident"
            return self._reject(MalformedMessage(signal.message_id, reason), metrics)
        try:
            item, created = self.store.claim(signal, self.settings.incident_window_seconds)
        except (ClientError, BotoCoreError) as error:
            self.logger.exception("incident_not_recorded", extra={"message_id": signal.message_id})
            return Outcome("unrecorded", signal.message_id, reason=f"{type(error).__name__}: {error}")
        incident_id = str(item["incident_id"])
        log = {"incident_id": incident_id, "message_id": signal.message_id}
        if created:
            metrics.add_metric(name="IncidentsReceived", unit=MetricUnit.Count, value=1)
            self.logger.info("incident_received", extra=log | {"function_name": signal.function_name})
        if signal.time_note:
            self.logger.warning("incident_time_replaced", extra=log | {"reason": signal.time_note})
        try:
            started = self._start(signal, item, created, metrics)
        except (ClientError, BotoCoreError) as error:  # as it was: the redelivery of this message resumes it
            self.logger.exception("incident_start_failed", extra=log)
            return Outcome("unrecorded", signal.message_id, incident_id, str(item["status"]), str(error))
        if isinstance(started, Outcome):
            started.message_id = signal.message_id
            self.logger.info(f"incident_{started.action}", extra=log | {"reason": started.reason})
            outcome = started
        else:
            outcome = self._investigate(signal, started, context, metrics)
        return self._notify(outcome, None if created else item, metrics)

    def _per_consumer(self, signal: Signal, context: Any, metrics: EphemeralMetrics) -> list[Outcome]:
        """An alarm on a queue or topic: an incident for each function tied to it (the MCP server says
        which, ``supervisor.incident.consumers``); rejected when there is none, unrecorded (redelivered)
        when the server cannot tell."""
        from supervisor.agent.mcp_key import resolve_mcp_key
        from supervisor.incident.consumers import ConsumersUnknown, NoConsumer, consumer_signals
        from supervisor.schemas import AgentError

        try:
            if self._api_key is None:
                self._api_key = resolve_mcp_key(self.settings, self.session)
            signals = consumer_signals(self.settings, self._api_key, signal)
        except NoConsumer as none:
            return [self._reject(MalformedMessage(signal.message_id, f"alarmed resource: {none}"), metrics)]
        except (ConsumersUnknown, AgentError) as unknown:
            self.logger.error(
                "consumers_unknown", extra={"message_id": signal.message_id, "reason": str(unknown)}
            )
            return [
                Outcome(
                    "unrecorded", signal.message_id, reason=f"functions of the alarmed resource: {unknown}"
                )
            ]
        return [self.process(each, context, metrics) for each in signals]

    def _missing_function(self, signal: Signal) -> str | None:
        """Why a direct signal's function does not exist (the MCP server's answer), or None: it exists, it
        could not be checked, or its incident is recorded already (it was checked then)."""
        try:
            if self.store.get(incident_id_for(signal)) is not None:
                return None
        except (ClientError, BotoCoreError):  # the claim reports it
            return None
        from supervisor.agent.mcp_key import resolve_mcp_key  # the agent stack: a new direct signal only
        from supervisor.incident.preflight import missing_function
        from supervisor.schemas import AgentError

        try:
            if self._api_key is None:
                self._api_key = resolve_mcp_key(self.settings, self.session)
        except AgentError:  # the investigation reports it
            return None
        return missing_function(self.settings, self._api_key, signal.function_name)

    def _notify(self, outcome: Outcome, seen: Item | None, metrics: EphemeralMetrics) -> Outcome:
        """Publish the notification of a terminal incident, exactly once over every delivery (and every
        watchdog sweep): ``notify_once``. Whatever happens, the outcome stands."""
        incident_id = outcome.incident_id
        if incident_id is None or outcome.status not in TERMINAL:
            return outcome
        if self.notifier is not None:
            outcome.notification = notify_once(self.store, self.notifier, incident_id, seen, metrics)
        if outcome.status == "DIAGNOSED" and not (outcome.notification or "").startswith("failed"):
            outcome.remediation = self.remediate(incident_id)  # after the diagnosis's own notification
        return outcome

    def _start(self, signal: Signal, item: Item, created: bool, metrics: EphemeralMetrics) -> Item | Outcome:
        """The INVESTIGATING item this delivery owns, or why it does not investigate (or the outcome of
        an investigation that was recorded but not finished)."""
        incident_id, status = str(item["incident_id"]), str(item["status"])
        now = self.store.clock()
        if not created:
            if status in INVESTIGATED:
                return Outcome("duplicate", None, incident_id, status, f"already {status}")
            age = _age_seconds(str(item["updated_at"]), now)
            if not _resumable(item, signal) and age < self.settings.stale_after_seconds:
                # a live investigation belongs to its delivery, even with its outcome already stored
                return Outcome("duplicate", None, incident_id, status, f"{status} since {age:.0f} s ago")
            if status == "INVESTIGATING" and (recorded := recorded_outcome(self.store, incident_id)):
                self.logger.warning("incident_outcome_resumed", extra={"incident_id": incident_id})
                headline = recorded.headline
                return self._finish(item, recorded.status, recorded.reason, None, "investigated", headline)
            if age >= self.settings.stale_after_seconds:
                metrics.add_metric(name="StaleIncidentsReentered", unit=MetricUnit.Count, value=1)
            self.logger.warning(
                "incident_reentered", extra={"incident_id": incident_id, "stale_seconds": age}
            )
        if status == "RECEIVED":
            window_start = now - timedelta(hours=1)
            recent = self.store.created_since(window_start)
            if recent > self.settings.max_incidents_per_hour:
                metrics.add_metric(name="CircuitBreakerTripped", unit=MetricUnit.Count, value=1)
                self.logger.error(
                    "circuit_breaker_open",
                    extra={
                        "incident_id": incident_id,
                        "incidents_last_hour": recent,
                        "limit": self.settings.max_incidents_per_hour,
                    },
                )
                return self._finish(item, "FAILED", BREAKER_REASON, None, "circuit_open")
        try:
            return self.store.transition(
                incident_id, status, "INVESTIGATING", expected_updated_at=str(item["updated_at"])
            )
        except TransitionConflict as conflict:
            current = conflict.current or {}
            return Outcome("duplicate", None, incident_id, current.get("status"), str(conflict))

    def _finish(
        self,
        item: Item,
        status: str,
        reason: str | None,
        category: str | None,
        action: Action,
        headline: dict[str, object] | None = None,
    ) -> Outcome:
        incident_id = str(item["incident_id"])
        try:
            final = self.store.transition(
                incident_id,
                str(item["status"]),
                status,
                expected_updated_at=str(item["updated_at"]),
                reason=reason,
                category=category,
                headline=headline,
            )
        except TransitionConflict as conflict:  # the watchdog (or a re-entry) moved it first
            self.logger.warning("incident_transition_lost", extra={"incident_id": incident_id})
            current = conflict.current or {}
            return Outcome(action, None, incident_id, current.get("status"), str(conflict))
        self.logger.info(
            "incident_finished",
            extra={"incident_id": incident_id, "status": status, "reason": reason, "category": category},
        )
        if final.get("final") is False:  # a provisional diagnosis, recorded now or resumed
            self.rechecks.schedule(incident_id, str(final["recheck_at"]))
        return Outcome(action, None, incident_id, str(final["status"]), final.get("error_reason"))

    def _investigate(self, signal: Signal, item: Item, context: Any, metrics: EphemeralMetrics) -> Outcome:
        try:
            outcome = self._conclude(signal, item, context, metrics)
        except (ClientError, BotoCoreError) as error:  # the outcome is not recorded: never report it
            outcome = self._give_back(signal, item, error)
        outcome.message_id = signal.message_id
        return outcome

    def _give_back(self, signal: Signal, item: Item, error: Exception) -> Outcome:
        """An investigation whose outcome could not be written: released to the redelivery of its message,
        which the failed handler asks Lambda for (with its outcome stored, the redelivery only moves it)."""
        incident_id = str(item["incident_id"])
        log = {"incident_id": incident_id, "message_id": signal.message_id}
        self.logger.exception("incident_state_not_written", extra=log)
        try:
            self.store.release(incident_id, str(item["updated_at"]), signal.message_id)
        except (ClientError, BotoCoreError, TransitionConflict):  # it goes stale; the watchdog finishes it
            self.logger.exception("incident_not_released", extra=log)
        reason = f"outcome not written ({type(error).__name__}: {error}); the redelivery finishes it"
        return Outcome("unrecorded", signal.message_id, incident_id, "INVESTIGATING", reason)

    def _conclude(self, signal: Signal, item: Item, context: Any, metrics: EphemeralMetrics) -> Outcome:
        """Run the agent and move the incident to its outcome; raises what DynamoDB raises."""
        from supervisor.schemas import AgentError  # the agent stack, paid for by investigated incidents

        incident_id = str(item["incident_id"])
        began = self.store.clock()  # before any read of the change history: what its stage is judged by
        try:
            result = self.run_agent(signal.incident(), incident_id, signal.function_name, context)
        except AgentError as error:
            outcome = self._finish(item, "ERROR", error.message, error.category, "investigated")
            metrics.add_metric(name="IncidentsErrored", unit=MetricUnit.Count, value=1)
        except Exception as error:
            self.logger.exception("agent_crashed", extra={"incident_id": incident_id})
            outcome = self._finish(
                item, "ERROR", f"{type(error).__name__}: {error}", "unknown", "investigated"
            )
            metrics.add_metric(name="IncidentsErrored", unit=MetricUnit.Count, value=1)
        else:
            outcome = self._record(signal, item, result, metrics, began)
        return outcome

    def run_agent(
        self, incident: dict[str, Any], incident_id: str, function_name: str, context: Any
    ) -> AgentResult:
        """One investigation of ``incident`` (what the agent is told), within the Lambda's deadline."""
        from supervisor.agent.mcp_key import resolve_mcp_key
        from supervisor.agent.run import run_agent

        if self._api_key is None:
            self._api_key = resolve_mcp_key(self.settings, self.session)
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        deadline = time.time() + remaining() / 1000 if callable(remaining) else None
        loop = asyncio.new_event_loop()  # never reuse a loop a previous invocation left behind
        try:
            self.last_result = loop.run_until_complete(
                run_agent(
                    incident,
                    incident_id,
                    function_name,
                    settings=self.settings,
                    api_key=self._api_key,
                    model=self.model,
                    deadline=deadline,
                    on_record=self.on_record,
                )
            )
            return self.last_result
        finally:
            loop.close()

    def _record(
        self, signal: Signal, item: Item, result: AgentResult, metrics: EphemeralMetrics, began: datetime
    ) -> Outcome:
        from supervisor.incident.audit import context_item

        incident_id = str(item["incident_id"])
        diagnosis = result.diagnosis
        log_run(self.logger, incident_id, result, self.settings.max_tokens_per_incident, metrics)
        status = "DIAGNOSED" if diagnosis is not None else "FAILED"
        max_tokens = self.settings.max_tokens_per_incident
        reason = None if diagnosis is not None else no_diagnosis_reason(result, max_tokens)
        stage, stored = self._staged(signal, diagnosis, began)
        self.store.put_context(  # with its outcome first, so that a failed move below is finished later
            context_item(
                incident_id=incident_id,
                function_name=signal.function_name,
                incident=signal.incident(),
                result=result,
                model=self.settings.supervisor_model,
                recorded_at=stamp(self.store.clock()),
                stored=stored,
                extra=stage,
            )
            | outcome_attributes(status, reason)
        )
        if diagnosis is not None:
            metrics.add_metric(name="IncidentsDiagnosed", unit=MetricUnit.Count, value=1)
            headline = headline_of(diagnosis.model_dump(mode="json"), signal.function_name) | (stage or {})
            return self._finish(item, "DIAGNOSED", None, None, "investigated", headline)
        metrics.add_metric(name="IncidentsFailed", unit=MetricUnit.Count, value=1)
        return self._finish(item, "FAILED", reason, None, "investigated")

    def _staged(
        self, signal: Signal, diagnosis: Diagnosis | None, began: datetime
    ) -> tuple[dict[str, object] | None, Diagnosis | None]:
        """The stage of a diagnosis (``supervisor.incident.stage``) as the items record it, and the
        diagnosis to store: a provisional one with the gap that names the window still open. Judged at
        ``began``, when the investigation started: its reads of the change history are no older, so a
        change undelivered then may be missing from them however long the investigation took."""
        from supervisor.incident.stage import first_failure, stage_of, window_gap
        from supervisor.schemas import DiagnosisGap

        if diagnosis is None:
            return None, None
        failed_at = first_failure(diagnosis.model_dump(mode="json"), signal.observed_at)
        stage = stage_of(failed_at, began, self.settings.cloudtrail_delivery_bound_seconds)
        if stage.final:
            return stage.attributes(), diagnosis
        gap = DiagnosisGap.model_validate(window_gap(stage, scheduled=bool(self.settings.recheck_queue_url)))
        return stage.attributes(), diagnosis.model_copy(update={"gaps": [*diagnosis.gaps, gap]})
