"""The people and the Lambda service around the executor, as the drill plays them: a person reads the plan
and approves it with ``incident-remediate`` (a process of its own, as the operator's identity, never a
table written by the drill), and Lambda's event source mapping hands the executor's queue to the
executor's handler, run as the executor's own identity, while the scenario's traffic keeps calling the
function. Whether the function works again is then the stage's own predicate's to say, not the
executor's."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

import boto3
from aws_lambda_powertools import Logger

from chaos.drill.checks import ApplyFailed
from chaos.sandbox.names import STATE_TABLE
from chaos.workload.sqs_poller import delete_messages, receive_batch, sqs_record
from executor.handler import build_executor, handle

CLI_TIMEOUT_SECONDS = 60
SINCE_ALARM = "alarm to REMEDIATED"
TRAFFIC_SECONDS = 0.5  # between two calls of the function while the executor verifies


@dataclass
class DrillRemediation:
    """``env``: the sandbox's variables (what a person's shell sources); ``person``: the operator's ARN,
    the approver the executor is told to count."""

    env: dict[str, str]
    person: str
    operator: boto3.Session
    executor_session: boto3.Session
    queue_url: str
    mcp_url: str
    say: Callable[[str], None]
    auto_apply: str = ""  # EXECUTOR_AUTO_APPLY: risks applied without a person
    log: TextIO | None = None  # the executor's log lines (stdout otherwise), as CloudWatch would keep them
    poll_seconds: float = 0.5

    def __post_init__(self) -> None:
        sqs = self.operator.client("sqs")
        attributes = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        self._queue_arn = attributes["Attributes"]["QueueArn"]
        handler = logging.StreamHandler(self.log or sys.stdout)
        self._logger = Logger(service="incident-executor", logger_handler=handler)
        self._executor = build_executor(
            self.executor_session,
            approvers=self.person,
            mcp_server_url=self.mcp_url,
            poll_seconds=self.poll_seconds,
            auto_apply=self.auto_apply,
        )

    def fix(self, incident_id: str, traffic: Callable[[], object], expect: str = "REMEDIATED") -> str:
        """Approve the plan of ``incident_id`` as a person, run the executor on its queue while
        ``traffic`` calls the function; how it went. Raises ApplyFailed unless the executor's answer
        starts with ``expect``."""
        self.say(f"person: incident-remediate show {incident_id}")
        shown = json.loads(self._cli("show", incident_id, "--json"))
        if shown["status"] != "AWAITING_APPROVAL":
            raise ApplyFailed(f"the plan is {shown['status']}: {shown.get('reason')}")
        risks = {step["risk"] for step in shown["plan"]["steps"]}
        steps = ", ".join(f"{s['call']['operation']} ({s['risk']})" for s in shown["plan"]["steps"])
        automatic = bool(self.auto_apply) and risks <= set(self.auto_apply.split(","))
        if automatic:
            self.say(f"person: nothing to approve, its risk applies on its own ({steps})")
        else:
            self.say(f"person: incident-remediate approve --digest {str(shown['digest'])[:19]}… ({steps})")
            self._cli("approve", incident_id, "--digest", str(shown["digest"]))
        self.say("executor: its queue's requests, the function called meanwhile")
        stop = threading.Event()
        calls = threading.Thread(target=_every, args=(stop, traffic), daemon=True)
        calls.start()
        try:
            outcome = self._deliver(incident_id)
        finally:
            stop.set()
            calls.join(timeout=30)
        self.say(f"executor: {outcome}")
        if not outcome.startswith(expect):
            raise ApplyFailed(outcome)
        how = "auto-applied" if automatic else "approved with incident-remediate"
        if expect != "REMEDIATED":
            return f"{how}, refused by the executor: {outcome}"
        return f"{how}, applied by the executor, {self._since_alarm(incident_id)}"

    def _since_alarm(self, incident_id: str) -> str:
        """How long from the alarm (the incident's ``observed_at``) to its REMEDIATED move, as the incident
        item records both (``bench.remediation`` reads this phrase)."""
        key = {"incident_id": {"S": incident_id}}
        item = self.operator.client("dynamodb").get_item(TableName=STATE_TABLE, Key=key, ConsistentRead=True)
        times = [
            datetime.fromisoformat(item["Item"][k]["S"].replace("Z", "+00:00"))
            for k in ("observed_at", "updated_at")
        ]
        return f"{SINCE_ALARM} {(times[1] - times[0]).total_seconds():.1f} s"

    def _cli(self, *argv: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REMEDIATION_", "EXECUTOR_"))}
        env |= self.env | {
            "AWS_PROFILE": "operator",
            "REMEDIATION_APPROVERS": self.person,
            "REMEDIATION_QUEUE_URL": self.queue_url,
        }
        ran = subprocess.run(  # noqa: S603 - our own command, its arguments ours
            [sys.executable, "-m", "executor.cli", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )
        if ran.returncode != 0:
            raise ApplyFailed(f"incident-remediate {argv[0]}: {ran.stderr.strip() or ran.stdout.strip()}")
        return ran.stdout

    def _deliver(self, incident_id: str) -> str:
        """The queue's messages to the executor's handler, as Lambda's mapping would (one at a time); what
        the executor said of ``incident_id`` last. Requests for other incidents are only nudges: taken
        and answered as the executor answers them."""
        sqs = self.operator.client("sqs")
        said = "no request for it reached the executor's queue"
        while messages := receive_batch(sqs, self.queue_url, 10):
            for message in messages:
                event = {"Records": [sqs_record(message, self._queue_arn)]}
                answer: dict[str, Any] = handle(self._executor, event, None, self._logger)
                (outcome,) = answer["outcomes"]
                if outcome.get("incident_id") == incident_id and not outcome["outcome"].startswith("nothing"):
                    said = str(outcome["outcome"])
            delete_messages(sqs, self.queue_url, messages)
        return said


def _every(stop: threading.Event, traffic: Callable[[], object]) -> None:
    while not stop.wait(TRAFFIC_SECONDS):
        traffic()
