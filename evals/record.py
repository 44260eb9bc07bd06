"""``incident-eval record``: break the sandbox as a case defines, and capture the incident as a case.

For each definition: a fresh CloudWatch and log group, the injectors as the operator, the change listed
by CloudTrail, the traffic through the sandbox's Lambda runtime, the alarm as SNS delivers it (or the
direct report), then every tool answer. Tools are called through the real MCP server, built in-process and
reached over the SDK's in-memory transport as the read-only ``mcp-server`` identity: the same argument
validation, structured answers and tool errors as production, and no bearer key anywhere to leak. Then the
world is restored and checked against its snapshot.

What is recorded: each tool with the argument sets its declaration names for the benchmark, the
``rules`` model's narrower second look at the logs (which it asks for when their first answer was cut:
recorded always, so that a replay with a smaller ``tool_response_max_bytes`` still has it), and whatever
else ``rules`` asks for when it investigates the incident live. Answers are cached by tool and arguments,
so the investigation sees the answers the case holds.
"""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from mcp import Client
from pydantic import ValidationError

from chaos.drill.event_traffic import put_clicks
from chaos.faults.calls import ApiCall
from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError
from chaos.sandbox import names
from chaos.sandbox.invoke import default_event
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.alarms import drain_sns_events
from chaos.workload.api_gateway import RestApis
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from chaos.workload.stream_poller import StreamPoller
from evals.corpus import (
    Case,
    CorpusError,
    Expected,
    ExpectedTrigger,
    RecordedCall,
    canonical_arguments,
    check_calls,
    dump_case,
)
from evals.definitions import CaseDefinition, Traffic
from evals.injectors import Injector, Injectors, discover
from evals.settings import EvalSettings
from mcp_server.aws import AwsClients
from mcp_server.contract.registry import TOOLS
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import build_graph, initial_state, run_graph
from supervisor.agent.providers import McpToolProvider, ToolCallFailed
from supervisor.diagnosis.rules.conversation import Conversation, incident_minutes
from supervisor.diagnosis.rules.model import RETRY_LOG_LINES, RulesChatModel
from supervisor.incident.signals import Signal, parse_event
from supervisor.incident.store import incident_id_for
from supervisor.schemas import Diagnosis, ToolProvider
from supervisor.settings import SupervisorSettings

Say = Callable[[str], None]

# Argument variants models commonly ask for, recorded beside the defaults.
GLOBAL_SERVICES: Final = frozenset({"iam"})  # CloudTrail records their calls in us-east-1
_ACCESS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
# A stream case's records wait this long (past the function's timeout and its IteratorAge alarm), read by a
# poller pass every STREAM_PASS_SECONDS (Lambda documents no pace for its retries; this one keeps the
# case's log lines, and so its tokens, near the other cases').
STREAM_WAIT_SECONDS: Final = names.ITERATOR_AGE_ALARM_MS / 1000 + 1.0
STREAM_PASS_SECONDS: Final = 1.5


class RecordError(Exception):
    """A case could not be recorded, or the world could not be put back as it was."""


class RecordingProvider:
    """Calls the live tools once per tool and arguments and keeps every answer (or tool error)."""

    def __init__(self, live: ToolProvider) -> None:
        self._live = live
        self.calls: dict[tuple[str, str], RecordedCall] = {}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        key = (name, canonical_arguments(name, arguments))
        if key not in self.calls:
            try:
                answer = await self._live.call_tool(name, arguments)
                self.calls[key] = RecordedCall(tool=name, arguments=arguments, result=json.loads(answer))
            except ToolCallFailed as error:
                self.calls[key] = RecordedCall(tool=name, arguments=arguments, error=str(error))
        call = self.calls[key]
        if call.error is not None:
            raise ToolCallFailed(call.error)
        return json.dumps(call.result)


def planned_calls(function: str) -> list[tuple[str, dict[str, Any]]]:
    """Every tool's default call first, then the other argument sets its declaration names."""
    base = {"lambda_name": function}
    defaults = [(tool.name, base | dict(tool.benchmark_arguments[0])) for tool in TOOLS.values()]
    variants = [
        (tool.name, base | dict(extra)) for tool in TOOLS.values() for extra in tool.benchmark_arguments[1:]
    ]
    return defaults + variants


def rules_second_look(
    function: str, incident: dict[str, Any], metrics: dict[str, Any] | None
) -> tuple[str, dict[str, Any]] | None:
    """The logs call ``rules`` makes when the first logs answer was cut: the incident's minutes (read from
    the metrics, as it reads them) and RETRY_LOG_LINES lines. None when the metrics show no failure."""
    conversation = Conversation(function, incident, results={"get_function_metrics": metrics or {}})
    minutes = incident_minutes(conversation)
    if minutes is None:
        return None
    return "get_recent_logs", {"lambda_name": function, "minutes": minutes, "limit": RETRY_LOG_LINES}


