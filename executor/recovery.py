"""Whether the function works again after a fix, read through the MCP server's ``get_recent_logs`` (the
same evidence path as the diagnosis): the invocations that started after the fix, and how each ended.

Recovered once ``min_invocations`` invocations started after the fix and none of those failed; not
recovered as soon as one of them failed (a timeout, the runtime exiting, an error record, a failed init);
undecided while fewer have run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from supervisor.remediation.plan import Plan

LOGS_TOOL: Final[str] = "get_recent_logs"
SUCCEEDED: Final[str] = "no_error_seen"

CallTool = Callable[[str, dict[str, Any]], Awaitable[str]]


@dataclass(frozen=True)
class Verdict:
    recovered: bool | None  # None: not decided yet
    why: str


async def check_invocations(
    call_tool: CallTool, plan: Plan, since: datetime, now: datetime, min_invocations: int = 2
) -> Verdict:
    """The verdict on ``plan``'s function from the invocations that started at or after ``since``."""
    minutes = max(1, math.ceil((now - since).total_seconds() / 60) + 1)
    arguments = {"lambda_name": plan.recovery.function, "minutes": minutes}
    answer = json.loads(await call_tool(LOGS_TOOL, arguments))
    after = [
        i
        for i in answer.get("invocations") or []
        if isinstance(i.get("started"), str) and _instant(i["started"]) >= since
    ]
    failed = [i for i in after if i.get("outcome") != SUCCEEDED]
    if failed:
        first = failed[0]
        return Verdict(
            False,
            f"invocation {first.get('request_id')} started {first['started']} after the fix and ended in "
            f"{first.get('outcome')}",
        )
    if len(after) >= min_invocations:
        return Verdict(True, f"{len(after)} invocations started after the fix, none failed")
    seen = f"{len(after)} of {min_invocations} invocations seen since the fix"
    if not answer.get("invocations"):
        seen += " (the logs hold no invocation report in the window: none ran, or its log level drops them)"
    return Verdict(None, seen)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
