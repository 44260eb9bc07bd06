"""Permission loss: the execution role does not allow what the function does (by action and resource).

A denial is read only from the terminal error of a failed invocation; it counts when the IAM evaluation of
the role agrees (no statement allows the action on that resource, a Deny covers it, the boundary excludes
it), or, when the message does not name the resource and the role allows the action only on some
resources, when the change history shows the role's policies changed before the first failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from supervisor.diagnosis.iam_policy import Evaluation, Match, StatementRef, evaluate_role
from supervisor.diagnosis.rules import async_faults, event_faults, queue_faults
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Rejection, Remedy, Verdict
from supervisor.diagnosis.rules.grants import (
    denials,
    function_change,
    is_role_change,
    role_change,
    role_changes,
)

_IAM = "get_iam_state"
LOG_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
_DENYING = ("denied", "implicit_deny", "boundary_excludes")


def _written(value: str | tuple[str, ...] | None) -> Any:
    return list(value) if isinstance(value, tuple) else value


def statement_pointers(refs: Sequence[StatementRef], what: str, supports: str | None) -> list[Pointer]:
    pointers = []
    for ref in refs[:3]:
        key = "Resource" if ref.resource is not None else "NotResource" if ref.not_resource else "Action"
        value = _written(getattr(ref, key.lower() if key != "NotResource" else "not_resource"))
        if value is None:
            key, value = "Effect", ref.effect
        pointers.append(Pointer(_IAM, f"{ref.path}.{key}", value, what, supports))
    return pointers


def _evaluation_pointers(evaluation: Evaluation, iam: dict[str, Any]) -> list[Pointer]:
    """What shows the role does not allow the call: the deny or boundary statements, else the statements
    that allow the action elsewhere, else the policies that have nothing for it."""
    shown = evaluation.action.removeprefix("*:")
    if evaluation.deciding:
        refs = [m.statement for m in evaluation.deciding]
        if evaluation.decision != "conditional":
            return statement_pointers(refs, f"Decides against {shown}", "permission_loss")
        refusing = {_kind(r) for r in refs} & {
            "deny",
            "boundary",
        }  # where they decide, an Allow refuses nothing
        return [
            pointer
            for kind, what in _KINDS
            for pointer in statement_pointers(
                [r for r in refs if _kind(r) == kind],
                what.format(shown),
                "permission_loss" if kind in refusing or not refusing else None,
            )
        ]
    if evaluation.near_misses:
        return statement_pointers(
            evaluation.near_misses,
            f"Allows {shown} only on this resource, not on the one the function uses",
            "permission_loss",
        )
    pointers = [Pointer(_IAM, "role_name", iam.get("role_name"), "The function's execution role", None)]
    if not iam.get("inline_policies"):
        pointers.append(
            Pointer(_IAM, "inline_policies", {}, "The role has no inline policy", "permission_loss")
        )
    if not iam.get("attached_policies"):
        pointers.append(
            Pointer(_IAM, "attached_policies", [], "The role has no attached policy", "permission_loss")
        )
    for name, document in (iam.get("inline_policies") or {}).items():
        pointers.append(
            Pointer(
                _IAM,
                f"inline_policies.{name}.Statement",
                document.get("Statement", []),
                f"Nothing in {name} allows {shown}",
                "permission_loss",
            )
        )
    return pointers[:4]


# How a statement that decides a call on a resource the denial does not name is described, by its kind.
_KINDS = (
    ("deny", "Denies {} on the resources it names"),
    ("boundary", "The permissions boundary allows {} only on the resources it names"),
    ("allow", "Allows {} only on the resources it names"),
)


def _kind(ref: StatementRef) -> str:
    if ref.effect == "Deny":
        return "deny"
    return "boundary" if ref.path.startswith("permissions_boundary") else "allow"


def scoped_elsewhere(evaluation: Evaluation) -> bool:
    """The resource is not known and only resource-scoped, unconditional statements might allow it."""
    return (
        evaluation.decision == "conditional"
        and evaluation.resource is None
        and bool(evaluation.deciding)
        and all(
            m.statement.resource is not None and not m.statement.has_condition for m in evaluation.deciding
        )
    )


def _log_writes(c: Conversation) -> tuple[list[Evaluation], str] | None:
    group = c.logs.get("log_group") or c.metrics.get("log_group")
    if not group or not c.region or not c.account:
        return None
    arn = f"arn:aws:logs:{c.region}:{c.account}:log-group:{group}"
    evaluations = [
        evaluate_role(c.iam, "logs:CreateLogStream", f"{arn}:*"),
        evaluate_role(c.iam, "logs:PutLogEvents", f"{arn}:log-stream:*"),
    ]
    return evaluations, group


def _once_allowed(c: Conversation, evaluation: Evaluation) -> bool:
    """Whether the role had the action before: an Allow for it on another resource now, or a policy
    document in the change history that allowed it. A denial of an action the role never had is no
    permission *loss*: a line anyone could have written, or code calling what it never could."""
    if evaluation.decision != "implicit_deny" or evaluation.near_misses:
        return True
    for event in role_changes(c):
        _, document = event.setting("policyDocument") or (None, None)
        if isinstance(document, str):
            try:
                document = json.loads(document)
            except ValueError:
                continue
        if isinstance(document, dict):
            earlier = {"role_name": "earlier", "inline_policies": {"earlier": document}}
            if evaluate_role(earlier, evaluation.action, evaluation.resource).decision != "implicit_deny":
                return True
    return False


@dataclass
class _Reading:
    """What the role's denials and its log writes show, gathered as they are read."""

    c: Conversation
    iam: dict[str, Any]
    role: str
    pointers: list[Pointer] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    allowed: list[Match] = field(default_factory=list)
    undetermined: bool = False  # a denial neither the evaluation nor the change history settles
    denying: list[StatementRef] = field(default_factory=list)  # Deny statements that decided a denial

    def read_denials(self) -> None:
        for failure, evaluation in denials(self.c):
            shown = evaluation.action.removeprefix("*:")
            where = f" on {evaluation.resource}" if evaluation.resource else ""
            if function_change(self.c, failure) is not None and (
                evaluation.decision == "implicit_deny" or scoped_elsewhere(evaluation)
            ):
                continue  # the role did not change: the function did (a configuration error)
            if evaluation.decision in _DENYING and not _once_allowed(self.c, evaluation):
                continue  # never granted, so not lost
            if evaluation.decision in _DENYING:
                self.denying += [m.statement for m in evaluation.deciding if _kind(m.statement) == "deny"]
                self.pointers += [
                    failure.pointer(f"An invocation failed: {shown} was denied", "permission_loss"),
                    *_evaluation_pointers(evaluation, self.iam),
                ]
                self.causes.append(f"{self.role} does not allow {shown}{where} ({evaluation.reason})")
            elif scoped_elsewhere(evaluation) and role_change(self.c, failure) is not None:
                self.pointers += [
                    failure.pointer(f"An invocation failed: {shown} was denied", "permission_loss"),
                    *_evaluation_pointers(evaluation, self.iam),
                ]
                self.causes.append(self._scoped_cause(evaluation, shown))
            elif evaluation.allowed:
                self.allowed += list(evaluation.deciding)
            else:
                self.undetermined = True

    def _scoped_cause(self, evaluation: Evaluation, shown: str) -> str:
        """Why a call on a resource the denial does not name failed: a Deny that covers the action (its
        policy is then the one to remove), else allows scoped to other resources."""
        denies = [m.statement for m in evaluation.deciding if _kind(m.statement) == "deny"]
        if denies:
            self.denying += denies
            scopes = ", ".join(str(_written(ref.resource)) for ref in denies[:2])
            return f"{shown} is denied; a Deny statement of {self.role} covers it on {scopes}"
        scopes = ", ".join(str(_written(m.statement.resource)) for m in evaluation.deciding[:2])
        return f"{shown} is denied; {self.role} allows it only on {scopes}, and its policies were changed"

    def read_log_writes(self) -> None:
        logs = _log_writes(self.c)
        if logs is None:
            return
        evaluations, group = logs
        lacking = [e for e in evaluations if e.decision in _DENYING]
        if not lacking:
            self.allowed += [m for e in evaluations for m in e.deciding]
            return
        for evaluation in lacking:
            self.pointers += _evaluation_pointers(evaluation, self.iam)
        if self.c.logs.get("note"):
            self.pointers.append(
                Pointer("get_recent_logs", "note", self.c.logs["note"], "Consistent: no logs arrive", None)
            )
        actions = ", ".join(e.action for e in lacking)
        self.causes.append(
            f"{self.role} does not allow {actions} on {group}, so the function cannot write its logs"
        )


