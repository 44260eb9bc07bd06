"""Blocks derived from the code itself: what ``python -m docgen show <what>`` prints.

Each function reads the code's own definitions (a settings class, the tool contract, the corroboration
policy, the IAM action lists, an argparse parser) and returns Markdown; nothing here is written by hand
except the sentence that frames it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from pydantic import AliasChoices, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from docgen.entry_points import console_scripts, parser_of, script_main
from docgen.pages import ROOT

# One pydantic-settings class per component (the test checks that every class in the code is here).
SETTINGS: Mapping[str, str] = {
    "mcp-server": "mcp_server.settings:ServerSettings",
    "supervisor": "supervisor.settings:SupervisorSettings",
    "watchdog": "watchdog.settings:WatchdogSettings",
    "chaos": "chaos.cli:ChaosSettings",
    "drill": "chaos.drill.settings:DrillSettings",
    "sandbox-runtime": "chaos.workload.runtime:RuntimeSettings",
    "eval": "evals.settings:EvalSettings",
    "console": "console.settings:ConsoleSettings",
    "executor": "executor.settings:ExecutorSettings",
}

# The caller's settings of this project, which must not leak into a rendered default.
PROJECT_VARIABLES = (
    "AWS_",
    "MCP_",
    "SUPERVISOR_",
    "WATCHDOG_",
    "CHAOS_",
    "DRILL_",
    "EVAL_",
    "SANDBOX_",
    "CONSOLE_",
    "EXECUTOR_",
    "REMEDIATION_",
)


@contextmanager
def clean_environment() -> Iterator[None]:
    """Defaults as a fresh shell sees them, whatever the caller has exported."""
    with mock.patch.dict(os.environ):
        for name in [name for name in os.environ if name.startswith(PROJECT_VARIABLES)]:
            del os.environ[name]
        yield


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += [
        "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows
    ]
    return "\n".join(lines)


def code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _load(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, Path):
        path = value.resolve() if value.is_absolute() else value
        try:
            return code(str(path.relative_to(ROOT)) + "/")
        except ValueError:
            return code(str(value))
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, float):
        return code(f"{value:g}")
    if isinstance(value, str):
        return code(value) if value else "empty"
    if isinstance(value, Mapping | list):
        return code(json.dumps(value))
    return code(str(value))


def _bounds(info: FieldInfo) -> str:
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "length ≥", "max_length": "length ≤"}
    parts = [
        f"{word} {getattr(item, attribute):g}"
        for item in info.metadata
        for attribute, word in words.items()
        if isinstance(getattr(item, attribute, None), int | float)
    ]
    return ", ".join(parts)


def env_name(settings: type[BaseSettings], name: str, info: FieldInfo) -> str:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        return str(first).upper()
    if isinstance(alias, str):
        return alias.upper()
    return (str(settings.model_config.get("env_prefix", "")) + name).upper()


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None if info.default is PydanticUndefined else info.default


def settings_table(component: str) -> str:
    """Every variable a component reads: name, default, allowed values, meaning."""
    settings: type[BaseSettings] = _load(SETTINGS[component])
    rows = [
        [code(env_name(settings, name, info)), _value(_default(info)), _bounds(info), info.description or ""]
        for name, info in settings.model_fields.items()
    ]
    source = SETTINGS[component].replace(":", ".")
    return f"`{source}`:\n\n" + table(["variable", "default", "allowed", "meaning"], rows)


def _tool_argument(name: str, info: FieldInfo) -> str:
    bounds = _bounds(info)
    text = f"`{name}`" if info.is_required() else f"`{name}={_default(info)!r}`"
    return text + (f" ({bounds})" if bounds else "")


def tools_table() -> str:
    """The published tools: arguments beyond the common target, and the description every host sees."""
    from mcp_server.contract.common import SourceArguments, TargetArguments
    from mcp_server.contract.registry import SERVED_TOOLS

    common = TargetArguments.model_fields
    lines = ["Every tool takes " + ", ".join(f"`{name}`" for name in common) + ":", ""]
    lines += [
        f"- `{name}`{' (required)' if info.is_required() else ''}: {info.description}"
        for name, info in common.items()
    ]
    source = SourceArguments.model_fields["source"]
    sources = ", ".join(f"`{tool.name}`" for tool in SERVED_TOOLS.values() if not tool.about_function)
    if sources:
        lines += [
            "",
            f"except {sources}, which takes `source` (required) instead of `lambda_name`: "
            f"{source.description}",
        ]
    rows = []
    for tool in SERVED_TOOLS.values():
        fields = tool.arguments.model_fields
        extra = [
            _tool_argument(name, info)
            for name, info in fields.items()
            if name not in common and name != "source"
        ]
        rows.append([f"`{tool.name}`", ", ".join(extra) or "none", tool.description])
    return "\n".join(lines) + "\n\n" + table(["tool", "other arguments", "description (as published)"], rows)


def fault_classes_table() -> str:
    """The fault classes as declared: what each is, and where the rules brain checks it."""
    from supervisor.faults.registry import BY_PRECEDENCE, FAULT_CLASSES, UNKNOWN, UNKNOWN_DESCRIPTION

    checked = {fault.name: position for position, fault in enumerate(BY_PRECEDENCE, start=1)}
    rows = [
        [
            f"`{name}`",
            fault.description,
            str(checked[name])
            + (f", not once {', '.join(f'`{u}`' for u in fault.unless)} is found" if fault.unless else ""),
            f"`{fault.check.partition(':')[0].rpartition('.')[2]}`",
        ]
        for name, fault in FAULT_CLASSES.items()
    ]
    rows.append([f"`{UNKNOWN}`", UNKNOWN_DESCRIPTION, "-", "-"])
    return table(
        ["fault type", "what it is (as the model is told)", "checked by `rules`", "check module"], rows
    )


def corroboration_table() -> str:
    """Which verified pointers support each fault type (all groups needed; any source of a group)."""
    from supervisor.diagnosis.corroboration import POLICY

    rows = []
    for fault, groups in POLICY.items():
        needs = " **and** ".join(" or ".join(source.what for source in group) for group in groups)
        rows.append([f"`{fault}`", needs])
    return table(["fault type", "supported only by a verified pointer from"], rows)


# Why an action is needed only sometimes, keyed by the group it belongs to in mcp_server/permissions.py.
_CONDITIONAL_ACTIONS = {
    "STARTUP_OPERATIONS": "only at startup, when `MCP_API_KEY` is not set",
    "ASSUME_OPERATIONS": "only when `MCP_ACCOUNTS` is set, and only on the roles it names",
}


def iam_permissions() -> str:
    """The MCP server identity's IAM actions, one per line."""
    from mcp_server import permissions

    notes = {
        action: note
        for group, note in _CONDITIONAL_ACTIONS.items()
        for action in permissions.iam_actions(getattr(permissions, group))
    }
    return "\n".join(
        f"- `{action}`" + (f" ({notes[action]})" if action in notes else "")
        for action in permissions.required_iam_actions()
    )


