"""Whether a remediation command acts on the incident's own resources: the failing function itself, or a
resource the run's answers about it name (its role and policies, its security groups, its queues, ...).

A command's targets are the parameters that name a resource (``FunctionName``, ``RoleName``, ``UUID``
and every name that ends in ``Arn``, ``Url`` or ``Id``; an inline policy's name is a part of its role,
which a fix may add). ``FunctionName`` must
be the incident's function (by name, ARN or ``name:qualifier``); the others must appear whole (a value, or a
part of one on token boundaries, as a topic's ARN in its subscription's) in an answer of the run other than
the logs (log text is whatever the function printed, so a resource named only there is one anyone could
have planted), nor a label of ``get_recent_changes``'s ``searched`` for a resource only the errors name. A
KMS key ARN is also the incident's when a trusted answer names its key id (CloudTrail records a key by the
id or the ARN its caller gave).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from mcp_server.contract.changes import NAMED_BY_ERRORS
from supervisor.diagnosis.cli_commands import ParsedCommand
from supervisor.diagnosis.paths import quoted_span

_NAMED: Final = frozenset({"RoleName", "UUID"})
_SUFFIXES: Final = ("Arn", "Url", "Id")
_UNWRITTEN: Final = frozenset({"get_recent_logs"})
_FUNCTION_ARN: Final = re.compile(r"arn:aws[\w-]*:lambda:[\w-]+:\d{12}:function:([\w-]+)(:[\w$-]+)?")
_KEY_ARN: Final = re.compile(r"arn:aws[\w-]*:kms:[\w-]+:\d{12}:key/([\w-]+)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if not value.endswith(NAMED_BY_ERRORS):
            yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _function_named(value: str) -> str:
    """The function a ``FunctionName`` value names: a name, ``name:qualifier``, or a (partial) ARN."""
    arn = _FUNCTION_ARN.fullmatch(value)
    if arn:
        return arn[1]
    if value.startswith(("function:", "arn:")) or value.count(":") >= 2:
        return value.rsplit("function:", 1)[-1].split(":", 1)[0]
    return value.split(":", 1)[0]


def targets(command: ParsedCommand) -> dict[str, str]:
    """The command's parameters that name a resource, by member name."""
    return {
        name: value
        for name, value in command.params.items()
        if isinstance(value, str) and (name in _NAMED or name == "FunctionName" or name.endswith(_SUFFIXES))
    }


def target_problem(command: ParsedCommand, function: str, responses: Mapping[str, Sequence[Any]]) -> str:
    """'' when every target of ``command`` is the incident's ``function`` or a resource the run's answers
    (other than the logs) name; else which one is not."""
    known: set[str] | None = None
    for name, value in targets(command).items():
        if name == "FunctionName":
            if _function_named(value) != _function_named(function):
                return f"--function-name {value} is not the failing function {function}: fix only its own"
            continue
        if known is None:
            known = {
                text
                for tool, answers in responses.items()
                if tool not in _UNWRITTEN
                for answer in answers
                for text in _strings(answer)
            }
        key = _KEY_ARN.fullmatch(value)
        names = (value, key[1]) if key else (value,)
        if not any(name in known or any(quoted_span(name, text) for text in known) for name in names):
            return (
                f"{name} {value} is named by no tool answer about {function} (the logs aside): a command may "
                "act only on the function and the resources the tools showed it uses"
            )
    return ""