def check(c: Conversation) -> Verdict:
    found = _role(c)
    if isinstance(found, Finding):
        return found
    undo = lambda refs: _remedy(c, str(c.iam.get("role_name")), _policies_of(c.iam, refs))  # noqa: E731
    on_paths = queue_faults.receive_denied(c, undo) or event_faults.refused_caller(c)
    return on_paths or async_faults.dead_letter_denied(c) or found


def _role(c: Conversation) -> Verdict:
    iam = c.iam
    if not iam:
        return None
    reading = _Reading(c, iam, iam.get("role_name", "the execution role"))
    reading.read_denials()
    reading.read_log_writes()
    if reading.causes:
        remedy, restore = _remedy(c, reading.role, _policies_of(iam, reading.denying))
        return Finding(
            "permission_loss",
            "The execution role lost a permission the function needs: " + "; ".join(reading.causes) + ".",
            "high",
            [*reading.pointers, *restore],
            remedy,
            relevant_change=is_role_change,
            first_failure=first_failure(c),
            last_failure=last_failure(c),
        )
    if not reading.allowed or reading.undetermined:
        return None
    refs = list({m.statement.path: m.statement for m in reading.allowed}.values())
    return Rejection(
        "permission_loss",
        f"{reading.role} allows what was checked: its log writes, "
        "and every call a failed invocation was denied",
        statement_pointers(refs, "Allows the call", None),
    )


