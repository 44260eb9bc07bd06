"""Whether the function works again after a fix, read through the MCP server's ``get_recent_logs`` (the
same evidence path as the diagnosis): the invocations that started after the fix, and how each ended.

For a plan whose recovery is records flowing again (``records_flow``: a stopped event source, or bad
input a mapping must now skip), recovered once the last ``min_invocations`` invocations after the fix all
succeeded: the bad record is still retried, and fails, until it is skipped, so a failure before them
decides nothing. Where the fix makes the function run another version (an alias moved back), only that
version's invocations count. For any other plan (``invocations_succeed``), recovered once ``min_invocations``
invocations started after the fix and none of those failed; not recovered as soon as one of them failed
(a timeout, the runtime exiting, an error record, a failed init). Undecided while fewer have run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from supervisor.remediation.plan import Plan

LOGS_TOOL: Final[str] = "get_recent_logs"
SUCCEEDED: Final[str] = "no_error_seen"
_STREAM_VERSION: Final = re.compile(r"^\d{4}/\d{2}/\d{2}/\[([^\]]+)\]")  # Lambda's stream names

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
        if isinstance(i.get("started"), str)
        and _instant(i["started"]) >= since
        and _runs(i, plan.recovery.version)
    ]
    failed = [i for i in after if i.get("outcome") != SUCCEEDED]
    if plan.recovery.kind == "records_flow":
        return _records_flow(after, failed, min_invocations)
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


def _records_flow(after: list[dict[str, Any]], failed: list[dict[str, Any]], count: int) -> Verdict:
    last = sorted(after, key=lambda i: str(i["started"]))[-count:]
    if len(last) == count and all(i.get("outcome") == SUCCEEDED for i in last):
        retried = f"; {len(failed)} failed before them, the bad records retried" if failed else ""
        return Verdict(True, f"the last {count} invocations after the fix succeeded{retried}")
    return Verdict(
        None, f"{len(after)} invocations since the fix, {len(failed)} failed: records not moving yet"
    )


def _runs(invocation: dict[str, Any], version: str | None) -> bool:
    """Whether the invocation ran ``version`` (any, when None), as its log stream names it
    (``2026/12/02/[3]<id>``); a stream that names none is counted."""
    found = _STREAM_VERSION.search(str(invocation.get("log_stream") or ""))
    return version is None or found is None or found.group(1) == version


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
