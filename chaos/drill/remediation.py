"""The people and the Lambda service around the executor, as the drill plays them: a person reads the plan
(what its notice says: the digest and each step; the drill reads them from the incident tables) and
approves it with ``incident-remediate`` (a process of its own, as the operator's identity, never a table
written by the drill), and Lambda's event source mapping hands the executor's queue to the executor's
handler, run as the executor's own identity, while the scenario's traffic keeps coming. Whether the
function works again is then the stage's own predicate's to say, not the executor's; a scenario's twist
(scenarios.Twist) plays what else may happen on the way, and where the fix must not stand, the stage's
own reading of the world says whether it is as it was."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TextIO

import boto3
from aws_lambda_powertools import Logger

from chaos.drill.checks import ApplyFailed
from chaos.drill.scenarios import UNRECOVERED, Twist
from chaos.sandbox.names import (
    CONTEXT_TABLE,
    FUNCTION_NAME,
    OPERATOR,
    ORDERS_FUNCTION,
    ORDERS_ROLE,
    ROLE_NAME,
    STATE_TABLE,
    SUPERVISOR,
)
from chaos.snapshot import render
from chaos.workload.sqs_poller import delete_messages, receive_batch, sqs_record
from executor.handler import build_executor, handle
from executor.run import IN_PLACE, Executor
from supervisor.incident.lifecycle import APPROVAL_DEADLINE, PLAN, PLAN_DIGEST
from supervisor.remediation.queue import MalformedRequest, parse_request, send_request
from watchdog.handler import build_watchdog

CLI_TIMEOUT_SECONDS = 60
SINCE_ALARM = "alarm to REMEDIATED"
APPLIED = "applied by the executor"
# The fix an earlier incident of the same failure applied, found in place (the executor called nothing).
FOUND_IN_PLACE = "found in place by the executor"
MOVED_TO = 7  # the reserved concurrency the moved twist sets
WORLD_AS_BEFORE = "the world read as before"  # how a fix a staged guard kept out ends (bench.remediation)
TRAFFIC_SECONDS = 0.5  # between two calls of the function while the executor verifies
LEASE_SECONDS = 60  # the executor's lease in the drill (its least), as the killed twist lets it pass
# How the executor's answer starts, by twist (REMEDIATED otherwise).
EXPECTED: Final[dict[Twist | None, str]] = {
    "moved": "NOT_REMEDIATED: not applied",
    "useless": "NOT_REMEDIATED: the fix did not help",
    "tampered": "NOT_REMEDIATED: refused: the stored plan's digest",
    "killed": "NOT_REMEDIATED: the executor's run died",
    "expired": "EXPIRED by the watchdog; the executor refused: ",
}
# The executor's Lambda handler on the SQS event read from stdin (the process the killed twist kills).
KILLED_HANDLER = "import json, sys; from executor.handler import handler; handler(json.load(sys.stdin), None)"
# How a fix the executor brought to REMEDIATED ends (DrillRemediation.fix): by whom, then since_alarm.
_BY = f"{re.escape(APPLIED)}|{re.escape(FOUND_IN_PLACE)}"
_REMEDIATED = re.compile(rf"({_BY}), {re.escape(SINCE_ALARM)} (\d+(?:\.\d+)?) s")


def since_alarm(seconds: float) -> str:
    return f"{SINCE_ALARM} {seconds:.1f} s"


def remediated(detail: str) -> tuple[str, float] | None:
    """(APPLIED or FOUND_IN_PLACE, the seconds from the alarm to REMEDIATED) where a check's detail tells of
    a fix the executor brought to REMEDIATED; else None (applied as the operator, kept out by a guard, or
    failed). The one reading of it: ``bench.remediation`` and ``evals.live`` call this."""
    found = _REMEDIATED.search(detail)
    return None if found is None else (found.group(1), float(found.group(2)))


@dataclass
class DrillRemediation:
    """``env``: the sandbox's variables (what a person's shell sources); ``person``: the operator's ARN,
    the approver the executor is told to count."""

    env: dict[str, str]
    person: str
    operator: boto3.Session
    executor_session: boto3.Session
    watchdog_session: boto3.Session
    queue_url: str
    mcp_url: str
    say: Callable[[str], None]
    auto_apply: str = ""  # EXECUTOR_AUTO_APPLY: risks applied without a person
    log: TextIO | None = None  # the executor's log lines (stdout otherwise), as CloudWatch would keep them
    poll_seconds: float = 0.5
    topic_arn: str | None = None  # the diagnoses topic: each end's notice

    def __post_init__(self) -> None:
        sqs = self.operator.client("sqs")
        attributes = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        self._queue_arn = attributes["Attributes"]["QueueArn"]
        handler = logging.StreamHandler(self.log or sys.stdout)
        self._logger = Logger(service="incident-executor", logger_handler=handler)
        self._executor = self._build()

    def _build(self) -> Executor:
        return build_executor(
            self.executor_session,
            approvers=self.person,
            mcp_server_url=self.mcp_url,
            poll_seconds=self.poll_seconds,
            auto_apply=self.auto_apply,
            lease_seconds=LEASE_SECONDS,
            diagnoses_topic_arn=self.topic_arn,
        )

    def fix(
        self,
        incident_id: str,
        traffic: Callable[[], object],
        world: Callable[[], dict[str, Any]],
        twist: Twist | None = None,
    ) -> str:
        """Approve the plan of ``incident_id`` as a person, run the executor on its queue while ``traffic``
        calls the function, with ``twist`` on the way (scenarios.Twist); how it went. Raises ApplyFailed
        unless the executor's answer is the one the twist expects and, where the fix must not stand, the
        world (``world()``, the stage's own reading) is as it was before the executor ran."""
        item = self._item(incident_id)  # what the plan's notice says: its status, digest and steps
        if item.get("status") != "AWAITING_APPROVAL":
            raise ApplyFailed(f"the plan is {item.get('status')}: {item.get('error_reason')}")
        digest, plan = str(item[PLAN_DIGEST]), self._plan(incident_id)
        risks = {step["risk"] for step in plan["steps"]}
        steps = ", ".join(f"{s['call']['operation']} ({s['risk']})" for s in plan["steps"])
        # A fix the notice says did not help before waits for the person, whatever its risk.
        flagged = plan.get("failed_before") or []
        automatic = bool(self.auto_apply) and risks <= set(self.auto_apply.split(",")) and not flagged
        if twist == "non-approver":
            self.say("supervisor: incident-remediate approve, as its own identity")
            argv = ("approve", incident_id, "--digest", digest)
            self._refused(*argv, profile=SUPERVISOR, says="not an approver")
        if automatic:
            self.say(f"person: nothing to approve, its risk applies on its own ({steps})")
        else:
            self.say(f"person: incident-remediate approve --digest {digest[:19]}… ({steps})")
            self._cli("approve", incident_id, "--digest", digest)
        if twist == "tampered":
            self._tamper(incident_id)
        moved_back = self._move(plan) if twist == "moved" else None
        before = world() if twist in UNRECOVERED else None
        if twist == "killed":
            outcome = self._killed(incident_id)
        elif twist == "expired":
            outcome = self._expired(incident_id)
        elif twist == "tampered":
            outcome = self._deliver(self._executor, incident_id)
        else:
            outcome = self._with_traffic(traffic, lambda: self._deliver(self._executor, incident_id))
        self.say(f"executor: {outcome}")
        if not outcome.startswith(EXPECTED.get(twist, "REMEDIATED")):
            raise ApplyFailed(outcome)
        how = "auto-applied" if automatic else "approved with incident-remediate"
        if before is not None:
            try:
                _unchanged(before, world(), outcome)
            finally:
                if moved_back is not None:
                    moved_back()
            return f"{how}; {outcome}; {WORLD_AS_BEFORE}"
        if twist == "replayed":
            self._replay(incident_id, digest, world)
        by = FOUND_IN_PLACE if outcome.endswith(f"{IN_PLACE})") else APPLIED
        return f"{how}, {by}, {self._since_alarm(incident_id)}"

    def settle(self, incident_ids: list[str]) -> None:
        """What Lambda's mapping and the person do before a scenario's world is put back: every request left
        on the executor's queue delivered (with auto-apply, a plan nobody applied runs now, as it would have
        at once), then each of ``incident_ids`` still awaiting approval rejected with incident-remediate
        (its digest read from the incident, as its notice gives it), so that none lingers to expire."""
        self._deliver(self._executor)
        waiting = {i: self._item(i) for i in incident_ids}
        waiting = {i: item for i, item in waiting.items() if item.get("status") == "AWAITING_APPROVAL"}
        for incident_id, item in waiting.items():
            self.say(f"person: incident-remediate reject {incident_id}: not applied in this scenario")
            self._cli("reject", incident_id, "--digest", str(item.get(PLAN_DIGEST)))
        if waiting:
            self._deliver(self._executor)

    def _with_traffic(self, traffic: Callable[[], object], run: Callable[[], str]) -> str:
        self.say("executor: its queue's requests, the function called meanwhile")
        stop = threading.Event()
        calls = threading.Thread(target=_every, args=(stop, traffic), daemon=True)
        calls.start()
        try:
            return run()
        finally:
            stop.set()
            calls.join(timeout=30)

    def _move(self, plan: dict[str, Any]) -> Callable[[], None]:
        """What the plan's first step changes (a function's reserved concurrency) set by the operator to
        another value than the plan found or sets, after the plan was made; the call that puts it back
        as it was, for the stage to make once the executor's answer is judged."""
        function = plan["steps"][0]["call"]["params"]["FunctionName"]
        lambda_ = self.operator.client("lambda")
        was = lambda_.get_function_concurrency(FunctionName=function).get("ReservedConcurrentExecutions")
        self.say(f"operator: reserves {MOVED_TO} for {function} meanwhile (it had {was})")
        lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=MOVED_TO)

        def back() -> None:
            if was is None:
                lambda_.delete_function_concurrency(FunctionName=function)
            else:
                lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=was)

        return back

    def _tamper(self, incident_id: str) -> None:
        """The approved plan, as stored in incident-context, aimed at another function by someone who can
        write that table (the operator's identity here): its first step's function or role swapped."""
        plan = self._plan(incident_id)
        params = plan["steps"][0]["call"]["params"]
        field = "FunctionName" if "FunctionName" in params else "RoleName"
        aimed = {"FunctionName": FUNCTION_NAME, "RoleName": ROLE_NAME}[field]
        if params[field] == aimed:
            aimed = {"FunctionName": ORDERS_FUNCTION, "RoleName": ORDERS_ROLE}[field]
        self.say(f"someone: the stored plan's {field} {params[field]} → {aimed}, after its approval")
        params[field] = aimed
        self.operator.client("dynamodb").update_item(
            TableName=CONTEXT_TABLE,
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression="SET #p = :p",
            ExpressionAttributeNames={"#p": PLAN},
            ExpressionAttributeValues={":p": {"S": json.dumps(plan)}},
        )

    def _killed(self, incident_id: str) -> str:
        """The executor's handler in a process of its own, killed once it verifies (nothing calls the
        function yet, so it cannot have seen recovery); Lambda would deliver the request again, and that
        run would find the dead one's lease still running: the request is dropped. Then a lease passes
        (the clocks of the watchdog and the next run moved on by it): the watchdog's sweep, as its own
        identity, asks the executor again, and the next run undoes what the dead one recorded."""
        sqs = self.operator.client("sqs")
        messages = receive_batch(sqs, self.queue_url, 10)
        event = {"Records": [sqs_record(message, self._queue_arn) for message in messages]}
        self.say("executor: its handler in a process of its own, killed once it verifies")
        process = subprocess.Popen(  # noqa: S603 - our own handler, its event ours
            [sys.executable, "-c", KILLED_HANDLER],
            env=self._environment("executor") | {"EXECUTOR_POLL_SECONDS": str(self.poll_seconds)},
            stdin=subprocess.PIPE,
            stdout=self.log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(event))
        process.stdin.close()
        try:
            reached = self._await_status(incident_id, "VERIFYING", process)
        finally:
            process.kill()
            process.wait(timeout=CLI_TIMEOUT_SECONDS)
        delete_messages(sqs, self.queue_url, messages)
        if not reached:
            raise ApplyFailed(f"the executor's process never reached VERIFYING: {self._status(incident_id)}")
        later = _ahead(LEASE_SECONDS + 1)
        report = self._sweep(later)
        self.say(f"watchdog: a lease later, asked the executor again for {report.remediations_resent}")
        if incident_id not in report.remediations_resent:
            raise ApplyFailed(f"the watchdog did not ask the executor again: {report.as_dict()}")
        executor = self._build()
        executor.store.clock = later
        return self._deliver(executor, incident_id)

    def _expired(self, incident_id: str) -> str:
        """The approval given in time, the executor's run only past the plan's deadline (its queue held up
        for an hour: the clocks of that run and of the watchdog moved past it): the run must refuse the
        approval, and the watchdog end the plan EXPIRED."""
        deadline = _instant(self._item(incident_id)[APPROVAL_DEADLINE])
        later = _ahead((deadline - datetime.now(UTC)).total_seconds() + 1)
        self.say(f"executor: its queue held up past the plan's deadline ({deadline:%H:%M:%S})")
        executor = self._build()
        executor.store.clock = executor.approvals.clock = later
        refused = self._deliver(executor, incident_id)
        self.say(f"executor: {refused}")
        ended = self._sweep(later).remediations_ended
        if {"incident_id": incident_id, "status": "EXPIRED"} not in ended:
            raise ApplyFailed(f"{refused}; the watchdog ended {ended}, not this plan EXPIRED")
        return f"EXPIRED by the watchdog; the executor {refused}"

    def _sweep(self, clock: Callable[[], datetime]) -> Any:
        """A sweep of the watchdog, as its own identity, on ``clock``; its report."""
        watchdog = build_watchdog(
            self.watchdog_session,
            remediation_queue_url=self.queue_url,
            executor_lease_seconds=LEASE_SECONDS,
            diagnoses_topic_arn=self.topic_arn,
        )
        watchdog.store.clock = clock
        return watchdog.run()

    def _replay(self, incident_id: str, digest: str, world: Callable[[], dict[str, Any]]) -> None:
        """The used approval given again and the request delivered again: both refused, nothing changes."""
        after = world()
        self.say("person: incident-remediate approve, the same digest again")
        self._refused("approve", incident_id, "--digest", digest, profile=OPERATOR, says="awaits no approval")
        send_request(self.operator.client("sqs"), self.queue_url, incident_id)
        again = self._deliver(self._executor, incident_id)
        self.say(f"executor, the request delivered again: {again}")
        if not again.startswith("nothing to do: the incident is REMEDIATED"):
            raise ApplyFailed(f"the request delivered again: {again}")
        _unchanged(after, world(), again)

    def _since_alarm(self, incident_id: str) -> str:
        """How long from the alarm (the incident's ``observed_at``) to its REMEDIATED move, as the incident
        item records both (``remediated`` reads this phrase back)."""
        item = self._item(incident_id)
        seconds = (_instant(item["updated_at"]) - _instant(item["observed_at"])).total_seconds()
        return since_alarm(seconds)

    def _item(self, incident_id: str) -> dict[str, Any]:
        """The incident's item in incident-state, read as the operator (strings only)."""
        key = {"incident_id": {"S": incident_id}}
        item = self.operator.client("dynamodb").get_item(TableName=STATE_TABLE, Key=key, ConsistentRead=True)
        return {name: value.get("S") for name, value in item.get("Item", {}).items()}

    def _plan(self, incident_id: str) -> dict[str, Any]:
        """The stored plan, read as the operator."""
        dynamodb, key = self.operator.client("dynamodb"), {"incident_id": {"S": incident_id}}
        item = dynamodb.get_item(TableName=CONTEXT_TABLE, Key=key, ConsistentRead=True)["Item"]
        return dict(json.loads(item[PLAN]["S"]))

    def _status(self, incident_id: str) -> str:
        return str(self._item(incident_id).get("status"))

    def _await_status(self, incident_id: str, status: str, process: subprocess.Popen[str]) -> bool:
        """Whether ``incident_id`` reached ``status`` while ``process`` ran (a minute at most)."""
        deadline = time.monotonic() + CLI_TIMEOUT_SECONDS
        while time.monotonic() < deadline and process.poll() is None:
            if self._status(incident_id) == status:
                return True
            time.sleep(0.1)
        return False

    def _environment(self, profile: str) -> dict[str, str]:
        """A shell on the sandbox as ``profile``, with the executor's approvers, queue and topic set."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REMEDIATION_", "EXECUTOR_"))}
        return (
            env
            | self.env
            | {
                "AWS_PROFILE": profile,
                "REMEDIATION_APPROVERS": self.person,
                "REMEDIATION_QUEUE_URL": self.queue_url,
                "MCP_SERVER_URL": self.mcp_url,
                "EXECUTOR_DIAGNOSES_TOPIC_ARN": self.topic_arn or "",
                "EXECUTOR_AUTO_APPLY": self.auto_apply,
            }
        )

    def _run_cli(self, argv: tuple[str, ...], profile: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - our own command, its arguments ours
            [sys.executable, "-m", "executor.cli", *argv],
            env=self._environment(profile),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )

    def _cli(self, *argv: str) -> str:
        ran = self._run_cli(argv, OPERATOR)
        if ran.returncode != 0:
            raise ApplyFailed(f"incident-remediate {argv[0]}: {ran.stderr.strip() or ran.stdout.strip()}")
        return ran.stdout

    def _refused(self, *argv: str, profile: str, says: str) -> None:
        """``incident-remediate`` as ``profile`` must fail, saying ``says`` (not merely fail: a refusal by
        IAM, say, would hide a missing check)."""
        ran = self._run_cli(argv, profile)
        said = ran.stderr.strip() or ran.stdout.strip()
        self.say(f"{profile}: exit {ran.returncode}: {said[:160]}")
        if ran.returncode == 0 or says not in said:
            raise ApplyFailed(f"incident-remediate {argv[0]} as {profile} was not refused: {said[:300]}")

    def _deliver(self, executor: Executor, incident_id: str | None = None) -> str:
        """The queue's messages to the executor's handler, as Lambda's mapping would (one at a time); what
        the executor said of ``incident_id`` last, a run that did something before one that found nothing
        to do. With ``incident_id``, only its requests are taken: SQS promises no order, and the others
        (a sibling incident's plan for the same fix, say) are left for ``settle``."""
        sqs = self.operator.client("sqs")
        said, nothing = None, "no request for it reached the executor's queue"
        others: list[dict[str, Any]] = []
        while messages := receive_batch(sqs, self.queue_url, 10):
            for message in messages:
                if incident_id is not None and _requested(message) != incident_id:
                    others.append(message)
                    continue
                event = {"Records": [sqs_record(message, self._queue_arn)]}
                answer: dict[str, Any] = handle(executor, event, None, self._logger)
                (outcome,) = answer["outcomes"]
                if outcome.get("incident_id") == incident_id:
                    if outcome["outcome"].startswith("nothing"):
                        nothing = str(outcome["outcome"])
                    else:
                        said = str(outcome["outcome"])
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        for message in others:  # visible again at once
            sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return said or nothing


def _requested(message: dict[str, Any]) -> str | None:
    try:
        return parse_request(message.get("Body"))
    except MalformedRequest:
        return None


def _unchanged(before: dict[str, Any], after: dict[str, Any], outcome: str) -> None:
    """ApplyFailed naming the first line of the world that differs, if any."""
    old, new = render(before).splitlines(), render(after).splitlines()
    for was, now in zip(old, new, strict=False):
        if was != now:
            raise ApplyFailed(f"{outcome}; but the world changed: {was.strip()} → {now.strip()}")
    if len(old) != len(new):
        raise ApplyFailed(f"{outcome}; but the world changed in length")


def _instant(text: object) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _ahead(seconds: float) -> Callable[[], datetime]:
    """A clock ``seconds`` ahead of now: the time a component sees once that long has passed."""
    return lambda: datetime.now(UTC) + timedelta(seconds=seconds)


def _every(stop: threading.Event, traffic: Callable[[], object]) -> None:
    while not stop.wait(TRAFFIC_SECONDS):
        traffic()
