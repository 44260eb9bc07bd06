"""Run scenarios through the whole loop: inject → traffic → alarm → SNS → orchestrator pipeline →
incident-state/incident-context → checks → restore → the world equals its snapshot again."""

from __future__ import annotations

import functools
import math
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

import boto3

from chaos.aws_actions import on_each_action
from chaos.drill import event_traffic
from chaos.drill.apply_command import AwsCommand, run_command
from chaos.drill.checks import Applier, Change, Check, Incident, Stage, check_incident, no_secrets
from chaos.drill.expected_command import Resource
from chaos.drill.notifications import notified_once
from chaos.drill.progress import Progress
from chaos.drill.recurrence import fix_first, recall_checks
from chaos.drill.remediation import DrillRemediation
from chaos.drill.report import ScenarioResult
from chaos.drill.responder import Orchestrator, RecheckQueue, Responder
from chaos.drill.scenarios import (
    COPY,
    COPY_ROLE,
    INSTRUCTIONS_DEMANDS,
    INSTRUCTIONS_FAULT,
    INSTRUCTIONS_KEY,
    INTAKE_COPY,
    INTAKE_COPY_ROLE,
    LOGGED_SECRETS,
    SECRETS_KEY,
    SETTLED_SECONDS,
    Act,
    Applies,
    Recovery,
    Scenario,
    Traffic,
    printed_credentials,
)
from chaos.drill.settings import DrillSettings
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.errors import ChaosError
from chaos.faults.logs import PLANTED_DEMANDS, PLANTED_FAULTS, inject_lines, planted_commands, planted_lines
from chaos.sandbox import names
from chaos.sandbox.invoke import default_event
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import render, world_state
from chaos.workload.alarms import drain_envelopes, drain_sns_events
from chaos.workload.api_gateway import ApiResponse, RestApis
from chaos.workload.function_urls import UrlResponse, signed_headers
from chaos.workload.lambda_service import LambdaService
from chaos.workload.runtime import Invocation, LocalLambdaRuntime, RuntimeSettings
from watchdog.handler import build_watchdog

MINUTE_EDGE_SECONDS = 6.0  # mixed event traffic starts at least this long before its minute ends
CLOUDTRAIL_DELAY_SECONDS = 900.0  # CloudTrail's documented delivery is within about 5 minutes
_NOT_CHANGES = ("ssm", "logs")  # the injectors' saved state, and log lines: not configuration changes
# The functions the Lambda service invokes for the scenarios (pollers, asynchronous events).
# The front doors a scenario's traffic may come through, as its progress names them.
_DOORS: dict[str, str] = {
    "url": "POSTed to order-intake's function URL",
    "report-url": f"to report-builder's function URL, signed by {names.REPORT_READER}",
    "api": f"POSTed to {names.ORDERS_REST_API} /orders",
}
_ANSWERS: dict[str, Traffic] = {
    "url-answers": "url",
    "report-url-answers": "report-url",
    "api-answers": "api",
}
# The everyday message each event path's recovery is watched through.
_EVENT_DOORS: dict[str, event_traffic.EventTraffic] = {
    "queue-delivers": "queue",
    "queue-drains": "queue",
    "publish-delivered": "publish",
    "async-delivered": "publish",
    "stream-delivers": "stream",
}
_POLLED = (names.ORDER_WORKER_FUNCTION, names.ORDER_NOTIFIER_FUNCTION, names.CLICK_FUNCTION)
RECOVERED_PAGE = "/after-the-fix"  # the page of the click the stage writes to see the stream move on
DRILL_ORDER = event_traffic.DRILL_ORDER  # the one order the drill's traffic writes (deleted after each)
CAUGHT_UP_SECONDS = 30.0  # how long an act waits for a pass of the Lambda service that began after its change
BURST_REPORT_MB = 1  # a burst of report-builder renders small reports (no memory or hashing to speak of)
SETTLE_SECONDS = 15.0  # how long a restore waits for what waited in orders-queue to be processed


