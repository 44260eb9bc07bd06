"""The orchestrator's side of a scenario: alarms delivered to its pipeline as they reach SNS, each in the
Lambda-like context the pipeline reads, and the incidents it produced read back from its tables."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3

from chaos.drill.checks import Check, DiagnosisStage, Incident
from chaos.drill.infra import InfraFault, infra_fault
from chaos.drill.progress import Progress
from chaos.drill.scenarios import Scenario
from chaos.drill.sent_answers import sent_answers
from chaos.drill.settings import DrillSettings
from chaos.sandbox.profiles import delivery_bound
from chaos.workload.sqs_poller import (
    SQS_RECEIVE_MAX,
    batch_item_failures,
    delete_messages,
    receive_batch,
    sqs_record,
)
from supervisor.incident.audit import read_context
from supervisor.incident.lifecycle import PLAN, REMEDIATION_STATUSES
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.recheck import PROVISIONAL_DIAGNOSIS
from supervisor.incident.stage import FINAL, FINAL_REASON, FIRST_FAILURE_AT, RECHECK_AT
from supervisor.incident.store import from_item
from supervisor.orchestrator import build_pipeline
from supervisor.schemas import LlmCallRecord, ToolCallRecord

DRILL_INCIDENTS_PER_HOUR = 500
# A fix's window to show recovery (the drill calls the function every half second): long enough for one
# whole metric minute after the fix and the function's timeout, where its logs hold no report to read.
RECOVERY_SECONDS = 90
# Between two reads of the alarm queue when it was empty: the drill stands in for Lambda's SNS trigger. Not
# longer: an alarm taken later starts its investigation later after the first failure, and a diagnosis
# recorded past the delivery bound is final even when its history was read inside it (docs/limitations.md).
POLL_SECONDS = 0.25


@dataclass
class _LambdaContext:
    """The part of Lambda's context the pipeline reads: the time left before the function's timeout."""

    deadline: float
    function_name: str = "incident-supervisor"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class _Counted:
    """Counts one event's model calls, tool calls and tokens while passing them on to the progress."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tools: list[str] = []
        self.llm_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0

    def record(self, record: LlmCallRecord | ToolCallRecord) -> None:
        if isinstance(record, ToolCallRecord):
            self.tools.append(record.tool)
        else:
            self.llm_calls += 1
            self.input_tokens += record.usage.prompt_tokens
            self.output_tokens += record.usage.completion_tokens
            self.cache_read_tokens += record.usage.cache_read_tokens
            self.cache_write_tokens += record.usage.cache_write_tokens
        self.progress.record(record)


