"""Remediation follows the trigger: the change that started a failure is undone, whatever the fault.

A deployment is rolled back (an alias to the version it pointed at before); a setting CloudTrail records
(timeout, memory, handler) is put back to its earlier value. Environment variables are a sensitive field
CloudTrail never shows, so an environment change is undone by a step that names the variables and says
their earlier values are not recorded: a named gap, never an invented command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.findings import ChangeEvent, Pointer, Remedy
from supervisor.diagnosis.rules.triggers import change_events, previous_setting

DEPLOY_OPERATIONS = frozenset({"UpdateFunctionCode", "PublishVersion", "UpdateAlias", "CreateAlias"})
_RECORDED = {"timeout": "Timeout", "memorysize": "MemorySize", "handler": "Handler"}


@dataclass(frozen=True)
class Undo:
    """How to undo a change: the step, the pointers that justify it, and a gap when no command can."""

    remedy: Remedy
    pointers: list[Pointer]
    gap: str | None = None


def alias_rollback(c: Conversation) -> tuple[dict[str, Any], int, str] | None:
    """(alias, its index, the version it pointed at before) when a deployment moved an alias forward."""
    for event in change_events(c):
        if event.operation not in ("UpdateAlias", "CreateAlias"):
            continue
        summary = event.event.get("summary") or {}
        name = summary.get("name") or summary.get("Name")
        for index, alias in enumerate(c.config.get("Aliases", [])):
            if alias.get("Name") != name:
                continue
            versions = sorted(
                int(v["Version"]) for v in c.config.get("Versions", []) if str(v.get("Version")).isdigit()
            )
            current = str(alias.get("FunctionVersion"))
            older = [v for v in versions if current.isdigit() and v < int(current)]
            if older:
                return alias, index, str(older[-1])
    return None


def alias_pointer(alias: dict[str, Any], index: int, supports: str | None) -> Pointer:
    return Pointer(
        "get_lambda_config",
        f"Aliases.{index}.FunctionVersion",
        alias["FunctionVersion"],
        f"Alias {alias['Name']} now routes to version {alias['FunctionVersion']}",
        supports,
    )


def rollback(c: Conversation, change: ChangeEvent) -> Undo:
    found = alias_rollback(c)
    who = f"{change.event.get('identity_arn') or 'an unknown identity'} at {change.event['time']}"
    if found is None:
        remedy = Remedy(
            f"Redeploy the build of {c.name} that ran before {change.event['time']}",
            f"A deployment by {who} started the failures. No alias routes to an earlier published version, "
            "and the change history does not hold the earlier package: redeploy it from your build system.",
        )
        return Undo(
            remedy,
            [],
            f"the deployment at {change.event['time']} has no recorded version to go "
            "back to: the earlier package must come from the build system",
        )
    alias, index, previous = found
    remedy = Remedy(
        f"Point alias {alias['Name']} back to version {previous}",
        f"A deployment by {who} moved alias {alias['Name']} to version {alias['FunctionVersion']}; roll it "
        f"back to version {previous}, the version before it, then fix the new build.",
        command(
            c,
            "lambda",
            "UpdateAlias",
            {"FunctionName": c.name, "Name": alias["Name"], "FunctionVersion": previous},
        ),
        "low",
    )
    return Undo(remedy, [alias_pointer(alias, index, None)])


def _settings(c: Conversation, change: ChangeEvent, fields: set[str]) -> Undo | None:
    """Put the recorded settings the change set back to their earlier values, when the history shows them."""
    params: dict[str, Any] = {"FunctionName": c.name}
    pointers = []
    for field in sorted(fields & set(_RECORDED)):
        previous = previous_setting(c, field)
        if previous is None:
            return None
        params[_RECORDED[field]] = previous[0]
        pointers.append(previous[1])
    shown = ", ".join(f"{k} {v}" for k, v in params.items() if k != "FunctionName")
    remedy = Remedy(
        f"Put {shown} back on {c.name}",
        f"The change at {change.event['time']} set them; the change history shows these earlier values.",
        command(c, "lambda", "UpdateFunctionConfiguration", params),
        "low",
    )
    return Undo(remedy, pointers)


def environment_undo(c: Conversation, change: ChangeEvent) -> Undo:
    """An environment change: name the variables; their earlier values are not recorded anywhere we read."""
    names = ", ".join(c.config.get("EnvironmentVariableNames") or []) or "none"
    when = change.event["time"]
    remedy = Remedy(
        f"Restore the environment variables of {c.name} to their values before {when}",
        f"The environment was changed at {when} (variables set now: {names}). CloudTrail never records "
        "environment values, so the earlier values must come from your deployment configuration; "
        "update-function-configuration replaces the whole environment, so give every variable.",
    )
    gap = (
        f"the environment values before the change at {when} are not recorded (CloudTrail hides them; "
        f"variables set now: {names}): no command can restore them"
    )
    return Undo(remedy, [], gap)


def undo(c: Conversation, change: ChangeEvent) -> Undo | None:
    """How to undo the trigger, when it is a deployment or a function setting; None when the finding's own
    remedy is the one to follow (an IAM or network change, a concurrency setting, a function's creation)."""
    if change.operation in DEPLOY_OPERATIONS:
        return rollback(c, change)
    if change.operation != "UpdateFunctionConfiguration":
        return None
    if "environment" in change.changed_fields:
        return environment_undo(c, change)
    return _settings(c, change, change.changed_fields)