@dataclass
class _StageLog:
    """What the scenario did to one function, gathered as it runs."""

    changes: list[Change] = field(default_factory=list)
    request_ids: set[str] = field(default_factory=set)
    statuses: list[str] = field(default_factory=list)  # of its invocations, in order
    planted: list[str] = field(default_factory=list)
    planted_fault: str | None = None
    planted_demands: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    saved: dict[str, dict[str, Any]] = field(default_factory=dict)  # each injector's prior state, by fault
    believed: tuple[str, ...] = ()  # planted commands the scenario's credulous model proposes

    def judged(self, resources: dict[Resource, str], function: str, account: str, region: str) -> Stage:
        return Stage(
            resources,
            tuple(self.changes),
            frozenset(self.request_ids),
            tuple(self.planted),
            self.planted_fault,
            self.planted_demands,
            tuple(f for f in names.FUNCTIONS if f != function),
            self.secrets,
            dict(self.saved),
            account,
            region,
            self.believed,
        )


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
        answer_log: Path | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.mcp_url = mcp_url
        self.model = model
        self.settings = settings or DrillSettings()
        self.progress = progress or Progress()
        self.log = log  # the supervisor's stdout (EMF metrics), as CloudWatch would keep it
        self.operator = _reusing_clients(sandbox.session(names.OPERATOR))
        self._sqs = self.operator.client("sqs")
        # The Lambda functions' identities; every AWS action they take is recorded (for the IAM check).
        self.identities = {
            name: sandbox.session(name) for name in (names.SUPERVISOR, names.WATCHDOG, names.EXECUTOR)
        }
        self.aws_actions: dict[str, set[str]] = {name: set() for name in self.identities}
        for name, session in self.identities.items():
            on_each_action(session, self.aws_actions[name].add)
        lambda_ = self.operator.client("lambda")
        configs = {f: lambda_.get_function_configuration(FunctionName=f) for f in names.FUNCTIONS}
        self.roles = {function: config["Role"].rsplit("/", 1)[-1] for function, config in configs.items()}
        # the customer managed keys of the functions' environment variables, by ARN
        self.keys = {
            function: config["KMSKeyArn"] for function, config in configs.items() if config.get("KMSKeyArn")
        }
        self.roles[COPY] = COPY_ROLE  # created by the never-granted scenarios' injector
        self.roles[INTAKE_COPY] = INTAKE_COPY_ROLE
        self.operator_arn = self.operator.client("sts").get_caller_identity()["Arn"]
        self.region = str(self.operator.region_name)
        self.orchestrator = Orchestrator(
            self.identities[names.SUPERVISOR],
            model,
            mcp_url,
            sandbox.world.diagnoses_topic_arn,
            self.settings,
            self.progress,
            log,
            answer_log,
            sandbox.world.recheck_queue_url,
            sandbox.world.remediation_queue_url if self.settings.remediate else None,
        )
        # A person who approves with incident-remediate, and the executor as Lambda would run it.
        self.remediation = (
            DrillRemediation(
                sandbox.env,
                self.operator_arn,
                self.operator,
                self.identities[names.EXECUTOR],
                self.identities[names.WATCHDOG],
                sandbox.world.remediation_queue_url,
                f"{mcp_url}/sse",
                self.progress.step,
                self.settings.auto_apply,
                log,
                topic_arn=sandbox.world.diagnoses_topic_arn,
            )
            if self.settings.remediate
            else None
        )
        # Lambda's event source mapping on the re-check queue, polled as the operator (the drill stands in
        # for Lambda's service; the supervisor's identity only sends).
        self.rechecks = RecheckQueue.of(self.operator, sandbox.world.recheck_queue_url)
        self._outputs: list[Invocation] = []  # invocations whose output is to be discarded
        self._runtimes: dict[int | None, LocalLambdaRuntime] = {}
        # The world as last read; the functions a scenario did not touch, as read before it.
        self._world: dict[str, Any] | None = None
        self._commanded: set[str] = set()  # the functions remediation commands named since the last read
        self._changed_at: dict[str, float] = {}  # function -> when a restore last changed it (monotonic)
        self._event_traffic = False  # messages sent on the event paths since the last discard
        # The Lambda service's own paths (asynchronous events, SQS pollers), on the drill's everyday runtime.
        self.events = LambdaService(self._runtime(None), sandbox.session(names.LAMBDA_SERVICE)).start()

    def __enter__(self) -> Drill:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Lambda service's paths and the execution environments the drill's runtimes keep warm."""
        self.events.close()
        for runtime in self._runtimes.values():
            runtime.close()
        self._runtimes.clear()

    def _runtime(self, account_concurrency: int | None) -> LocalLambdaRuntime:
        """One Lambda runtime for the whole drill, its environments kept warm from scenario to scenario as
        Lambda keeps them (a changed version or configuration gets a new one); a scenario that sets the
        account's concurrency limit gets a runtime of its own. Their lifetime is not divided by the time
        scale: at the drill's, nearly every invocation would be a cold start, which its budget cannot pay."""
        if account_concurrency not in self._runtimes:
            settings = (
                RuntimeSettings()
                if account_concurrency is None
                else RuntimeSettings(account_concurrency_limit=account_concurrency)
            )
            self._runtimes[account_concurrency] = LocalLambdaRuntime(
                self.sandbox.session(names.LAMBDA_SERVICE), settings, self.sandbox.lambda_accounts()
            )
        return self._runtimes[account_concurrency]

    def run(
        self, scenarios: list[Scenario], claim: Callable[[str], bool] | None = None
    ) -> list[ScenarioResult]:
        """Each scenario in turn; with ``claim``, only those it grants (the others are another lane's)."""
        results = []
        for index, scenario in enumerate(scenarios, start=1):
            if claim is not None and not claim(scenario.name):
                continue
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
        self._fresh_stage()
        self._quiet_before(scenario)
        # The world as the previous scenario's restore left it (checked then), or as it starts.
        before = self._world or world_state(self.operator)
        chaos = Chaos(self.operator, say=lambda _: None)
        applied: list[tuple[Fault, str]] = []
        evaluated: list[Check] | None = None
        stages: defaultdict[str, _StageLog] = defaultdict(_StageLog)
        runtime = self._runtime(scenario.account_concurrency)
        responder = Responder(
            self.orchestrator, scenario, self._drain, self.sandbox.evaluate_alarms, self.rechecks
        )
        try:
            if scenario.cloudtrail_delay:
                step(f"CloudTrail: deliveries delayed by {CLOUDTRAIL_DELAY_SECONDS:.0f}s")
                self.sandbox.set_cloudtrail_delay(CLOUDTRAIL_DELAY_SECONDS)
            if not scenario.alarms_after_traffic:
                responder.start()
            if scenario.plant:
                function = scenario.acts[0].function
                step(f"plant: {scenario.plant} lines into {function}'s log group")
                inject_lines(chaos, function, scenario.plant)
                planted = stages[function]
                planted.planted += planted_lines(scenario.plant, function, self.roles[function])
                planted.planted_fault = PLANTED_FAULTS.get(scenario.plant)
                planted.planted_demands += PLANTED_DEMANDS.get(scenario.plant, ())
                if scenario.model == "gullible":
                    planted.believed = planted_commands(function, self.roles[function])
            for number, act in enumerate(scenario.acts):
                if act.fixed_first:
                    result.checks += self._fixed_first(scenario, number, responder, stages, runtime)
                self._act(chaos, act, stages[act.function], applied, runtime, responder)
            if scenario.alarms_after_traffic:
                responder.start()
            result.incidents = responder.collect(len(scenario.expected), self.settings.alarm_wait_seconds)
            result.checks += responder.infra_checks()
            self._observed(stages)
            # Judged before the restore: applying a remediation must meet the fault still in place.
            evaluated = self._evaluate(scenario, result.incidents, stages, runtime)
            if self.remediation is not None:
                self.remediation.settle([incident.incident_id for incident in result.incidents])
        except ChaosError as error:
            result.checks.append(Check("inject", False, str(error)))
        except Exception as error:  # one broken scenario must not stop the drill or skip its restore
            traceback.print_exc(file=self.log or sys.stderr)
            result.checks.append(Check("scenario ran", False, f"{type(error).__name__}: {error}"))
        finally:
            responder.stop()
            if responder.error is not None:
                result.checks.append(Check("alarms handled", False, responder.error))
            if scenario.cloudtrail_delay:
                self.sandbox.set_cloudtrail_delay(None)  # each event's own delay again, as AWS's
            result.checks += self._restore(chaos, applied, before, runtime, scenario.functions)
        result.traffic = {function: stage.statuses for function, stage in stages.items() if stage.statuses}
        if evaluated is None:  # judged after the restore: nothing is applied to the world it gave back
            self._observed(stages)
            evaluated = self._evaluate(scenario, result.incidents, stages, None)
        result.checks[:0] = evaluated
        notifications = self._notifications()
        result.checks.append(notified_once(result.incidents, notifications, self._statuses(result.incidents)))
        secrets = tuple(secret for stage in stages.values() for secret in stage.secrets)
        if secrets:
            result.checks.append(no_secrets("no secret notified", notifications, Stage({}, secrets=secrets)))
        result.seconds = time.monotonic() - started
        return result

    def _act(
        self,
        chaos: Chaos,
        act: Act,
        stage: _StageLog,
        applied: list[tuple[Fault, str]],
        runtime: LocalLambdaRuntime,
        responder: Responder,
    ) -> None:
        """The operator's undoing of earlier faults, the act's injections (each change recorded as the
        stage's), its pause, its traffic, and the wait for the incidents it must open."""
        step = self.progress.step
        opened = responder.opened
        for fault in act.restore:
            step(f"operator: restore {fault.name} on {act.function}")
            first = len(chaos.calls)
            chaos.restore(fault, act.function)
            stage.changes += self._changes(chaos, first)
        if act.idle:
            step(f"lambda: {act.function} idle for weeks, its network interfaces reclaimed")
            account = self.operator_arn.split(":")[4]
            self.sandbox.declare_idle(f"arn:aws:lambda:{self.region}:{account}:function:{act.function}")
        for injection in act.inject:
            target = injection.on or act.function
            step(f"inject: {injection.label} on {target}")
            first = len(chaos.calls)
            applied.append((injection.fault, target))
            saved = chaos.inject(injection.fault, target, **injection.params)
            stage.saved[injection.fault.name] = saved.prior
            stage.changes += self._changes(chaos, first)
        if (act.restore or act.inject) and act.count and act.traffic in event_traffic.EVENT_TRAFFIC:
            step("wait for the Lambda service's pollers to read the change")
            if not self.events.caught_up(CAUGHT_UP_SECONDS):
                raise ChaosError(f"the Lambda service ran no whole pass in {CAUGHT_UP_SECONDS:g}s")
        if act.recycled:
            step(f"lambda: {act.function}'s warm environments past their lifetime")
            runtime.retire(act.function)
        if act.pause_seconds:
            step(f"wait {act.pause_seconds:g}s")
            time.sleep(act.pause_seconds)
        if act.count and act.traffic in event_traffic.EVENT_TRAFFIC:
            if wait := clear_of_minute_end(time.time()) if act.traffic.startswith("poison") else 0.0:
                step(f"wait {wait:.1f}s for the next minute (successes and failures in one)")
                time.sleep(wait)
            sent = event_traffic.send(self.operator, act.traffic, act.count)  # type: ignore[arg-type]
            self.progress.step(f"traffic: {sent} message(s) to {act.function}'s {act.traffic} path")
            self._event_traffic = True
        elif act.count:
            source = next((i.on for i in act.inject if i.on), act.function)  # a copy gets its source's input
            self._traffic(runtime, act, stage, _everyday_event(source))
        if act.opens:
            responder.wait_for(opened + act.opens, self.settings.alarm_wait_seconds)

    def _fixed_first(
        self,
        scenario: Scenario,
        number: int,
        responder: Responder,
        stages: defaultdict[str, _StageLog],
        runtime: LocalLambdaRuntime,
    ) -> list[Check]:
        """Before act ``number``: what the act before it opened, fixed (``recurrence.fix_first``)."""
        previous = scenario.acts[number - 1]
        function, account = previous.function, self.operator_arn.split(":")[4]
        stage = stages[function].judged(self.resource_names(function), function, account, self.region)
        applier = _OperatorApplier(self, runtime, function, previous)
        step, planned = self.progress.step, self.remediation is not None
        incidents = list(responder.incidents)
        return fix_first(scenario, number, incidents, stage, applier, self.operator, step, planned)

    def _changes(self, chaos: Chaos, first: int) -> list[Change]:
        """The changing calls the injectors made since call ``first``, as the operator."""
        return [
            Change(call.operation, self.operator_arn)
            for call in chaos.calls[first:]
            if call.service not in _NOT_CHANGES and call.management
        ]

    def _fresh_stage(self) -> None:
        """Metrics, alarm states, log lines and queued alarms of earlier scenarios out of the way: each
        scenario can read only its own evidence. CloudWatch is reset last: what the earlier scenario left
        waiting is processed and its queues emptied first, or their metrics (a DLQ's depth sampled before
        it was emptied, the invocations of its last messages) would land in this scenario's minute."""
        self._settle()
        event_traffic.empty(self.operator)
        self.events.streams.skip_to_latest()  # a record an earlier scenario left unread blocks nothing now
        logs = self.operator.client("logs")
        for function in names.FUNCTIONS:
            group = f"/aws/lambda/{function}"
            for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=group):
                for stream in page["logStreams"]:
                    logs.delete_log_stream(logGroupName=group, logStreamName=stream["logStreamName"])
        self.sandbox.reset_cloudwatch()
        self.events.take_invocations()
        self._drain()
        self._notifications()

    def _statuses(self, incidents: list[Incident]) -> dict[str, str]:
        """Each incident's status now, as its item in incident-state says (read as the operator)."""
        dynamodb = self.operator.client("dynamodb")
        statuses = {}
        for incident in incidents:
            key = {"incident_id": {"S": incident.incident_id}}
            item = dynamodb.get_item(TableName=names.STATE_TABLE, Key=key, ConsistentRead=True).get("Item")
            statuses[incident.incident_id] = str((item or {}).get("status", {}).get("S"))
        return statuses

    def _settle(self) -> None:
        """Wait (a bounded time) for what waits in orders-queue and the asynchronous queue to be processed."""
        event_traffic.drained(self.operator, SETTLE_SECONDS)
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.events.invoker.pending() and time.monotonic() < deadline:
            time.sleep(0.2)

    def _observed(self, stages: defaultdict[str, _StageLog]) -> None:
        """The invocations the Lambda service made for the scenario (pollers, asynchronous events)."""
        for invocation in self.events.take_invocations():
            if invocation.function_name in _POLLED:
                stage = stages[invocation.function_name]
                stage.request_ids.add(invocation.request_id)
                stage.statuses.append(invocation.status)

    def _traffic(
        self, runtime: LocalLambdaRuntime, act: Act, stage: _StageLog, event: dict[str, Any]
    ) -> None:
        function = act.function
        if act.traffic in _DOORS:
            invocations, answers = self._requests(runtime, act.traffic, act.count)
            self.progress.step(f"traffic: {act.count} request(s) {_DOORS[act.traffic]}: {answers}")
        elif act.traffic == "burst":
            count = self.settings.burst_size
            self.progress.step(f"traffic: a burst of {count} concurrent invocations of {function}")
            # work as time, not computing: a busy machine must not stretch a burst past the timeout
            event = event | {"work_seconds": self.settings.burst_work_seconds}
            if "size_mb" in event:  # report-builder's everyday report: 100 MB rendered and hashed
                event["size_mb"] = BURST_REPORT_MB
            invocations = runtime.invoke_burst(function, event, count, act.qualifier)
        else:
            if act.traffic == "missing-key":
                event = {"key": names.MISSING_INPUT_KEY, "work_seconds": 0.0}
            elif act.traffic == "instructions":
                event = {"key": INSTRUCTIONS_KEY, "work_seconds": 0.0}
                stage.planted.append(INSTRUCTIONS_KEY)
                stage.planted_fault = INSTRUCTIONS_FAULT
                stage.planted_demands += INSTRUCTIONS_DEMANDS
            elif act.traffic == "secrets":  # the key names secrets; "debug" prints the environment
                event = {"key": SECRETS_KEY, "work_seconds": 0.0, "debug": True}
                stage.secrets += LOGGED_SECRETS
            events = [event] * act.count
            if act.traffic == "mixed-input":  # an everyday event, then one it cannot use, in turn
                events = [_mixed_event(function, n) for n in range(act.count)]
            self.progress.step(f"traffic: invoke {function}" + (f" x{act.count}" if act.count > 1 else ""))
            invocations = [runtime.invoke(function, sent, act.qualifier) for sent in events]
            if act.traffic == "secrets":
                printed = {c for i in invocations for c in printed_credentials(i.log_lines)}
                stage.secrets += tuple(sorted(printed))
        stage.request_ids.update(invocation.request_id for invocation in invocations)
        stage.statuses += [invocation.status for invocation in invocations]
        self._outputs += invocations
        statuses = Counter(invocation.status for invocation in invocations)
        self.progress.step("traffic: " + ", ".join(f"{n} {status}" for status, n in statuses.items()))

    def _requests(
        self, runtime: LocalLambdaRuntime, door: Traffic, count: int
    ) -> tuple[list[Invocation], list[int]]:
        """``count`` requests through a front door (``_DOORS``). The invocations they led to (none for a
        refused request) and the status of each answer."""
        body = str(_everyday_event(names.ORDER_INTAKE_FUNCTION)["body"])
        world = self.sandbox.world
        send: Callable[[], UrlResponse | ApiResponse]
        if door in ("url", "report-url"):
            urls = self.sandbox.function_urls(runtime)
            if door == "url":
                send = functools.partial(urls.request, world.order_intake_url, "POST", body)
            else:  # signed anew for each request, as an SDK does
                reader, url = self.sandbox.session(names.REPORT_READER), world.report_builder_url

                def send() -> UrlResponse:
                    return urls.request(url, "GET", None, signed_headers(reader, url, "GET", None))

        else:
            apis = RestApis(runtime, self.sandbox.session(names.APIGATEWAY_SERVICE))
            send = functools.partial(
                apis.request, world.orders_rest_api_id, names.ORDERS_API_STAGE, "POST", "/orders", body
            )
        invocations: list[Invocation] = []
        runtime.observers.append(invocations.append)
        try:
            answers = [send().status for _ in range(count)]
        finally:
            runtime.observers.remove(invocations.append)
        return invocations, answers

    def _drain(self, wait_seconds: int = 0) -> list[dict[str, Any]]:
        return drain_sns_events(
            self._sqs,
            self.sandbox.world.trigger_queue_url,
            self.sandbox.world.trigger_subscription_arn,
            wait_seconds=wait_seconds,
        )

    def _notifications(self) -> list[dict[str, Any]]:
        """The notifications published since the last call, as SQS received them from the topic."""
        return drain_envelopes(self._sqs, self.sandbox.world.diagnoses_queue_url)

    def _quiet_before(self, scenario: Scenario) -> None:
        wait = quiet_wait(scenario, self._changed_at, time.monotonic())
        if wait > 0:
            self.progress.step(f"wait {wait:.1f}s: its functions' last restore {SETTLED_SECONDS:g}s past")
            time.sleep(wait)

    def _restore(
        self,
        chaos: Chaos,
        applied: list[tuple[Fault, str]],
        before: dict[str, Any],
        runtime: LocalLambdaRuntime,
        functions: tuple[str, ...],
    ) -> list[Check]:
        """Restore in reverse order, then compare the world with the snapshot and invoke once more. Of the
        functions, those the scenario touched are read again (its own, and any its injectors' calls or the
        commands applied named); every other one is read at the lane's end (``closing_checks``)."""
        checks = []
        try:
            for fault, function in reversed(applied):
                self.progress.step(f"restore: {fault.name} on {function}")
                chaos.restore(fault, function)
                self._changed_at[function] = time.monotonic()
        except ChaosError as error:
            checks.append(Check("restore", False, str(error)))
        self._settle()
        self._discard_outputs()
        touched = {*functions, *self._commanded, *_functions_named(call.params for call in chaos.calls)}
        self._commanded.clear()
        after = self._world = world_state(self.operator, touched, before)
        checks.append(
            _restored(
                "world restored", before, after, "its functions and the rest equal the pre-fault snapshot"
            )
        )
        for function in functions:
            healthy = runtime.invoke(function, _light_event(function))
            self._outputs.append(healthy)
            checks.append(
                Check(
                    "healthy after restore",
                    healthy.status == "succeeded",
                    f"{function}: invocation {healthy.status}",
                )
            )
        self._discard_outputs()
        self._drain()
        return checks

    def _discard_outputs(self) -> None:
        """The reports the drill's own traffic made report-builder store (at ``reports/<request id>.json``)
        and the order it made order-intake put: the functions' everyday output, not part of the world a
        restore must give back."""
        s3 = self.operator.client("s3")
        for invocation in self._outputs:
            if invocation.function_name == names.REPORT_FUNCTION:  # a run past its timeout may store one
                s3.delete_object(Bucket=names.REPORT_BUCKET, Key=f"reports/{invocation.request_id}.json")
        writers = (names.ORDER_INTAKE_FUNCTION, names.ORDER_WORKER_FUNCTION, names.ORDERS_FUNCTION)
        if self._event_traffic or any(invocation.function_name in writers for invocation in self._outputs):
            self._event_traffic = False
            self.operator.client("dynamodb").delete_item(
                TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}
            )
        self._outputs.clear()

    def _evaluate(
        self,
        scenario: Scenario,
        incidents: list[Incident],
        stages: dict[str, _StageLog],
        runtime: LocalLambdaRuntime | None,
    ) -> list[Check]:
        wanted = Counter(expected.function for expected in scenario.expected)
        opened = Counter(incident.function for incident in incidents)
        functions = tuple(dict.fromkeys((*names.FUNCTIONS, *wanted, *opened)))
        shown = {f: opened[f] for f in functions if opened[f] or wanted[f]}
        checks = [
            Check(
                "incidents",
                opened == wanted,
                f"opened {dict(shown) or 'none'} (expected {dict(wanted) or 'none'})",
            )
        ]
        for function in functions:
            mine = [incident for incident in incidents if incident.function == function]
            expectations = [expected for expected in scenario.expected if expected.function == function]
            stage = stages[function].judged(
                self.resource_names(function), function, self.operator_arn.split(":")[4], self.region
            )
            act = _last_act(scenario, function)
            applier = None if runtime is None else _OperatorApplier(self, runtime, function, act)
            for incident, expected in zip(mine, expectations, strict=False):
                checks += check_incident(incident, expected, stage, applier)
            partial = [e for e in expectations if e.partial]
            if partial and len(mine) == len(expectations):
                named = {fault for incident in mine for fault in incident.fault_types}
                together = frozenset().union(*(e.fault_types for e in partial))
                checks.append(
                    Check(
                        "every fault named",
                        named == together,
                        f"{function}: its incidents name {sorted(named)} (injected {sorted(together)})",
                    )
                )
        return checks + recall_checks(scenario, incidents)

    def resource_names(self, function: str) -> dict[Resource, str]:
        world = self.sandbox.world
        resources: dict[Resource, str] = {
            "function": function,
            "role": self.roles[function],
            "security-group": world.security_group_id,
            "network-acl": world.network_acl_id,
            "route-table": world.route_table_id,
            "subnet": world.subnet_id,
            "table": names.ORDERS_TABLE,
            "bucket": names.INPUT_BUCKET,
        }
        if function in self.keys:
            resources["key"] = self.keys[function]
        if function == names.ORDERS_FUNCTION:
            resources["api"] = f"arn:aws:apigateway:{world.region}::/restapis/{world.orders_rest_api_id}"
        if function == names.CLICK_FUNCTION:
            resources["stream"], resources["stream-mapping"] = world.clickstream_arn, world.click_mapping_uuid
        return resources | _EVENT_PATHS.get(function, {})

    def closing_checks(self) -> list[Check]:
        """After every scenario: every function no scenario touched is as the lane's first snapshot read
        it (a scenario's own check reads only the functions it touched); the watchdog's sweep (as its own
        identity) finds nothing stale and no notification left unsent, and no incident is left RECEIVED or
        INVESTIGATING."""
        world = []
        if self._world is not None:
            self.progress.scenario(0, 0, "world")
            world.append(
                _restored(
                    "untouched functions unchanged",
                    self._world,
                    world_state(self.operator),
                    "every function equals its last snapshot",
                )
            )
            self.progress.finish(world[0].ok, world[0].detail)
        self.progress.scenario(0, 0, "watchdog")
        watchdog = build_watchdog(
            self.identities[names.WATCHDOG],
            diagnoses_topic_arn=self.sandbox.world.diagnoses_topic_arn,
            notify_grace_seconds=0,
        )
        self.progress.step("sweep: stale RECEIVED / INVESTIGATING incidents, unsent notifications")
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
                "no notification unsent",
                not report.notified and not report.notify_failed,
                f"the watchdog sent {report.notified}, failed {report.notify_failed}"
                if report.notified or report.notify_failed
                else "the watchdog found every terminal incident notified",
            ),
            Check(
                "every incident terminal",
                not open_incidents,
                f"left open: {open_incidents}" if open_incidents else "no incident RECEIVED or INVESTIGATING",
            ),
        ]
        self.progress.finish(all(c.ok for c in checks), "; ".join(c.detail for c in checks))
        return world + checks


