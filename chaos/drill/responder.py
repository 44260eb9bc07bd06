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

from chaos.drill.checks import Check, Incident
from chaos.drill.infra import InfraFault, infra_fault
from chaos.drill.progress import Progress
from chaos.drill.scenarios import Scenario
from chaos.drill.sent_answers import sent_answers
from chaos.drill.settings import DrillSettings
from supervisor.incident.audit import read_context
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import from_item
from supervisor.orchestrator import build_pipeline
from supervisor.schemas import LlmCallRecord, ToolCallRecord

DRILL_INCIDENTS_PER_HOUR = 500


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

    def record(self, record: LlmCallRecord | ToolCallRecord) -> None:
        if isinstance(record, ToolCallRecord):
            self.tools.append(record.tool)
        else:
            self.llm_calls += 1
            self.input_tokens += record.usage.prompt_tokens
            self.output_tokens += record.usage.completion_tokens
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

    def pipeline(self, overrides: dict[str, Any]) -> IncidentPipeline:
        # Every alarm its own incident, and the drill's few dozen incidents an hour are no storm.
        settings = {
            "supervisor_model": self.model,
            "incident_window_seconds": 0,
            "max_incidents_per_hour": DRILL_INCIDENTS_PER_HOUR,
            "diagnoses_topic_arn": self.diagnoses_topic_arn,
        } | overrides
        return build_pipeline(self.session, **settings)

    def handle(self, pipeline: IncidentPipeline, event: dict[str, Any]) -> list[Incident]:
        """Deliver one event to the orchestrator's pipeline, as Lambda would, and read back the result."""
        alarm = json.loads(event["Records"][0]["Sns"]["Message"])
        self.progress.step(f"alarm: {alarm.get('AlarmName') or alarm.get('error_type')} → incident pipeline")
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
            if self.answer_log is not None:
                incident.answers = sent_answers(self.answer_log, incident.incident_id)
            incident.tools, incident.llm_calls = counted.tools, counted.llm_calls
            incident.input_tokens, incident.output_tokens = counted.input_tokens, counted.output_tokens
            incident.seconds = seconds
            self.progress.step(f"state: {incident.incident_id} {incident.outcome}")
            incidents.append(incident)
        return incidents


def _read(pipeline: IncidentPipeline, incident_id: str) -> Incident:
    state = pipeline.store.get(incident_id) or {"status": "MISSING"}
    incident = Incident(
        incident_id,
        str(state.get("function_name") or incident_id.split("@", 1)[0]),
        str(state["status"]),
        state.get("error_category"),
        state.get("error_reason"),
    )
    item = pipeline.store.get_context(incident_id)
    if item is not None:
        context = from_item(item)
        incident.failed_attempts = list(context.get("failed_attempts", []))
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
    ) -> None:
        self.orchestrator = orchestrator
        self.scenario = scenario
        self.alarms = alarms
        self.evaluate = evaluate
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
        """The incidents once ``expected`` are in, or when ``wait_seconds`` have passed (for none: a
        second), and then those of any alarm the traffic raised besides: every alarm is judged once more
        and what that raises is handled before the responder stops, so an unexpected alarm is counted
        however its timing fell against the emulator's own pass. Time the responder spends handling an
        alarm does not count: the wait is for alarms to reach SNS, however long an investigation takes on a
        busy machine."""
        self.orchestrator.progress.step(f"alarm: waiting for {expected} alarm(s) through CloudWatch → SNS")
        self._wait(expected, wait_seconds if expected else 1.0)
        self.evaluate()
        self.stop()
        return list(self.incidents)

    def wait_for(self, expected: int, wait_seconds: float) -> None:
        """While the scenario pauses: until ``expected`` incidents (in all) are in, as ``collect`` waits,
        and the responder goes on handling alarms."""
        self.orchestrator.progress.step(f"alarm: waiting for incident {expected} before the next act")
        self._wait(expected, wait_seconds)

    def _wait(self, expected: int, budget: float) -> None:
        started = time.monotonic()
        with self._changed:
            while (expected == 0 or len(self.incidents) < expected) and self.error is None:
                now = time.monotonic()
                left = started + budget + self._busy_seconds(now) - now
                if left <= 0:
                    break
                self._changed.wait(left)

    @property
    def opened(self) -> int:
        """The incidents read back so far."""
        with self._changed:
            return len(self.incidents)

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
                for event in events:
                    with self._changed:
                        self._handling_since = time.monotonic()
                    handled = orchestrator.handle(pipeline, event)
                    with self._changed:
                        self.incidents += handled
                        self._busy += time.monotonic() - (self._handling_since or time.monotonic())
                        self._handling_since = None
                        self._changed.notify_all()

            try:
                while not self._stop.is_set():
                    events = self.alarms()
                    handle(events)
                    if not events:
                        self._stop.wait(0.1)
                handle(self.alarms())  # what reached SNS before the stop: the last pass's alarms among them
            except Exception as error:  # reported as a failed check; the scenario still restores
                traceback.print_exc(file=orchestrator.log or sys.stderr)
                with self._changed:
                    self.error = f"{type(error).__name__}: {error}"
                    self._changed.notify_all()