async def capture_tools(
    sandbox: Sandbox,
    function: str,
    incident: dict[str, Any],
    incident_id: str,
    model: BaseChatModel | None = None,
) -> tuple[list[RecordedCall], Diagnosis | None]:
    """Every planned call, then a live investigation by ``model`` (rules) over the same cache: the calls
    recorded, and the investigation's diagnosis."""
    server_settings = ServerSettings()
    server = build_server(
        server_settings, AwsClients.create(server_settings, sandbox.session(names.MCP_SERVER))
    )
    settings = SupervisorSettings()
    base = {"lambda_name": function}
    async with Client(server) as client:
        provider = RecordingProvider(McpToolProvider(client.session, settings.tool_timeout - 2))
        for tool, arguments in planned_calls(function):
            with contextlib.suppress(ToolCallFailed):  # a tool's error is recorded as its answer
                await provider.call_tool(tool, arguments)
        metrics = provider.calls[("get_function_metrics", canonical_arguments("get_function_metrics", base))]
        if (retry := rules_second_look(function, incident, metrics.result)) is not None:
            with contextlib.suppress(ToolCallFailed):
                await provider.call_tool(*retry)
        graph = build_graph(model or RulesChatModel(), provider, settings, Accounting())
        state = initial_state(incident, incident_id, function, time.time() + settings.time_budget_seconds)
        final, _ = await run_graph(graph, state, settings.recursion_limit)
    return list(provider.calls.values()), final["diagnosis"]


def secrets(sandbox: Sandbox) -> list[str]:
    """What must never land in a case: the MCP key and every sandbox identity's credentials."""
    found = [sandbox.world.mcp_api_key]
    parser = configparser.ConfigParser()
    parser.read(sandbox.env["AWS_SHARED_CREDENTIALS_FILE"])
    for section in parser.sections():
        found += [value for key, value in parser.items(section) if key.startswith("aws_")]
    return [value for value in found if value and len(value) >= 8]


def check_no_secrets(text: str, known: list[str]) -> None:
    """RecordError when ``text`` holds a known secret or anything shaped like a full AWS access key id."""
    if any(secret in text for secret in known):
        raise RecordError("the case holds a credential or the MCP key: not written")
    if match := _ACCESS_KEY_ID.search(text):
        raise RecordError(f"the case holds an AWS access key id ({match.group()[:4]}…): not written")