@dataclass
class Orchestrator:
    """The orchestrator as the drill runs it: its identity, its model, the MCP server it asks and the
    topic it notifies; ``log`` keeps its stdout (EMF metrics), as CloudWatch would; ``answer_log`` is the MCP
    server's record of the answers it sent (``MCP_ANSWER_LOG``), where the judge re-finds the evidence."""

    session: boto3.Session
    model: str
    mcp_url: str
    diagnoses_topic_arn: str
    settings: DrillSettings
    progress: Progress
    log: TextIO | None
    answer_log: Path | None = None
    recheck_queue_url: str | None = None
    remediation_queue_url: str | None = None  # set: every final diagnosis is planned (REMEDIATION on)

    @property
    def delivery_bound(self) -> int:
        """The pipeline's CloudTrail delivery bound at the lanes' time scale: a diagnosis whose first failure
        is younger is provisional, and re-checked once it is this old."""
        return delivery_bound(self.settings.time_scale)

    def pipeline(self, overrides: dict[str, Any]) -> IncidentPipeline:
        # Every alarm its own incident, and the drill's few dozen incidents an hour are no storm.
        settings: dict[str, Any] = {
            "supervisor_model": self.model,
            "incident_window_seconds": 0,
            "max_incidents_per_hour": DRILL_INCIDENTS_PER_HOUR,
            "diagnoses_topic_arn": self.diagnoses_topic_arn,
            "cloudtrail_delivery_bound_seconds": self.delivery_bound,
            "recheck_queue_url": self.recheck_queue_url,
            "remediation": self.remediation_queue_url is not None,
            "remediation_queue_url": self.remediation_queue_url,
            "recovery_seconds": RECOVERY_SECONDS,
        } | overrides
        return build_pipeline(self.session, **settings)

    def handle(
        self, pipeline: IncidentPipeline, event: dict[str, Any]
    ) -> tuple[list[Incident], dict[str, Any]]:
        """Deliver one event (an alarm through SNS, or re-checks through SQS) to the orchestrator's
        pipeline, as Lambda would, and read back the incidents it concerned; and the pipeline's answer."""
        record = event["Records"][0]
        if "Sns" in record:
            alarm = json.loads(record["Sns"]["Message"])
            name = alarm.get("AlarmName") or alarm.get("error_type")
            self.progress.step(f"alarm: {name} → incident pipeline")
        else:
            self.progress.step(f"re-check: {len(event['Records'])} message(s) → incident pipeline")
        counted = _Counted(self.progress)
        pipeline.on_record = counted.record
        context = _LambdaContext(time.monotonic() + self.settings.supervisor_timeout_seconds)
        started = time.monotonic()
        with contextlib.redirect_stdout(self.log) if self.log else contextlib.nullcontext():
            response = pipeline.handle(event, context)
        seconds = time.monotonic() - started
        incidents = []
        for outcome in response["outcomes"]:
            if outcome["incident_id"] is None:
                continue
            incident = _read(pipeline, outcome["incident_id"])
            incident.stage.bound_seconds = self.delivery_bound
            if self.answer_log is not None:
                incident.answers = sent_answers(self.answer_log, incident.incident_id)
            incident.tools, incident.llm_calls = counted.tools, counted.llm_calls
            incident.input_tokens, incident.output_tokens = counted.input_tokens, counted.output_tokens
            incident.cache_read_tokens = counted.cache_read_tokens
            incident.cache_write_tokens = counted.cache_write_tokens
            incident.seconds = seconds
            stage = " (provisional)" if incident.stage.final is False else ""
            self.progress.step(f"state: {incident.incident_id} {incident.outcome}{stage}")
            incidents.append(incident)
        return incidents, response


@dataclass(frozen=True)
class RecheckQueue:
    """Lambda's event source mapping on the supervisor's re-check queue, as the drill runs it (the
    supervisor is not a function in the sandbox): the messages whose delay has passed, received as the
    Lambda service, go to the pipeline as one SQS event; then all are deleted but the batch item failures,
    which SQS delivers again after the visibility timeout."""

    sqs: Any
    url: str
    arn: str

    @classmethod
    def of(cls, session: boto3.Session, url: str) -> RecheckQueue:
        sqs = session.client("sqs")
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return cls(sqs, url, arn)

    def take(self) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """The SQS event of the messages visible now, and those messages; None when there are none."""
        messages = receive_batch(self.sqs, self.url, SQS_RECEIVE_MAX)
        if not messages:
            return None
        return {"Records": [sqs_record(message, self.arn) for message in messages]}, messages

    def settle(self, messages: list[dict[str, Any]], response: Any) -> None:
        failed = batch_item_failures(response, {m["MessageId"] for m in messages})
        if failed is not None:
            delete_messages(self.sqs, self.url, [m for m in messages if m["MessageId"] not in failed])


