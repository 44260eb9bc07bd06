"""`incident-diagnose --remediate`: the whole loop from a terminal, asking the person at the keyboard.

The supervisor's pipeline opens an incident for the function (as a direct incident on its topic would) and
diagnoses it; a provisional diagnosis is re-checked once CloudTrail's delivery bound has passed, and the
final one planned and reviewed. The plan is shown; the person approves or rejects it as their own AWS
identity, through the same gate as ``incident-remediate``; the executor applies it, proves recovery or
undoes it. Each part keeps the identity it has when deployed: the supervisor and the executor run as the
profiles ``--supervisor-profile`` and ``--executor-profile`` name (the sandbox writes both), the person as
the caller, who must be among ``REMEDIATION_APPROVERS``.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from executor.approvals import Approvals, Approver, Decision
from executor.cli import read_view, view_lines
from executor.handler import build_executor
from executor.run import Executor
from executor.settings import ExecutorSettings
from mcp_server.lambda_names import function_name_of
from supervisor.agent.report import render
from supervisor.incident.lifecycle import APPROVAL_DEADLINE, PLAN_DIGEST
from supervisor.incident.notify import METRICS_NAMESPACE
from supervisor.incident.signals import Signal
from supervisor.incident.stage import RECHECK_AT, delay_until
from supervisor.incident.store import Item, dynamodb_client
from supervisor.orchestrator import build_pipeline

# What a person types to decide; anything else decides nothing.
ANSWERS: dict[str, Decision] = {"yes": "APPROVED", "no": "REJECTED"}
WAIT_REPORT_SECONDS = 30.0  # how often a wait for the re-check says how long is left


class LoopStopped(Exception):
    """Why the loop cannot begin or go on; what was recorded stands and the message says what to do."""


@dataclass
class TerminalLoop:
    """``say``: progress (stderr); ``show``: the report and the plan (stdout); ``ask``: the person's answer
    to a prompt (EOFError: no answer)."""

    person: boto3.Session
    supervisor: boto3.Session
    executor: boto3.Session
    say: Callable[[str], None]
    show: Callable[[str], None]
    ask: Callable[[str], str]
    sleep: Callable[[float], None]

    def run(self, function: str, overrides: dict[str, Any], model: Any, on_record: Any) -> str:
        """The loop for ``function``, the supervisor's settings ``overrides`` applied; the incident's end."""
        url = {k: v for k, v in overrides.items() if k == "mcp_server_url"}
        settings = ExecutorSettings(**url)
        approver = self._approver(settings)
        quiet = Logger(
            service="incident-diagnose", level="ERROR", logger_handler=logging.StreamHandler(sys.stderr)
        )
        # Every run its own incident; its re-check and its execution run here, none is sent to a queue.
        pipeline = build_pipeline(
            self.supervisor,
            logger=quiet,
            **overrides,
            remediation=True,
            incident_window_seconds=0,
            recheck_queue_url=None,
            remediation_queue_url=None,
        )
        pipeline.model, pipeline.on_record = model, on_record
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="incident-diagnose")
        name = function_name_of(function)
        signal = Signal(
            message_id=f"incident-diagnose-{uuid.uuid4()}",
            source="direct",
            function_name=name,
            error_type="reported at a terminal",
            detail=f"incident-diagnose --remediate, by {approver}",
            observed_at=pipeline.store.clock(),
        )
        outcome = pipeline.process(signal, None, metrics)
        if outcome.incident_id is None:
            raise LoopStopped(f"no incident was opened: {outcome.reason}")
        incident_id = outcome.incident_id
        self.say(
            f"incident {incident_id}: {outcome.status}" + (f" ({outcome.reason})" if outcome.reason else "")
        )
        item = pipeline.store.get(incident_id) or {}
        if item.get("status") == "DIAGNOSED" and item.get("final") is False:
            self._wait(str(item[RECHECK_AT]), pipeline.store.clock)
            again = pipeline.rechecks.run(incident_id, None, None, metrics)
            self.say(f"re-check: {again.action}" + (f" ({again.reason})" if again.reason else ""))
        if pipeline.last_result is not None:
            self.show(render(pipeline.last_result, name))
        executor = build_executor(self.executor, logger=quiet, **url)
        person = Approvals(dynamodb_client(self.person), settings.incident_approvals_table)
        return self._take(executor, person, approver, incident_id)

    def _approver(self, settings: ExecutorSettings) -> str:
        """The person at the keyboard as the executor counts them; LoopStopped, before anything is opened,
        when it does not."""
        caller = str(self.person.client("sts").get_caller_identity()["Arn"])
        approver = Approver(settings.approver_arns).identity(caller)
        if approver is None:
            raise LoopStopped(
                f"you are {caller}, not one of REMEDIATION_APPROVERS, so the executor would not count your "
                f"approval: add {caller} to it (comma-separated), or run as an identity it names"
            )
        return approver

    def _wait(self, recheck_at: str, clock: Callable[[], datetime]) -> None:
        """Until ``recheck_at``: CloudTrail may not have delivered the change that started the failure."""
        self.say(f"provisional: CloudTrail may not have delivered every change yet; re-check at {recheck_at}")
        while (left := delay_until(recheck_at, clock())) > 0:
            self.say(f"  {left} s to the re-check")
            self.sleep(min(float(left), WAIT_REPORT_SECONDS))

    def _take(self, executor: Executor, person: Approvals, approver: str, incident_id: str) -> str:
        """Show the plan; the executor takes it at once when its risk may apply without a person, else
        after the person decided; the incident's state at the end."""
        item = self._item(executor, incident_id)
        view = read_view(executor.store, executor.approvals, item)
        self.show("\n".join(view_lines(view)))
        if item["status"] != "AWAITING_APPROVAL":
            return str(item["status"])
        function, within = view["plan"]["recovery"]["function"], view["plan"]["recovery"]["within_seconds"]
        self.say(
            f"once applied, the executor waits up to {within} s for {function}'s own invocations to succeed "
            f"(on the sandbox, call it: incident-sandbox invoke {function})"
        )
        said = self._execute(executor, incident_id)
        if said.startswith("waiting"):  # its risk needs a person
            decision = self._answer(item)
            person.decide(item, str(item[PLAN_DIGEST]), approver, decision)
            self.say(f"{decision.lower()} by {approver}")
            said = self._execute(executor, incident_id)
        self.say(f"executor: {said}")
        final = self._item(executor, incident_id)
        status, reason = str(final["status"]), final.get("error_reason")
        self.show(f"{incident_id}: {status}" + (f" ({reason})" if reason else ""))
        self.show(f"every call and check: incident-remediate show '{incident_id}'")
        return status

    def _execute(self, executor: Executor, incident_id: str) -> str:
        """The executor's run; interrupted, a run at once that undoes what it applied (as the next run
        would once its lease lapsed), unless interrupted again."""
        try:
            return executor.run(incident_id, f"incident-diagnose-{uuid.uuid4()}")
        except KeyboardInterrupt:
            self.say(
                "interrupted while the executor ran: undoing what it applied (interrupt again to leave it)"
            )
        try:
            undone = replace(executor, lease=timedelta(0)).run(
                incident_id, f"incident-diagnose-{uuid.uuid4()}"
            )
        except KeyboardInterrupt:
            raise LoopStopped(
                f"interrupted while the executor ran: the run is unfinished; where the watchdog runs (as "
                f"deployed) it hands the run to the executor again once its lease lapses, and that run "
                f"undoes what was applied (incident-remediate show '{incident_id}' says where it stands)"
            ) from None
        raise LoopStopped(f"interrupted while the executor ran; then {undone}")

    @staticmethod
    def _item(executor: Executor, incident_id: str) -> Item:
        item = executor.store.get(incident_id)
        if item is None:
            raise LoopStopped(f"incident {incident_id} is not in {executor.store.state_table}")
        return item

    def _answer(self, item: Item) -> Decision:
        """The person's decision on the plan; LoopStopped when they give none (the plan keeps waiting)."""
        digest = str(item[PLAN_DIGEST])
        try:
            answer = self.ask(f"Approve this plan ({digest})? yes to approve, no to reject: ").strip().lower()
        except EOFError:
            answer = ""
        if answer not in ANSWERS:
            raise LoopStopped(
                f"nothing decided: the plan awaits a decision until {item.get(APPROVAL_DEADLINE)} "
                f"(incident-remediate approve {item['incident_id']} --digest {digest})"
            )
        return ANSWERS[answer]