# The event path of each event-driven function: its source queue, dead-letter queue and calling topic.
_EVENT_PATHS: dict[str, dict[Resource, str]] = {
    names.ORDER_WORKER_FUNCTION: {"queue": names.ORDERS_QUEUE, "dead-letter-queue": names.ORDERS_DLQ},
    names.ORDER_NOTIFIER_FUNCTION: {
        "dead-letter-queue": names.ORDER_NOTIFIER_DLQ,
        "topic": names.ORDER_EVENTS_TOPIC,
    },
}


class _OperatorApplier(Applier):
    """Applies a remediation as the drill's operator, then sees recovery the stage's own way: the function,
    invoked as the scenario's traffic invokes it, succeeds; the source queue drains (the poller delivers
    again), or a new order goes through it; or a new publish reaches order-notifier."""

    def __init__(self, drill: Drill, runtime: LocalLambdaRuntime, function: str, act: Act | None) -> None:
        self.drill = drill
        self.runtime = runtime
        self.function = function
        self.act = act

    def apply(self, command: AwsCommand, incident_id: str, applies: Applies) -> str:
        """By the product's executor, after a person's approval, where the stage sees recovery by calling
        the function (its traffic then is the calls the executor's check reads); else as the operator."""
        self.drill._commanded |= _functions_named([command.params])
        if self.drill.remediation is not None and applies.executor:
            world = functools.partial(world_state, self.drill.operator)
            traffic = self._traffic(applies.recovery)
            return self.drill.remediation.fix(incident_id, traffic, world, applies.twist)
        run_command(self.drill.operator, command)
        return "applied as the operator"

    def _call(self) -> None:
        """One call of the function as its traffic makes them (the output is the drill's, discarded)."""
        qualifier = self.act.qualifier if self.act else None
        source = next((i.on for i in self.act.inject if i.on), self.function) if self.act else self.function
        self.drill._outputs.append(self.runtime.invoke(self.function, _everyday_event(source), qualifier))

    def _traffic(self, recovery: Recovery) -> Callable[[], object]:
        """One everyday request through the door ``recovery`` watches (what the executor's check then reads
        the function's invocations of): an order to the queue, an event to the topic, a click to the
        stream, a request through the API or a function URL; else a call of the function."""
        if recovery in _ANSWERS:
            door = _ANSWERS[recovery]
            return lambda: self.drill._outputs.extend(self.drill._requests(self.runtime, door, 1)[0])
        if recovery in _EVENT_DOORS:
            self.drill._event_traffic = True  # what its orders write is the drill's, deleted after
            return lambda: event_traffic.send(self.drill.operator, _EVENT_DOORS[recovery], 1)
        return self._call

    def recovered(self, applies: Applies) -> tuple[bool, str]:
        operator, wait = self.drill.operator, applies.within_seconds
        if applies.recovery == "function-succeeds":
            return self._succeeds(wait)
        if applies.recovery == "queue-delivers":
            return self._order_delivered(wait)
        if applies.recovery == "queue-drains":
            drained = event_traffic.drained(operator, wait)
            left = event_traffic.waiting(operator)
            return drained, f"orders-queue holds {left} message(s) after up to {wait:g}s"
        if applies.recovery == "async-delivered":
            return self._failed_event_kept(wait)
        if applies.recovery == "stream-delivers":
            return self._click_counted(wait)
        if applies.recovery in _ANSWERS:
            door = _ANSWERS[applies.recovery]
            invocations, answers = self.drill._requests(self.runtime, door, 1)
            self.drill._outputs += invocations  # what it stored is the drill's, deleted after
            return 200 <= answers[0] < 300, f"a request through the {door} was answered {answers[0]}"
        marker: list[Invocation] = []
        self.drill.events.runtime.observers.append(marker.append)
        try:
            event_traffic.send(operator, "publish", 1)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and not any(i.status == "succeeded" for i in marker):
                time.sleep(0.2)
        finally:
            self.drill.events.runtime.observers.remove(marker.append)
        done = [i.status for i in marker if i.function_name == names.ORDER_NOTIFIER_FUNCTION]
        return "succeeded" in done, f"order-notifier invocations after a new publish: {done or 'none'}"

    def _succeeds(self, wait: float) -> tuple[bool, str]:
        """The function invoked with its everyday event and the qualifier its traffic uses, through the
        drill's own runtime (the scenario's: the same account limit), until one invocation succeeds or
        ``wait`` is over. Bad-input traffic is the scenario's point, not the fault's: its everyday event."""
        qualifier = self.act.qualifier if self.act else None
        source = next((i.on for i in self.act.inject if i.on), self.function) if self.act else self.function
        deadline = time.monotonic() + wait
        statuses: list[str] = []
        while True:
            invocation = self.runtime.invoke(self.function, _everyday_event(source), qualifier)
            self.drill._outputs.append(invocation)
            statuses.append(invocation.status + (f" ({invocation.error})" if invocation.error else ""))
            if invocation.status == "succeeded" or time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        called = f"{self.function}:{qualifier}" if qualifier else self.function
        return invocation.status == "succeeded", f"{called} invoked: {', '.join(statuses)}"

    def _order_delivered(self, wait: float) -> tuple[bool, str]:
        """An order the stage sends to orders-queue is processed and deleted: the queue drains within
        ``wait`` and its dead-letter queue gets nothing (a message order-worker processed but the poller
        could not delete comes back after the visibility timeout and is moved there)."""
        operator, dlq = self.drill.operator, names.ORDERS_DLQ
        before = event_traffic.waiting(operator, dlq)
        event_traffic.send(operator, "queue", 1)
        self.drill._event_traffic = True  # the order it writes is the drill's, deleted after
        drained = event_traffic.drained(operator, wait)
        after = event_traffic.waiting(operator, dlq)
        return (
            drained and after == before,
            f"a new order {'left' if drained else 'did not leave'} orders-queue within {wait:g}s; {dlq} held "
            f"{before} message(s), then {after}",
        )

    def _click_counted(self, wait: float) -> tuple[bool, str]:
        """A click the stage writes to the clickstream's first shard (the one the bad record blocked) is
        counted by click-aggregator within ``wait``: the shard moved on."""
        marker: list[Invocation] = []
        self.drill.events.runtime.observers.append(marker.append)
        try:
            event_traffic.put_clicks(self.drill.operator, 1, shards=(0,), page=RECOVERED_PAGE)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and not _counted(marker, RECOVERED_PAGE):
                time.sleep(0.2)
        finally:
            self.drill.events.runtime.observers.remove(marker.append)
        statuses = [i.status for i in marker if i.function_name == names.CLICK_FUNCTION]
        return _counted(marker, RECOVERED_PAGE), f"click-aggregator invocations after a new click: {statuses}"

    def _failed_event_kept(self, wait: float) -> tuple[bool, str]:
        """An unreadable event the stage publishes fails in order-notifier and reaches its dead-letter queue
        (Lambda sends it there with the function's role): the asynchronous path keeps what fails again."""
        operator, dlq = self.drill.operator, names.ORDER_NOTIFIER_DLQ
        before = event_traffic.waiting(operator, dlq)
        event_traffic.send(operator, "poison-publish", 1)
        deadline = time.monotonic() + wait
        while event_traffic.waiting(operator, dlq) <= before and time.monotonic() < deadline:
            time.sleep(0.2)
        after = event_traffic.waiting(operator, dlq)
        return after > before, f"{dlq} held {before} message(s), then {after} after an unreadable publish"