def _read(pipeline: IncidentPipeline, incident_id: str) -> Incident:
    state = pipeline.store.get(incident_id) or {"status": "MISSING"}
    status = str(state["status"])
    remediated = status in REMEDIATION_STATUSES  # a diagnosis, then its remediation: judged apart
    incident = Incident(
        incident_id,
        str(state.get("function_name") or incident_id.split("@", 1)[0]),
        "DIAGNOSED" if remediated else status,
        state.get("error_category"),
        None if remediated else state.get("error_reason"),
        stage=DiagnosisStage(
            state.get(FINAL) if isinstance(state.get(FINAL), bool) else None,
            state.get(FIRST_FAILURE_AT),
            state.get(RECHECK_AT),
            state.get(FINAL_REASON),
        ),
    )
    if remediated:
        incident.remediation = f"{status}: {state['error_reason']}" if state.get("error_reason") else status
    item = pipeline.store.get_context(incident_id)
    if item is not None:
        context = from_item(item)
        incident.failed_attempts = list(context.get("failed_attempts", []))
        incident.stage.recorded_at = context.get("recorded_at")
        if context.get(PROVISIONAL_DIAGNOSIS):
            incident.provisional = json.loads(context[PROVISIONAL_DIAGNOSIS])
        if context.get(PLAN):
            plan = json.loads(context[PLAN])
            incident.plan = [step["call"] for step in plan["steps"]]
            incident.reused = list(plan.get("precedents") or [])
        if context.get("diagnosis"):
            incident.diagnosis = json.loads(context["diagnosis"])
            incident.tool_results = [r.model_dump(mode="json") for r in read_context(item).tool_results]
    return incident


