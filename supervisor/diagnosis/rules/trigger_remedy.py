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


@dataclass(frozen=True)
class AliasMove:
    """An alias a deployment moved, and the version it pointed at just before (with the earlier alias event
    that shows it, when the history holds one)."""

    alias: dict[str, Any]
    index: int  # in the configuration's Aliases
    previous: str
    shown_by: Pointer | None


_ALIAS_CALLS = ("UpdateAlias", "CreateAlias")


def _alias_name(event: ChangeEvent) -> Any:
    summary = event.event.get("summary") or {}
    return summary.get("name") or summary.get("Name")


def _alias_version(event: ChangeEvent) -> tuple[str, Any] | None:
    """(the summary's key, the version as recorded) an alias call pointed the alias at."""
    summary = event.event.get("summary") or {}
    for key in ("functionVersion", "FunctionVersion"):
        if summary.get(key) is not None:
            return key, summary[key]
    return None


def alias_rollback(c: Conversation, change: ChangeEvent | None = None) -> AliasMove | None:
    """The alias ``change`` (by default the newest alias call) moved and the version it held just before:
    the one the alias call before it set, as the change history shows it. When the history does not reach
    that far back, only a deployment forward (to the newest published version) has a known predecessor: the
    newest version before it. Never a version the history does not show the alias held."""
    moves = [e for e in change_events(c) if e.operation in _ALIAS_CALLS]
    moved = change if change is not None and change.operation in _ALIAS_CALLS else next(iter(moves), None)
    if moved is None:
        return None
    found = [(i, a) for i, a in enumerate(c.config.get("Aliases", [])) if a.get("Name") == _alias_name(moved)]
    if not found:
        return None
    index, alias = found[0]
    earlier = [e for e in moves if _alias_name(e) == _alias_name(moved) and e.time < moved.time]
    before = max(earlier, key=lambda e: e.time, default=None)
    shown = _alias_version(before) if before is not None else None
    if before is not None and shown is not None:
        key, version = shown
        if str(version) == str(alias.get("FunctionVersion")):
            return None
        pointer = Pointer(
            "get_recent_changes",
            f"events.{before.index}.summary.{key}",
            version,
            f"Alias {alias['Name']} pointed at version {version} before",
            None,
        )
        return AliasMove(alias, index, str(version), pointer)
    listed = [str(v.get("Version")) for v in c.config.get("Versions", [])]
    versions = sorted(int(v) for v in listed if v.isdigit())
    current = str(alias.get("FunctionVersion"))
    if not current.isdigit() or not versions or int(current) != versions[-1] or len(versions) < 2:
        return None
    return AliasMove(alias, index, str(versions[-2]), None)


def alias_pointer(alias: dict[str, Any], index: int, supports: str | None) -> Pointer:
    return Pointer(
        "get_lambda_config",
        f"Aliases.{index}.FunctionVersion",
        alias["FunctionVersion"],
        f"Alias {alias['Name']} now routes to version {alias['FunctionVersion']}",
        supports,
    )


def rollback(c: Conversation, change: ChangeEvent) -> Undo:
    found = alias_rollback(c, change)
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
    alias, previous = found.alias, found.previous
    remedy = Remedy(
        f"Point alias {alias['Name']} back to version {previous}",
        f"A deployment by {who} moved alias {alias['Name']} to version {alias['FunctionVersion']}; roll it "
        f"back to version {previous}, the version it pointed at before, then fix the new build.",
        command(
            c,
            "lambda",
            "UpdateAlias",
            {"FunctionName": c.name, "Name": alias["Name"], "FunctionVersion": previous},
        ),
        "low",
    )
    shown = [found.shown_by] if found.shown_by else []
    return Undo(remedy, [alias_pointer(alias, found.index, None), *shown])


def _settings(c: Conversation, change: ChangeEvent, fields: set[str]) -> Undo | None:
    """Put the recorded settings the change set back to their earlier values, when the history shows them;
    None when it set none of them (the finding's own remedy stands: a command naming only the function
    would change nothing)."""
    recorded = fields & set(_RECORDED)
    if not recorded:
        return None
    params: dict[str, Any] = {"FunctionName": c.name}
    pointers = []
    for field in sorted(recorded):
        previous = previous_setting(c, field, change)
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