class Recorder:
    """Records cases on a running sandbox, as the operator."""

    def __init__(self, sandbox: Sandbox, settings: EvalSettings | None = None, say: Say = print) -> None:
        self.sandbox = sandbox
        self.settings = settings or EvalSettings()
        self.say = say
        self.operator = sandbox.session(names.OPERATOR)
        self.chaos = Chaos(self.operator, say=lambda _: None)
        self.injectors: Injectors = discover()
        self._secrets = secrets(sandbox)

    # --- one case -------------------------------------------------------------------------------------

    def record(self, definition: CaseDefinition) -> Case:
        """The case, with the world restored (RecordError if the restore does not check out)."""
        injectors = [(self.injectors.get(i.injector), i.params) for i in definition.injections]
        function = definition.function
        self._fresh(function)
        before = world_snapshot(self.operator)
        applied: list[Injector] = []
        with LocalLambdaRuntime(self.sandbox.session(names.LAMBDA_SERVICE)) as runtime:
            try:
                started = datetime.now(UTC)
                changes: list[ApiCall] = []
                for injector, params in injectors:
                    self.say(f"  inject {injector.name} {params or ''}".rstrip())
                    applied.append(injector)
                    changes += injector.inject(self.chaos, function, params)
                trigger = self._wait_for_cloudtrail(changes, started)
                statuses = self._traffic(runtime, function, definition.traffic)
                self.say(f"  traffic: {dict(statuses)}")
                signal = self._incident(definition)
                incident_id = incident_id_for(signal)
                calls, diagnosis = asyncio.run(
                    capture_tools(self.sandbox, function, signal.incident(), incident_id)
                )
                recorded_at = datetime.now(UTC).isoformat(timespec="seconds")
            finally:
                self._purge(definition.traffic)  # first: an order the API's function stored is no world's
                self._restore(applied, function, before, runtime)
        expected = Expected(
            faults=list(definition.faults),
            trigger=trigger if definition.triggered else None,
            affected_resources=list(definition.affected),
            ruled_out=list(definition.ruled_out),
        )
        self._compare(definition, diagnosis, expected, calls)
        return Case(
            id=definition.name,
            description=definition.description,
            recorded_at=recorded_at,
            function_name=function,
            incident_id=incident_id,
            incident=signal.incident(),
            injected=list(definition.injections),
            invocations=dict(sorted(statuses.items())),
            expected=expected,
            tool_results=calls,
        )

    def write(self, case: Case, directory: Path) -> Path:
        """The case as ``<id>.json``: checked for secrets, and read back as the corpus reads it, before it
        replaces the old one."""
        text = dump_case(case)
        check_no_secrets(text, self._secrets)
        path = directory / f"{case.id}.json"
        try:
            check_calls(path, Case.model_validate_json(text))
        except (ValidationError, CorpusError) as error:
            raise RecordError(f"{case.id}: the case does not read back: {error}") from None
        directory.mkdir(parents=True, exist_ok=True)
        staged = directory / f".{case.id}.json.tmp"
        staged.write_text(text)
        staged.replace(path)
        return path

    # --- the steps --------------------------------------------------------------------------------------

    def _fresh(self, function: str) -> None:
        """Metrics, alarm states, log lines and queued alarms of earlier cases out of the way."""
        self.sandbox.reset_cloudwatch()
        logs = self.operator.client("logs")
        group = f"/aws/lambda/{function}"
        for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=group):
            for stream in page["logStreams"]:
                logs.delete_log_stream(logGroupName=group, logStreamName=stream["logStreamName"])
        self._drain()

    def _drain(self, wait_seconds: int = 0) -> list[dict[str, Any]]:
        return drain_sns_events(
            self.operator.client("sqs"),
            self.sandbox.world.trigger_queue_url,
            self.sandbox.world.trigger_subscription_arn,
            wait_seconds=wait_seconds,
        )

    def _wait_for_cloudtrail(self, changes: list[ApiCall], since: datetime) -> ExpectedTrigger | None:
        """Until LookupEvents lists each change; the last one, as CloudTrail names it and its caller."""
        last: ExpectedTrigger | None = None
        for change in changes:
            region = "us-east-1" if change.service in GLOBAL_SERVICES else self.sandbox.region
            cloudtrail = self.operator.client("cloudtrail", region_name=region)
            deadline = time.monotonic() + self.settings.cloudtrail_wait_seconds
            while True:
                events = cloudtrail.lookup_events(
                    LookupAttributes=[{"AttributeKey": "Username", "AttributeValue": names.OPERATOR}],
                    StartTime=since - timedelta(seconds=2),
                    EndTime=datetime.now(UTC) + timedelta(seconds=2),
                )["Events"]
                matching = [e for e in events if str(e["EventName"]).startswith(change.operation)]
                if matching:
                    event = matching[0]  # newest first
                    identity = json.loads(event["CloudTrailEvent"]).get("userIdentity", {}).get("arn")
                    last = ExpectedTrigger(event_name=event["EventName"], identity=identity)
                    break
                if time.monotonic() > deadline:
                    raise RecordError(
                        f"CloudTrail does not list the operator's {change.operation} in {region} after "
                        f"{self.settings.cloudtrail_wait_seconds:g} s"
                    )
                time.sleep(0.2)
        return last

    def _traffic(
        self, runtime: LocalLambdaRuntime, function: str, traffic: tuple[Traffic, ...]
    ) -> Counter[str]:
        statuses: Counter[str] = Counter()
        for batch in traffic:
            if batch.api:
                apis = RestApis(runtime, self.sandbox.session(names.APIGATEWAY_SERVICE))
                api_id, body = self.sandbox.world.orders_rest_api_id, json.dumps(batch.event)
                for _ in range(batch.count):
                    answer = apis.request(api_id, names.ORDERS_API_STAGE, "POST", "/orders", body)
                    statuses[f"answered {answer.status}"] += 1
                continue
            if batch.stream:
                statuses.update(self._stream(runtime, batch))
                continue
            if batch.queue is not None:
                sqs = self.operator.client("sqs")
                url = sqs.get_queue_url(QueueName=batch.queue)["QueueUrl"]
                for _ in range(batch.count):
                    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(batch.event))
                statuses["sent"] += batch.count
                continue
            if batch.burst:
                invocations = runtime.invoke_burst(function, batch.event, batch.count, batch.qualifier)
            else:
                invocations = [
                    runtime.invoke(function, batch.event, batch.qualifier) for _ in range(batch.count)
                ]
            statuses.update(invocation.status for invocation in invocations)
        return statuses

    def _stream(self, runtime: LocalLambdaRuntime, batch: Traffic) -> Counter[str]:
        """The clicks written, then the stream poller's passes for ``STREAM_WAIT_SECONDS``: the statuses of
        the invocations it made."""
        seen: list[Invocation] = []
        poller = StreamPoller(runtime, self.sandbox.session(names.LAMBDA_SERVICE))
        runtime.observers.append(seen.append)
        try:
            put_clicks(self.operator, batch.count)
            deadline = time.monotonic() + STREAM_WAIT_SECONDS
            while time.monotonic() < deadline:
                poller.poll_once()
                time.sleep(STREAM_PASS_SECONDS)
        finally:
            runtime.observers.remove(seen.append)
        return Counter(f"stream {i.status}" for i in seen)

    def _incident(self, definition: CaseDefinition) -> Signal:
        """The first alarm SNS delivers (as the orchestrator parses it), or the definition's report."""
        if definition.report is not None:
            return Signal(
                message_id=str(uuid.uuid4()),
                source="direct",
                function_name=definition.function,
                error_type="UserReport",
                detail=definition.report,
                observed_at=datetime.now(UTC),
            )
        deadline = time.monotonic() + self.settings.alarm_wait_seconds
        while time.monotonic() < deadline:
            for event in self._drain(wait_seconds=1):
                for parsed in parse_event(event, now=datetime.now(UTC)):
                    if not isinstance(parsed, Signal):
                        continue
                    queue = parsed.alarmed_resource.value if parsed.alarmed_resource else None
                    if definition.alarmed_queue is not None and queue == definition.alarmed_queue:
                        # the pipeline resolves the queue to its consumer; the drill checks that
                        parsed = replace(parsed, function_name=definition.function)
                    if parsed.function_name == definition.function:
                        self.say(f"  alarm: {parsed.detail[:100]}")
                        return parsed
        raise RecordError(
            f"{definition.name}: no alarm for {definition.function} reached SNS within "
            f"{self.settings.alarm_wait_seconds:g} s (set a report for a case without one)"
        )

    def _purge(self, traffic: tuple[Traffic, ...]) -> None:
        """Messages the case sent and nothing consumed (the recorder runs no poller) out of the way."""
        sqs, table = self.operator.client("sqs"), self.operator.client("dynamodb")
        for queue in dict.fromkeys(batch.queue for batch in traffic if batch.queue is not None):
            sqs.purge_queue(QueueUrl=sqs.get_queue_url(QueueName=queue)["QueueUrl"])
        for batch in traffic:
            if batch.api:  # the orders the API's function stored
                key = {"order_id": {"S": str(batch.event["order_id"])}}
                table.delete_item(TableName=names.ORDERS_TABLE, Key=key)

    def _restore(
        self, applied: list[Injector], function: str, before: str, runtime: LocalLambdaRuntime
    ) -> None:
        problems = []
        for injector in reversed(applied):
            try:
                if not injector.restore(self.chaos, function):
                    problems.append(f"{injector.name}: no saved state to restore")
            except ChaosError as error:
                problems.append(f"{injector.name}: {error}")
        if world_snapshot(self.operator) != before:
            problems.append("the world differs from its snapshot before the case (chaos.snapshot)")
        healthy = runtime.invoke(function, default_event(function))
        if healthy.status != "succeeded":
            problems.append(f"an invocation after the restore {healthy.status}: {healthy.error}")
        self._fresh(function)
        if problems:
            raise RecordError(f"restore of {function} did not check out: {'; '.join(problems)}")
        self.say("  restored: the world equals its snapshot, and the function succeeds")

    def _compare(
        self,
        definition: CaseDefinition,
        diagnosis: Diagnosis | None,
        expected: Expected,
        calls: list[RecordedCall],
    ) -> None:
        """Notes (the case is kept): the rules model's live answer is not the expected one, or the expected
        trigger is not among the recorded changes (then no evidence can show it: set ``triggered=False``)."""
        answer = sorted(diagnosis.fault_types) if diagnosis is not None else None
        if answer != sorted(definition.faults):
            self.say(f"  note: rules answered {answer}, the case expects {sorted(definition.faults)}")
        trigger = expected.trigger
        if trigger is None:
            return
        listed = {
            (event.get("event_name"), event.get("identity_arn"))
            for call in calls
            if call.tool == "get_recent_changes" and call.result is not None
            for event in call.result.get("events", [])
        }
        if (trigger.event_name, trigger.identity) not in listed:
            self.say(f"  note: the trigger {trigger.event_name} is not in the recorded change history")