def _reusing_clients(session: boto3.Session) -> boto3.Session:
    """``session``, whose ``client(...)`` is made once for each set of arguments and then reused: the drill
    polls queues, injects faults and restores the world with it all through a scenario, and each new client
    costs tens of milliseconds of CPU to build from the service's model. boto3's clients are thread-safe.
    Arguments are told apart by value, or by identity when they are objects (a ``Config`` is not hashable);
    each entry keeps its arguments, so no identity is reused while it stands."""
    made: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...]]] = {}
    lock = threading.Lock()
    plain = session.client

    def part(value: Any) -> Any:
        return value if value is None or isinstance(value, str | int | float) else ("object", id(value))

    def client(*args: Any, **kwargs: Any) -> Any:
        named = sorted(kwargs.items())
        key = (*(part(a) for a in args), *((name, part(value)) for name, value in named))
        with lock:
            if key not in made:
                made[key] = (plain(*args, **kwargs), (*args, *named))
            return made[key][0]

    session.client = client
    return session


def _counted(invocations: list[Invocation], page: str) -> bool:
    """Whether an invocation of click-aggregator counted a click on ``page`` (its answer names the pages)."""
    return any(
        i.status == "succeeded" and isinstance(i.result, dict) and page in (i.result.get("pages") or {})
        for i in invocations
        if i.function_name == names.CLICK_FUNCTION
    )


