"""One run of the executor on one incident: redeem the approval, apply the plan, verify recovery, and undo
what it applied when recovery is not shown.

    AWAITING_APPROVAL -> APPLYING      the approval of the stored plan's digest redeemed (once), or the
                                       plan approved automatically when every step's risk may be
    APPLYING -> VERIFYING              every step applied, each after its precondition read true
    VERIFYING -> REMEDIATED            recovery shown within the plan's window
    APPLYING | VERIFYING -> NOT_REMEDIATED | UNDO_FAILED
                                       a step refused, or no recovery: the applied steps undone in reverse
                                       (UNDO_FAILED says what is left for a person)

A run that finds the incident APPLYING or VERIFYING with its last update older than the lease (the run
before it died) undoes what that run recorded and ends there: no step is ever applied twice. Each call,
the verification and the undo are recorded in incident-context (``execution``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from executor.approvals import ApprovalRefused, Approvals, Approver
from executor.recovery import Verdict
from executor.steps import AppliedCall, StepRefused, Writer, apply_steps, interrupted, undo_steps
from mcp_server.contract.history import FIX, FIX_VERDICT, RECOVERED_AT, RESOLVED_BY, FixVerdict
from supervisor.incident.lifecycle import EXECUTION, PLAN_DIGEST
from supervisor.incident.notify import Notifier, notify_now
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, Item, TransitionConflict
from supervisor.remediation.operation import Reader
from supervisor.remediation.operations import BY_CALL
from supervisor.remediation.plan import ApiCall, Plan
from supervisor.remediation.planning import stored_plan

AUTOMATIC: Final[str] = "automatic (every step's risk may apply without a person)"
IN_PLACE: Final[str] = "found in place: not called"  # a step the world already held, in the end's reason

Verify = Callable[[Plan, datetime], Verdict]


@dataclass
class Record:
    """What a run did, kept in incident-context after each change."""

    run: str
    approval: dict[str, Any] = field(default_factory=dict)
    calling: int | None = None  # the step whose call was started last
    calls: list[dict[str, Any]] = field(default_factory=list)
    in_place: list[int] = field(default_factory=list)  # steps the world already held: nothing called
    verification: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)

    def as_json(self) -> str:
        return json.dumps(self.__dict__, default=str)


@dataclass
class Executor:
    store: IncidentStore
    approvals: Approvals
    approver: Approver
    read: Reader
    write: Writer
    verify: Verify
    auto_apply: frozenset[str] = frozenset()  # risks that apply without a person
    lease: timedelta = timedelta(minutes=15)
    poll_seconds: float = 2.0
    sleep: Callable[[float], None] = time.sleep
    notifier: Notifier | None = None  # each end's notice (supervisor.incident.notify); None: none sent

    def run(self, incident_id: str, run_id: str) -> str:
        """Take ``incident_id`` as far as this run may; what happened, for the log."""
        item = self.store.get(incident_id)
        status = None if item is None else str(item["status"])
        if item is None or status not in {"AWAITING_APPROVAL", "APPLYING", "VERIFYING"}:
            return f"nothing to do: the incident is {status or 'unknown'}"
        try:
            found = stored_plan(self.store, incident_id)
        except ValueError as unreadable:  # not JSON, or not a plan: nothing is applied from it
            return self._changed(item, f"the stored plan cannot be read ({str(unreadable)[:200]})")
        if found is None:
            return "nothing to do: no plan is stored"
        plan, digest = found
        if status != "AWAITING_APPROVAL":
            return self._resume(item, plan, run_id)
        if digest != item.get(PLAN_DIGEST):
            awaited = item.get(PLAN_DIGEST)
            return self._changed(item, f"the stored plan's digest {digest} is not the one made ({awaited})")
        try:
            approval = self._approval(item, plan, digest)
        except ApprovalRefused as refused:
            return f"refused: {refused}"
        if approval is None:
            return "waiting: the plan awaits a person's approval"
        if approval.get("decision") == "REJECTED":
            reason = f"rejected by {approval.get('rejected_by')} at {approval.get('decided_at')}"
            return self._end(item, "REJECTED", reason, _history(plan, approval, "rejected"))
        try:
            redeemed = self.approvals.redeem(incident_id, digest, run_id)
            applying = self.store.transition(
                incident_id, "AWAITING_APPROVAL", "APPLYING", expected_updated_at=str(item["updated_at"])
            )
        except (ApprovalRefused, TransitionConflict) as refused:
            return f"refused: {refused}"
        return self._apply(applying, plan, Record(run_id, approval=redeemed))

    def _approval(self, item: Item, plan: Plan, digest: str) -> Item | None:
        """The decision on the plan; an automatic approval when every step's risk may apply without a
        person. Raises ApprovalRefused for an approval given by someone who is not an approver."""
        incident_id = str(item["incident_id"])
        approval = self.approvals.get(incident_id, digest)
        operations = [BY_CALL.get((s.call.service, s.call.operation)) for s in plan.steps]
        if None in operations:
            raise ApprovalRefused("the plan holds a call off the allowlist: nothing of it is applied")
        risks = {operation.risk for operation in operations if operation}  # the allowlist's, never the plan's
        # A fix that was proven not to help before waits for a person, whatever its risk.
        automatic = bool(self.auto_apply) and risks <= self.auto_apply and not plan.failed_before
        if approval is None and automatic:
            approval = self.approvals.decide(item, digest, AUTOMATIC, "APPROVED")
        if approval is None:
            return None
        decided_by = str(approval.get("approved_by") or approval.get("rejected_by"))
        if not (self.approver.identity(decided_by) or (decided_by == AUTOMATIC and automatic)):
            raise ApprovalRefused(f"{decided_by} is not an approver: the decision does not count")
        return approval

    def _apply(self, item: Item, plan: Plan, record: Record) -> str:
        incident_id = str(item["incident_id"])
        self._save(incident_id, record)

        def calling(step: int) -> None:
            record.calling = step
            self._save(incident_id, record)

        def applied(call: AppliedCall) -> None:
            record.calls.append({**call.__dict__, "call": call.call.model_dump(), "at": stamp(self._now())})
            self._save(incident_id, record)

        def in_place(step: int) -> None:
            record.in_place.append(step)
            self._save(incident_id, record)

        try:
            done = apply_steps(
                plan, read=self.read, write=self.write, applied=applied, calling=calling, in_place=in_place
            )
        except StepRefused as refused:
            return self._undo(item, plan, _records(record), record, f"not applied: {refused}", "not_applied")
        verifying = self.store.transition(
            incident_id, "APPLYING", "VERIFYING", expected_updated_at=str(item["updated_at"])
        )
        return self._verify(verifying, plan, done, record)

    def _verify(self, item: Item, plan: Plan, done: list[AppliedCall], record: Record) -> str:
        since = self._now()
        deadline = since + timedelta(seconds=plan.recovery.within_seconds)
        while True:
            try:
                verdict = self.verify(plan, since)
            except Exception as error:  # the check could not be made: not a verdict, tried again
                verdict = Verdict(None, f"the check failed: {type(error).__name__}: {error}")
            record.verification.append(f"{stamp(self._now())}: {verdict.why}")
            if verdict.recovered is not None or self._now() >= deadline:
                break
            self.sleep(self.poll_seconds)
        self._save(str(item["incident_id"]), record)
        if record.in_place:
            steps = ", ".join(str(step) for step in record.in_place)
            verdict = Verdict(verdict.recovered, f"{verdict.why} (step {steps} {IN_PLACE})")
        if verdict.recovered:
            outcome = _history(plan, record.approval, "held") | {RECOVERED_AT: stamp(self._now())}
            return self._end(item, "REMEDIATED", f"recovered: {verdict.why}", outcome)
        why = (
            verdict.why
            if verdict.recovered is False
            else f"no recovery within {deadline - since} ({verdict.why})"
        )
        return self._undo(item, plan, done, record, f"the fix did not help: {why}", "did_not_help")

    def _undo(
        self, item: Item, plan: Plan, done: list[AppliedCall], record: Record, why: str, verdict: FixVerdict
    ) -> str:
        record.undo = undo_steps(plan, done, read=self.read, write=self.write)
        self._save(str(item["incident_id"]), record)
        outcome = _history(plan, record.approval, verdict)
        if record.undo:
            return self._end(item, "UNDO_FAILED", f"{why}; the undo left: {'; '.join(record.undo)}", outcome)
        undone = f"{len(done)} applied step(s) undone, the world read back as before" if done else "nothing"
        return self._end(item, "NOT_REMEDIATED", f"{why}; {undone}", outcome)

    def _resume(self, item: Item, plan: Plan, run_id: str) -> str:
        """An APPLYING or VERIFYING incident: left alone while its run may be alive, else undone."""
        if self._now() - _instant(str(item["updated_at"])) < self.lease:
            return f"nothing to do: another run has had it {item['status']} since {item['updated_at']}"
        context = self.store.get_context(str(item["incident_id"])) or {}
        text = context.get(EXECUTION, {}).get("S")
        record = Record(**json.loads(text) | {"run": run_id}) if text else Record(run_id)
        done = _records(record)
        recorded = {call.step for call in done}
        if record.calling is not None and record.calling not in recorded:
            lost = interrupted(plan, record.calling, read=self.read)
            done += [lost] if lost else []
        return self._undo(
            item, plan, done, record, "the executor's run died before it finished", "not_verified"
        )

    def _changed(self, item: Item, why: str) -> str:
        """A plan that is not the one made (someone who can write incident-context changed it): nothing of
        it runs, whatever was approved, and people are told (NOT_REMEDIATED) rather than left waiting."""
        if item["status"] != "AWAITING_APPROVAL":
            return f"refused: {why}; nothing applied"
        return self._end(item, "NOT_REMEDIATED", f"refused: {why}; nothing applied")

    def _end(self, item: Item, status: str, reason: str, outcome: dict[str, object] | None = None) -> str:
        """Move the incident to ``status``, with what its history keeps (``outcome``), and notify."""
        incident_id, source, seen = str(item["incident_id"]), str(item["status"]), str(item["updated_at"])
        try:
            self.store.transition(
                incident_id, source, status, expected_updated_at=seen, reason=reason, headline=outcome
            )
        except TransitionConflict as conflict:
            return f"lost: {conflict}"
        notify_now(self.store, self.notifier, incident_id, "executor")  # a failed one the watchdog retries
        return f"{status}: {reason}"

    def _save(self, incident_id: str, record: Record) -> None:
        self.store.update_context(incident_id, {EXECUTION: record.as_json()})

    def _now(self) -> datetime:
        return self.store.clock()


def _history(plan: Plan, approval: dict[str, Any], verdict: FixVerdict) -> dict[str, object]:
    """What the incident's history keeps of its fix (``mcp_server.contract.history``): the plan's calls,
    what became of them and who decided on them."""
    calls = json.dumps([step.call.model_dump(mode="json") for step in plan.steps])
    outcome: dict[str, object] = {FIX: calls, FIX_VERDICT: verdict}
    decided_by = approval.get("approved_by") or approval.get("rejected_by")
    return outcome | ({RESOLVED_BY: str(decided_by)} if decided_by else {})


def _records(record: Record) -> list[AppliedCall]:
    """The calls a record holds, as the undo takes them."""
    return [
        AppliedCall(c["step"], ApiCall(**c["call"]), c.get("request_id"), c["before"], c["after"])
        for c in record.calls
    ]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