def allowlist_table() -> str:
    """The remediation allowlist: every AWS call a plan may make, its risk, and what it puts back."""
    from supervisor.remediation.operations import OPERATIONS

    rows = [[code(op.action), op.risk, "fix" if op.fix else "undo only", op.fixes] for op in OPERATIONS]
    return table(["call", "risk", "as", "what it does"], rows)


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return code(str(action.metavar or action.dest.upper()))
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return code(names)
    if action.choices is not None:
        return code(f"{names} {'|'.join(str(choice) for choice in action.choices)}")
    return code(f"{names} {action.metavar or action.dest.upper()}")


def _parser_rows(parser: argparse.ArgumentParser, path: str) -> Iterator[list[str]]:
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue  # hidden options (a lane's own) are not the user's
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parser_rows(child, f"{path} {name}")
            continue
        shown = action.default not in (None, False, argparse.SUPPRESS, [])
        default = _value(action.default) if shown else ""
        yield [code(path), _option(action), default, (action.help or "").replace("%%", "%")]


def flags_table(script: str) -> str:
    """A console script's options, as its argparse parser defines them."""
    parser = parser_of(script_main(script))
    return table(["command", "option", "default", "meaning"], list(_parser_rows(parser, script)))


def scripts_table() -> str:
    """The console scripts of pyproject.toml and what each says it does."""
    rows = []
    for name, reference in console_scripts().items():
        description = (parser_of(script_main(name)).description or "").split("\n\n")[0]
        rows.append([code(name), code(reference), " ".join(description.split())])
    return table(["command", "entry point", "what it does"], rows)


SHOW: Mapping[str, Callable[..., str]] = {
    "settings": settings_table,
    "tools": tools_table,
    "fault-classes": fault_classes_table,
    "corroboration": corroboration_table,
    "iam-permissions": iam_permissions,
    "allowlist": allowlist_table,
    "flags": flags_table,
    "scripts": scripts_table,
}


def show(what: str, *args: str) -> str:
    if what not in SHOW:
        raise KeyError(f"nothing called {what!r} to show; choose from {', '.join(SHOW)}")
    with clean_environment():
        return portable(SHOW[what](*args))


def portable(text: str) -> str:
    """Paths inside this checkout written relative to it, so a block reads the same in every checkout."""
    return text.replace(f"{ROOT}/", "").replace(str(ROOT), ".")