class Responder:
    """The orchestrator's side while a scenario runs: each alarm is handled as it reaches SNS, in a thread
    of its own, whatever the scenario is doing then (a second fault can land mid-investigation). The
    scenario's infrastructure fault is put in place when the first alarm arrives. ``alarms`` drains the
    SNS events queued since it was last called; ``evaluate`` judges every alarm at once and returns when
    their notifications are queued."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        scenario: Scenario,
        alarms: Callable[[], list[dict[str, Any]]],
        evaluate: Callable[[], None],
        rechecks: RecheckQueue | None = None,
    ) -> None:
        self.orchestrator = orchestrator
        self.scenario = scenario
        self.alarms = alarms
        self.evaluate = evaluate
        self.rechecks = rechecks
        self.incidents: list[Incident] = []
        self.error: str | None = None
        self._infra: InfraFault | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._busy = 0.0  # seconds spent handling alarms so far
        self._handling_since: float | None = None
        self._thread = threading.Thread(target=self._run, name=f"responder-{scenario.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def collect(self, expected: int, wait_seconds: float) -> list[Incident]:
        """The incidents once ``expected`` are in and final, or when ``wait_seconds`` have passed (for
        none: a second; a provisional incident adds the delivery bound its re-check waits), and then those
        of any alarm the traffic raised besides: every alarm is judged once more and what that raises is
        handled (and re-checked) before the responder stops, so an unexpected alarm is counted however its
        timing fell against the emulator's own pass. Time the responder spends handling an alarm does not
        count: the wait is for alarms to reach SNS, however long an investigation takes on a busy
        machine."""
        self.orchestrator.progress.step(f"alarm: waiting for {expected} alarm(s) through CloudWatch → SNS")
        self._wait(expected, wait_seconds if expected else 1.0)
        self.evaluate()
        self.stop()
        return list(self.incidents)

    def wait_for(self, expected: int, wait_seconds: float) -> None:
        """While the scenario pauses: until ``expected`` incidents (in all) are in and final, as ``collect``
        waits, and the responder goes on handling alarms: the next act's changes come after the re-checks,
        as the scenario's expectations were written for."""
        self.orchestrator.progress.step(f"alarm: waiting for incident {expected} before the next act")
        self._wait(expected, wait_seconds)

    def _wait(self, expected: int, budget: float) -> None:
        started = time.monotonic()
        with self._changed:
            while (
                expected == 0 or len(self.incidents) < expected or self._provisional()
            ) and self.error is None:
                now = time.monotonic()
                bound = self.orchestrator.delivery_bound if self._provisional() else 0
                left = started + budget + bound + self._busy_seconds(now) - now
                if left <= 0:
                    break
                self._changed.wait(left)

    def _provisional(self) -> bool:
        return any(incident.stage.final is False for incident in self.incidents)

    @property
    def opened(self) -> int:
        """The incidents read back so far."""
        with self._changed:
            return len(self.incidents)

    def _handled(self, handled: list[Incident]) -> None:
        """Incidents read back: new ones added; one a re-check made final replaces its provisional self,
        with the activity of both investigations counted."""
        with self._changed:
            known = {incident.incident_id: n for n, incident in enumerate(self.incidents)}
            for incident in handled:
                n = known.get(incident.incident_id)
                if n is None:
                    self.incidents.append(incident)
                    continue
                earlier = self.incidents[n]
                incident.tools = earlier.tools + incident.tools
                incident.llm_calls += earlier.llm_calls
                incident.input_tokens += earlier.input_tokens
                incident.output_tokens += earlier.output_tokens
                incident.cache_read_tokens += earlier.cache_read_tokens
                incident.cache_write_tokens += earlier.cache_write_tokens
                incident.seconds += earlier.seconds
                incident.failed_attempts = earlier.failed_attempts + incident.failed_attempts
                self.incidents[n] = incident
            self._busy += time.monotonic() - (self._handling_since or time.monotonic())
            self._handling_since = None
            self._changed.notify_all()

    def _busy_seconds(self, now: float) -> float:
        return self._busy + (now - self._handling_since if self._handling_since is not None else 0.0)

    def infra_checks(self) -> list[Check]:
        if self._infra is None:
            return []
        return self._infra.checks([a for incident in self.incidents for a in incident.failed_attempts])

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.orchestrator.settings.supervisor_timeout_seconds)

    def _run(self) -> None:
        orchestrator = self.orchestrator
        with contextlib.ExitStack() as stack:
            pipeline: IncidentPipeline | None = None

            def handle(events: list[dict[str, Any]]) -> None:
                nonlocal pipeline
                if not events:
                    return
                if pipeline is None:
                    self._infra = stack.enter_context(
                        infra_fault(self.scenario.infra, orchestrator.mcp_url, orchestrator.settings)
                    )
                    pipeline = orchestrator.pipeline(self._infra.overrides)
                    if self.scenario.model == "gullible":
                        from chaos.gullible_model import GullibleChatModel

                        pipeline.model = GullibleChatModel()
                for event in events:
                    with self._changed:
                        self._handling_since = time.monotonic()
                    handled, _ = orchestrator.handle(pipeline, event)
                    self._handled(handled)

            def recheck() -> bool:
                """The re-checks whose time has come, handled; whether there were any. Only a provisional
                diagnosis sends one: until then the queue is not polled (a request saved every
                ``POLL_SECONDS``)."""
                if self.rechecks is None or pipeline is None or not self._provisional():
                    return False
                taken = self.rechecks.take()
                if taken is None:
                    return False
                event, messages = taken
                with self._changed:
                    self._handling_since = time.monotonic()
                handled, response = orchestrator.handle(pipeline, event)
                self.rechecks.settle(messages, response)
                self._handled(handled)
                return True

            try:
                while not self._stop.is_set():
                    events = self.alarms()
                    handle(events)
                    if not recheck() and not events:
                        self._stop.wait(POLL_SECONDS)
                handle(self.alarms())  # what reached SNS before the stop: the last pass's alarms among them
                # Their re-checks come once the delivery bound has passed.
                deadline = (
                    time.monotonic() + orchestrator.delivery_bound + orchestrator.settings.alarm_wait_seconds
                )
                while self._provisional() and time.monotonic() < deadline:
                    if not recheck():
                        time.sleep(0.1)
            except Exception as error:  # reported as a failed check; the scenario still restores
                traceback.print_exc(file=orchestrator.log or sys.stderr)
                with self._changed:
                    self.error = f"{type(error).__name__}: {error}"
                    self._changed.notify_all()
