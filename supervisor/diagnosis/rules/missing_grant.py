"""A configuration error of the role: it never granted what the function calls since the function changed.

The function was created with a role that lacks the call, or a deployment or an environment change points
its code at something the role does not grant, while the role itself did not change: the statement to add
is named (or, after a deployment or an environment change, the change to undo).
"""

from __future__ import annotations

import json
import re

from supervisor.diagnosis.iam_policy import Evaluation
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import (
    Failure,
    alike,
    failures,
    first_failure,
    last_failure,
    newest_failure,
)
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Remedy
from supervisor.diagnosis.rules.grants import denials, function_change
from supervisor.diagnosis.rules.permissions import scoped_elsewhere, statement_pointers
from supervisor.diagnosis.rules.trigger_remedy import environment_undo, rollback

_S3_OBJECT = re.compile(r"^(arn:aws[\w-]*:s3:::[^/]+)/.+$")
_SINCE = {
    "CreateFunction": "since it was created",
    "UpdateFunctionConfiguration": "since its environment was changed",
}


def _statement(evaluation: Evaluation) -> dict[str, str] | None:
    """The Allow statement the role lacks (an S3 object's grant on its bucket's objects)."""
    if evaluation.resource is None:
        return None
    resource = _S3_OBJECT.sub(r"\1/*", evaluation.resource)
    return {"Effect": "Allow", "Action": evaluation.action, "Resource": resource}


def _grant(c: Conversation, role: str, evaluation: Evaluation) -> Remedy:
    statement = _statement(evaluation)
    if statement is None:
        operation = evaluation.action.removeprefix("*:")
        return Remedy(
            f"Grant {operation} to {role} on the resource the function calls",
            f"Add an Allow of {operation} (in the service the code calls) on the resource it reads to "
            f"{role}'s policy; the error names neither, so the statement cannot be written from the "
            "evidence.",
        )
    name = f"allow-{evaluation.action.replace(':', '-')}"
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]}, separators=(",", ":"))
    return Remedy(
        f"Add the missing statement to {role}",
        f"Put an inline policy {name} on {role} that allows {statement['Action']} on "
        f"{statement['Resource']}: the role has never granted it.",
        command(
            c, "iam", "PutRolePolicy", {"RoleName": role, "PolicyName": name, "PolicyDocument": document}
        ),
    )


def _remedy(
    c: Conversation, role: str, evaluation: Evaluation, change: ChangeEvent
) -> tuple[Remedy, list[Pointer], str | None]:
    """Undo the function's change (a deployment rolled back, an environment restored); after its creation,
    add the statement, or say why it cannot be written."""
    if change.operation != "CreateFunction":
        undo = (
            environment_undo(c, change)
            if change.operation == "UpdateFunctionConfiguration"
            else rollback(c, change)
        )
        return undo.remedy, undo.pointers, undo.gap
    remedy = _grant(c, role, evaluation)
    if remedy.command is not None:
        return remedy, [], None
    operation = evaluation.action.removeprefix("*:")
    gap = (
        f"the denial of {operation} names neither its service nor its resource: the statement the role "
        "lacks cannot be written from the evidence"
    )
    return remedy, [], gap


def finding(c: Conversation) -> Finding | None:
    """The configuration error a denied call since a change to the function shows, if any."""
    iam, failed = c.iam, failures(c)
    if not iam or not failed:
        return None
    last = newest_failure(c)  # a denial older than the newest failed invocation is not what fails now
    newest = last.denial() if last is not None else None
    for failure, evaluation in denials(c):
        unscoped = evaluation.decision == "implicit_deny" or scoped_elsewhere(evaluation)
        if newest is None or newest.action != evaluation.action or not unscoped:
            continue
        change = function_change(c, failure)
        if change is not None:
            return _finding(c, failure, evaluation, change, str(iam.get("role_name") or c.role))
    return None


def _finding(
    c: Conversation, failure: Failure, evaluation: Evaluation, change: ChangeEvent, role: str
) -> Finding:
    shown = evaluation.action if evaluation.service_known else evaluation.action.removeprefix("*:")
    where = f" on {evaluation.resource}" if evaluation.resource else ""
    since = _SINCE.get(change.operation, "since new code was deployed")
    statement = _statement(evaluation)
    missing = f" The missing statement: {json.dumps(statement)}." if statement else ""
    allowed = statement_pointers(
        evaluation.near_misses, f"Allows {shown} only on this resource, not on the one called", None
    )
    remedy, restore, gap = _remedy(c, role, evaluation, change)
    pointers = [
        failure.pointer(f"An invocation failed: {shown} was denied", "configuration_error"),
        Pointer("get_iam_state", "role_name", role, f"{role} does not allow {shown}{where}", None),
        *allowed,
        *restore,
    ]
    names = c.config.get("EnvironmentVariableNames")
    if change.operation == "UpdateFunctionConfiguration" and names:
        pointers.append(
            Pointer(
                "get_lambda_config",
                "EnvironmentVariableNames",
                names,
                "The variables the code reads its targets from",
                "configuration_error",
            )
        )
    return Finding(
        "configuration_error",
        f"{c.name} calls {shown}{where}, which its role {role} does not grant, and has failed {since}; "
        f"the role did not change.{missing}",
        "high",
        pointers,
        remedy,
        relevant_change=lambda e: e.index == change.index,
        first_failure=first_failure(c, requests=alike(c, failure)),
        last_failure=last_failure(c, requests=alike(c, failure)),
        resources=(role,),
        gaps=(Gap("remediation", gap),) if gap else (),
    )