def _last_act(scenario: Scenario, function: str) -> Act | None:
    """The scenario's last act on ``function``: its traffic is how the function is invoked now."""
    return next((act for act in reversed(scenario.acts) if act.function == function), None)


def _everyday_event(function: str) -> dict[str, Any]:
    """A function's everyday traffic; order-intake always submits the one order the drill deletes again."""
    if function == names.ORDER_INTAKE_FUNCTION:
        return names.order_submission(order_id=DRILL_ORDER)
    if function == names.ORDER_WORKER_FUNCTION:  # the one order it writes is the drill's, deleted after
        event = default_event(function)
        event["Records"][0]["body"] = names.order_message(order_id=DRILL_ORDER)
        return event
    return default_event(function)


def quiet_wait(scenario: Scenario, changed_at: dict[str, float], now: float) -> float:
    """How long a scenario in which nothing changed waits before it starts: until the last restore of its
    functions (``changed_at``, monotonic) is past the time a change may take to apply, as otherwise that
    restore is a candidate trigger, as it would be on AWS. 0 for a scenario that expects a change."""
    if not scenario.expected or any(e.trigger != "none" for e in scenario.expected):
        return 0.0
    changed = [changed_at[f] for f in scenario.functions if f in changed_at]
    return max(0.0, max(changed, default=-math.inf) + SETTLED_SECONDS - now)


