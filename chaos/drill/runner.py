"""Run scenarios through the whole loop: inject → traffic → alarm → SNS → orchestrator pipeline →
incident-state/incident-context → checks → restore → the world equals its snapshot again."""

from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TextIO

from chaos.aws_actions import on_each_action
from chaos.drill.checks import Check, Incident, check_incident, check_not_steered
from chaos.drill.infra import infra_fault
from chaos.drill.progress import Progress
from chaos.drill.scenarios import Resource, Scenario, Stage
from chaos.drill.settings import DrillSettings
from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError
from chaos.faults.logs import inject_lines, prompt_injection_lines
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.alarms import drain_sns_events
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import from_item
from supervisor.orchestrator import build_pipeline
from supervisor.schemas import LlmCallRecord, ToolCallRecord
from watchdog.handler import build_watchdog


@dataclass
class ScenarioResult:
    scenario: Scenario
    incidents: list[Incident] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def outcome(self) -> str:
        if not self.incidents:
            return "no alarm"
        counts = Counter(incident.outcome for incident in self.incidents)
        return ", ".join(f"{outcome} x{n}" if n > 1 else outcome for outcome, n in counts.items())


@dataclass
class _LambdaContext:
    """The part of Lambda's context the pipeline reads: the time left before the function's timeout."""

    deadline: float
    function_name: str = "incident-supervisor"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class Drill:
    def __init__(
        self,
        sandbox: Sandbox,
        mcp_url: str,
        *,
        model: str = "rules",
        settings: DrillSettings | None = None,
        progress: Progress | None = None,
        log: TextIO | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.mcp_url = mcp_url
        self.model = model
        self.settings = settings or DrillSettings()
        self.progress = progress or Progress()
        self.log = log  # the supervisor's stdout (EMF metrics), as CloudWatch would keep it
        self.operator = sandbox.session(names.OPERATOR)
        # The Lambda functions' identities; every AWS action they take is recorded (for the IAM check).
        self.identities = {name: sandbox.session(name) for name in (names.SUPERVISOR, names.WATCHDOG)}
        self.aws_actions: dict[str, set[str]] = {name: set() for name in self.identities}
        for name, session in self.identities.items():
            on_each_action(session, self.aws_actions[name].add)
        self.function = names.FUNCTION_NAME
        configuration = self.operator.client("lambda").get_function_configuration(FunctionName=self.function)
        self.names: dict[Resource, str] = {
            "role": configuration["Role"].rsplit("/", 1)[-1],
            "function": self.function,
            "security-group": sandbox.world.security_group_id,
        }

    def run(self, scenarios: list[Scenario]) -> list[ScenarioResult]:
        results = []
        for index, scenario in enumerate(scenarios, start=1):
            self.progress.scenario(index, len(scenarios), scenario.name)
            result = self.run_scenario(scenario)
            failed = [f"{c.name}: {c.detail}" for c in result.checks if not c.ok]
            self.progress.finish(result.passed, result.outcome if result.passed else "; ".join(failed))
            results.append(result)
        return results

    def run_scenario(self, scenario: Scenario) -> ScenarioResult:
        started = time.monotonic()
        result = ScenarioResult(scenario)
        step = self.progress.step
        # Metrics and alarm states a previous scenario left behind are not this one's.
        self.sandbox.reset_cloudwatch()
        self._drain()
        before = world_snapshot(self.operator)
        chaos = Chaos(self.operator, say=lambda _: None)
        injected = []
        with LocalLambdaRuntime(self.sandbox.session(names.LAMBDA_SERVICE)) as runtime:
            try:
                if scenario.hostile_logs:
                    step("inject: prompt-injection lines into the log group")
                    inject_lines(chaos, self.function, "prompt-injection")
                for stage in scenario.stages:
                    for injection in stage.inject:
                        step(f"inject: {injection.label}")
                        chaos.inject(injection.fault, self.function, **injection.params)
                        injected.append(injection.fault)
                    self._traffic(runtime, stage)
                events = self._alarms(scenario.expected.incidents)
                with infra_fault(scenario.infra, self.mcp_url, self.settings) as infra:
                    result.incidents = self._handle(events, infra.overrides)
                    failed_attempts = [a for incident in result.incidents for a in incident.failed_attempts]
                    result.checks += infra.checks(failed_attempts)
            except ChaosError as error:
                result.checks.append(Check("inject", False, str(error)))
            except Exception as error:  # one broken scenario must not stop the drill or skip its restore
                traceback.print_exc(file=self.log or sys.stderr)
                result.checks.append(Check("scenario ran", False, f"{type(error).__name__}: {error}"))
            finally:
                result.checks += self._restore(chaos, injected, before, runtime)
        result.checks[:0] = self._evaluate(scenario, result.incidents)
        result.seconds = time.monotonic() - started
        return result

    def _traffic(self, runtime: LocalLambdaRuntime, stage: Stage) -> None:
        if stage.traffic == "burst":
            count = self.settings.burst_size
            self.progress.step(f"traffic: a burst of {count} concurrent invocations")
            event = names.input_event(work_seconds=self.settings.burst_work_seconds)
            invocations = runtime.invoke_burst(self.function, event, count)
        else:
            event = names.input_event()
            if stage.traffic == "missing-key":
                event["key"] = "incoming/orders-9999.json"
            self.progress.step(f"traffic: invoke {self.function}")
            invocations = [runtime.invoke(self.function, event)]
        statuses = Counter(invocation.status for invocation in invocations)
        self.progress.step("traffic: " + ", ".join(f"{n} {status}" for status, n in statuses.items()))

    def _drain(self, wait_seconds: int = 0) -> list[dict[str, Any]]:
        return drain_sns_events(
            self.operator.client("sqs"),
            self.sandbox.world.trigger_queue_url,
            self.sandbox.world.trigger_subscription_arn,
            wait_seconds=wait_seconds,
        )

    def _alarms(self, expected: int) -> list[dict[str, Any]]:
        """The SNS Lambda events of the scenario's alarms: wait for ``expected`` (for none, a short while,
        to be sure none comes)."""
        self.progress.step("alarm: waiting for CloudWatch → SNS")
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + (self.settings.alarm_wait_seconds if expected else 1.0)
        while time.monotonic() < deadline and (expected == 0 or len(events) < expected):
            events += self._drain(wait_seconds=1)
        alarms = [json.loads(e["Records"][0]["Sns"]["Message"]) for e in events]
        shown = [a.get("AlarmName") or a.get("error_type") for a in alarms]
        self.progress.step(f"alarm: {len(events)} SNS event(s) {shown}")
        return events

    def _pipeline(self, overrides: dict[str, Any]) -> IncidentPipeline:
        settings = {"supervisor_model": self.model, "incident_window_seconds": 0} | overrides
        return build_pipeline(self.identities[names.SUPERVISOR], **settings)

    def _handle(self, events: list[dict[str, Any]], overrides: dict[str, Any]) -> list[Incident]:
        """Deliver each event to the orchestrator's pipeline, as Lambda would, and read back the result."""
        pipeline = self._pipeline(overrides)
        incidents = []
        for event in events:
            counted = _Counted(self.progress)
            pipeline.on_record = counted.record
            self.progress.step("orchestrator: SNS event → incident pipeline")
            context = _LambdaContext(time.monotonic() + self.settings.supervisor_timeout_seconds)
            with contextlib.redirect_stdout(self.log) if self.log else contextlib.nullcontext():
                response = pipeline.handle(event, context)
            for outcome in response["outcomes"]:
                if outcome["incident_id"] is None:
                    continue
                incident = self._read(pipeline, outcome["incident_id"])
                incident.tools, incident.llm_calls, incident.tokens = (
                    counted.tools,
                    counted.llm_calls,
                    counted.tokens,
                )
                self.progress.step(f"state: {incident.incident_id} {incident.outcome}")
                incidents.append(incident)
        return incidents

    def _read(self, pipeline: IncidentPipeline, incident_id: str) -> Incident:
        state = pipeline.store.get(incident_id) or {"status": "MISSING"}
        incident = Incident(
            incident_id, str(state["status"]), state.get("error_category"), state.get("error_reason")
        )
        item = pipeline.store.get_context(incident_id)
        if item is not None:
            context = from_item(item)
            if context.get("diagnosis"):
                incident.diagnosis = json.loads(context["diagnosis"])
            incident.failed_attempts = list(context.get("failed_attempts", []))
        return incident

    def _restore(
        self, chaos: Chaos, injected: list[Any], before: str, runtime: LocalLambdaRuntime
    ) -> list[Check]:
        """Restore in reverse order, then compare the world with the snapshot and invoke once more."""
        checks = []
        try:
            for fault in reversed(injected):
                self.progress.step(f"restore: {fault.name}")
                chaos.restore(fault, self.function)
        except ChaosError as error:
            checks.append(Check("restore", False, str(error)))
        after = world_snapshot(self.operator)
        checks.append(
            Check(
                "world restored",
                after == before,
                "function, role, concurrency and egress equal the pre-fault snapshot"
                if after == before
                else _first_difference(before, after),
            )
        )
        healthy = runtime.invoke(self.function, names.input_event())
        checks.append(
            Check("healthy after restore", healthy.status == "succeeded", f"invocation {healthy.status}")
        )
        self._drain()
        return checks

    def _evaluate(self, scenario: Scenario, incidents: list[Incident]) -> list[Check]:
        expected = scenario.expected
        checks = [
            Check(
                "incidents",
                len(incidents) == expected.incidents,
                f"{len(incidents)} incident(s) opened (expected {expected.incidents})",
            )
        ]
        for incident in incidents:
            checks += check_incident(incident, expected, self.names)
            if scenario.hostile_logs:
                checks.append(
                    check_not_steered(incident, prompt_injection_lines(self.function, self.names["role"]))
                )
        return checks

    def closing_checks(self) -> list[Check]:
        """After every scenario: the watchdog's sweep (as its own identity) finds nothing stale, and no
        incident is left RECEIVED or INVESTIGATING."""
        self.progress.scenario(0, 0, "watchdog")
        watchdog = build_watchdog(self.identities[names.WATCHDOG])
        self.progress.step("sweep: stale RECEIVED / INVESTIGATING incidents")
        report = watchdog.run()
        far_future = watchdog.store.clock() + timedelta(days=1)
        open_incidents = [
            f"{item['incident_id']} {status}"
            for status in ("RECEIVED", "INVESTIGATING")
            for item in watchdog.store.not_updated_since(status, far_future)
        ]
        checks = [
            Check("watchdog sweep", not report.failed, f"examined {report.examined}, failed {report.failed}"),
            Check(
                "every incident terminal",
                not open_incidents,
                f"left open: {open_incidents}" if open_incidents else "no incident RECEIVED or INVESTIGATING",
            ),
        ]
        self.progress.finish(all(c.ok for c in checks), "; ".join(c.detail for c in checks))
        return checks


class _Counted:
    """Counts one event's model calls, tool calls and tokens while passing them on to the progress."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tools: list[str] = []
        self.llm_calls = 0
        self.tokens = 0

    def record(self, record: LlmCallRecord | ToolCallRecord) -> None:
        if isinstance(record, ToolCallRecord):
            self.tools.append(record.tool)
        else:
            self.llm_calls += 1
            self.tokens += record.usage.total_tokens
        self.progress.record(record)


def _first_difference(before: str, after: str) -> str:
    for old, new in zip(before.splitlines(), after.splitlines(), strict=False):
        if old != new:
            return (
                f"differs from the pre-fault snapshot: {old.strip().rstrip(',')} → {new.strip().rstrip(',')}"
            )
    return "differs from the pre-fault snapshot in length"
