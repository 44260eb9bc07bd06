"""What the diagnosis's change history says a fix may set, from ``get_recent_changes``' summaries in the
diagnosis's own tool results.

- What the trigger set: the Critic refuses a step that would make the same call with one of those values
  again, since a fix puts back the state from before the trigger, never what the trigger itself set (an
  alias to the version it held, not the one it was moved to). Only a step of the trigger's own operation
  compares (a route deleted is put back by creating it, under the same destination: that is the route's
  key, not a value the trigger set); only the settings (never the names and ids that say which resource);
  and only values the summary shows whole: one it cut is not compared.
- What was recorded before it: a setting put back (``Operation.recorded``) must take a value some change
  before the trigger shows the resource had (its creation, an earlier update), so that a value read
  nowhere but in a log line or a model's guess (a timeout of 900 "as the logs say") is refused.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from supervisor.remediation.operation import function_name
from supervisor.remediation.plan import ApiCall
from supervisor.schemas import Diagnosis, ToolResult

CHANGES_TOOL: Final[str] = "get_recent_changes"
IDENTIFIERS: Final[tuple[str, ...]] = ("name", "id", "arn", "uuid", "qualifier", "changed_fields")
Scalar = str | int | float | bool
_API_VERSION: Final = re.compile(r"\d{8}(v\d+)?$")  # CloudTrail's UpdateAlias20150331, ...20150331v2


def decode_tool_results(packed: bytes | None) -> list[ToolResult]:
    """The tool results incident-context keeps (gzip JSON, as ``supervisor.incident.audit`` writes them:
    that module is the agent stack's, too heavy for the executor's bundle); none when there are none."""
    return [ToolResult.model_validate(r) for r in json.loads(gzip.decompress(packed))] if packed else []


def _canonical(value: object) -> str:
    """A value as JSON with every key lower-cased (CloudTrail's ``deadLetterConfig.targetArn`` is the API's
    ``DeadLetterConfig.TargetArn``)."""

    def lowered(node: object) -> object:
        if isinstance(node, dict):
            return {str(k).lower(): lowered(v) for k, v in node.items()}
        return [lowered(v) for v in node] if isinstance(node, list) else node

    return json.dumps(lowered(value), sort_keys=True)


@dataclass(frozen=True)
class ChangeHistory:
    """The trigger's operation (its CloudTrail event name without the API version) and the settings its
    request set, by lower-cased name (CloudTrail's ``timeout`` is the API's ``Timeout``); and every value
    each setting had in a change before the trigger (``_canonical``), by lower-cased name."""

    operation: str = ""
    values: dict[str, Scalar] = field(default_factory=dict)
    recorded: dict[str, frozenset[str]] = field(default_factory=dict)

    def unrecorded(self, call: ApiCall, keys: Sequence[str]) -> str | None:
        """Why ``call`` sets one of ``keys`` to a value no change before the trigger shows."""
        for key in keys:
            if key in call.params and _canonical(call.params[key]) not in self.recorded.get(key.lower(), ()):
                return (
                    f"it sets {key} to {json.dumps(call.params[key])}, a value no change before the trigger "
                    "shows: a fix puts back a recorded setting"
                )
        return None

    def set_again(self, call: ApiCall) -> str | None:
        """Why ``call`` would set a value the trigger set (its operation, the same name, type and value)."""
        if call.operation != self.operation:
            return None
        for key, value in call.params.items():
            seen = self.values.get(key.lower())
            if seen is not None and type(seen) is type(value) and seen == value:
                return (
                    f"it sets {key} to {value!r}, what the trigger itself set: a fix puts back the state "
                    "from before the trigger"
                )
        return None


def read_history(diagnosis: Diagnosis, results: Sequence[ToolResult], function: str) -> ChangeHistory:
    """What the trigger set, and what the changes of the incident's ``function`` before it recorded (a
    change naming another function records nothing for it); nothing where no answer of
    ``get_recent_changes`` holds them (without a trigger, every change counts as before it)."""
    trigger = diagnosis.trigger
    events = [e for r in results if r.tool == CHANGES_TOOL for e in r.result.get("events") or []]
    operation, values = "", {}
    recorded: dict[str, set[str]] = {}
    for event in events:
        summary: dict[str, Any] = event.get("summary") or {}
        at = (event.get("event_name"), event.get("time"))
        if trigger is not None and at == (trigger.event_name, trigger.time):
            operation = _API_VERSION.sub("", trigger.event_name)
            values = {
                key.lower(): value
                for key, value in summary.items()
                if isinstance(value, Scalar) and not key.lower().endswith(IDENTIFIERS)
            }
        elif function_name(summary.get("functionName") or function) == function_name(function) and (
            trigger is None or _before(event.get("time"), str(trigger.time))
        ):
            for key, value in summary.items():
                recorded.setdefault(key.lower(), set()).add(_canonical(value))
    return ChangeHistory(operation, values, {key: frozenset(seen) for key, seen in recorded.items()})


def _before(time: object, trigger_time: str) -> bool:
    try:
        return _instant(str(time)) < _instant(trigger_time)
    except ValueError:  # no time, or not one: not known to be before
        return False


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