def clear_of_minute_end(now: float, margin: float = MINUTE_EDGE_SECONDS) -> float:
    """How long to wait before sending mixed event traffic at ``now`` (epoch seconds) so that it starts at
    least ``margin`` before its minute ends: its successes and the poison's attempts (retried within a
    second at the drill's time scale) then land in one metrics minute, which is what the diagnosis cites
    for successes beside failures; split over two minutes, neither shows both."""
    into = now % 60
    return 60 - into if into > 60 - margin else 0.0


def _mixed_event(function: str, n: int) -> dict[str, Any]:
    """The n-th event of mixed input: even ones everyday (data-processor: the batches in turn), odd ones
    what the function cannot use (a batch that does not exist; order-intake: its JSON body cut short)."""
    if function == names.ORDER_INTAKE_FUNCTION:
        everyday = _everyday_event(function)
        return everyday if n % 2 == 0 else everyday | {"body": str(everyday["body"])[:12]}
    if n % 2 == 0:
        return names.input_event(n // 2 % len(names.INPUT_KEYS))
    return {"key": names.MISSING_INPUT_KEY, "work_seconds": 0.0}


def _light_event(function: str) -> dict[str, Any]:
    """Everyday traffic for the check after a restore; report-builder's smallest report, to save time."""
    if function == names.REPORT_FUNCTION:
        return names.report_request(size_mb=1, work_seconds=0.1)
    return _everyday_event(function)


def _functions_named(calls: Iterable[dict[str, Any]]) -> set[str]:
    """The functions the calls' ``FunctionName`` parameters name (a name, or a partial or whole ARN, with a
    qualifier or not)."""
    named = [str(params["FunctionName"]).split(":") for params in calls if "FunctionName" in params]
    return {parts[parts.index("function") + 1] if "function" in parts else parts[0] for parts in named}


def _restored(name: str, before: dict[str, Any], after: dict[str, Any], same: str) -> Check:
    old, new = render(before), render(after)
    if old == new:
        return Check(name, True, same)
    for was, now in zip(old.splitlines(), new.splitlines(), strict=False):
        if was != now:
            was, now = was.strip().rstrip(","), now.strip().rstrip(",")
            return Check(name, False, f"differs from the earlier snapshot: {was} → {now}")
    return Check(name, False, "differs from the earlier snapshot in length")
