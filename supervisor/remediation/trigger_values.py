"""What the diagnosis's trigger set, as ``get_recent_changes`` summarised its request: the Critic refuses a
step that would make the same call with one of those values again, since a fix puts back the state from
before the trigger, never what the trigger itself set (an alias to the version it held, not the one it
was moved to).

Only a step of the trigger's own operation compares (a route deleted is put back by creating it, under
the same destination: that is the route's key, not a value the trigger set); only the settings (never
the names and ids that say which resource); and only values the summary shows whole: one it cut is not
compared, so the check can pass a step it cannot read, never refuse one wrongly.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

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


@dataclass(frozen=True)
class TriggerValues:
    """The trigger's operation (its CloudTrail event name without the API version) and the settings its
    request set, by lower-cased name (CloudTrail's ``timeout`` is the API's ``Timeout``)."""

    operation: str = ""
    values: dict[str, Scalar] = field(default_factory=dict)

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


def trigger_values(diagnosis: Diagnosis, results: Sequence[ToolResult]) -> TriggerValues:
    """What the trigger set; nothing without a trigger or when no answer holds its event."""
    trigger = diagnosis.trigger
    if trigger is None:
        return TriggerValues()
    for result in results:
        if result.tool != CHANGES_TOOL:
            continue
        for event in result.result.get("events") or []:
            if (event.get("event_name"), event.get("time")) == (trigger.event_name, trigger.time):
                summary: dict[str, Any] = event.get("summary") or {}
                values = {
                    key.lower(): value
                    for key, value in summary.items()
                    if isinstance(value, Scalar) and not key.lower().endswith(IDENTIFIERS)
                }
                return TriggerValues(_API_VERSION.sub("", trigger.event_name), values)
    return TriggerValues()