def _policy_restore(c: Conversation, role: str, change: ChangeEvent) -> tuple[Remedy, list[Pointer]] | None:
    """When an inline policy was rewritten or deleted: the document an older PutRolePolicy wrote for it, if
    that Put is the policy's latest change before this one (after a DeleteRolePolicy it had none)."""
    name = (change.event.get("summary") or {}).get("policyName")
    earlier = [
        event
        for event in role_changes(c)  # the newest first
        if event.time < change.time
        and event.operation in ("PutRolePolicy", "DeleteRolePolicy")
        and (event.event.get("summary") or {}).get("policyName") == name
        and (event.event.get("summary") or {}).get("roleName") == role
    ]
    for event in earlier[:1]:
        document = (event.event.get("summary") or {}).get("policyDocument")
        if event.operation == "PutRolePolicy" and isinstance(document, dict):
            text = json.dumps(document, separators=(",", ":"))
            remedy = Remedy(
                f"Put back the inline policy {name} of {role} as it was",
                f"{change.operation} by {change.event.get('identity_arn')} at {change.event['time']} changed "
                f"it; the document it had was written at {event.event['time']}.",
                command(
                    c, "iam", "PutRolePolicy", {"RoleName": role, "PolicyName": name, "PolicyDocument": text}
                ),
            )
            pointer = Pointer(
                "get_recent_changes",
                f"events.{event.index}.summary.policyDocument",
                document,
                f"The document {name} had before",
                None,
            )
            return remedy, [pointer]
    return None


def _policies_of(iam: dict[str, Any], refs: Sequence[StatementRef]) -> set[str]:
    """The policies the statements belong to: attached ones by ARN, inline ones by name."""
    found = set()
    for ref in refs:
        parts = ref.path.split(".")
        if parts[0] == "attached_policies" and parts[1].isdigit():
            attached = iam.get("attached_policies") or []
            if int(parts[1]) < len(attached):
                found.add(str(attached[int(parts[1])].get("policy_arn")))
        elif parts[0] == "inline_policies":
            found.add(ref.path.removeprefix("inline_policies.").rsplit(".Statement", 1)[0])
    return found


def _removal(c: Conversation, role: str, change: ChangeEvent, denying: set[str]) -> Remedy | None:
    """When the change added the policy whose Deny decides the denial (attached it, or put an inline policy
    that had no earlier document): take that policy away again."""
    summary = change.event.get("summary") or {}
    who = f"{change.event.get('identity_arn')} at {change.event['time']}"
    arn, name = summary.get("policyArn"), summary.get("policyName")
    if change.operation == "AttachRolePolicy" and arn in denying:
        return Remedy(
            f"Detach {arn} from {role}",
            f"Its Deny covers what the function calls; {who} attached it.",
            command(c, "iam", "DetachRolePolicy", {"RoleName": role, "PolicyArn": arn}),
        )
    if change.operation == "PutRolePolicy" and name in denying:
        return Remedy(
            f"Delete the inline policy {name} of {role}",
            f"Its Deny covers what the function calls; {who} put it.",
            command(c, "iam", "DeleteRolePolicy", {"RoleName": role, "PolicyName": name}),
        )
    return None


def _remedy(c: Conversation, role: str, denying: set[str]) -> tuple[Remedy, list[Pointer]]:
    """Take away the policy whose Deny decides the denial, or put back what the change history shows was
    taken away, when it shows it."""
    for change in role_changes(c):  # the newest first
        summary = change.event.get("summary") or {}
        if change.operation in ("PutRolePolicy", "DeleteRolePolicy"):
            restored = _policy_restore(c, role, change)  # a rewritten policy: its earlier document
            if restored is not None:
                return restored
        removal = _removal(c, role, change, denying)  # a policy added with a Deny: take it away
        if removal is not None:
            return removal, []
        if change.operation == "DetachRolePolicy" and summary.get("policyArn"):
            remedy = Remedy(
                f"Attach {summary['policyArn']} to {role} again",
                f"It was detached by {change.event.get('identity_arn')} at {change.event['time']}.",
                command(c, "iam", "AttachRolePolicy", {"RoleName": role, "PolicyArn": summary["policyArn"]}),
            )
            return remedy, []
        break
    remedy = Remedy(
        f"Grant the denied actions to {role} on the resources the function uses",
        "Add the missing actions, scoped to the function's resources, to the role's policy (or remove the "
        "Deny or boundary that excludes them); the change history does not show the policy as it was.",
    )
    return remedy, []
