"""Whether the function works again after a fix, read through the MCP server's ``get_recent_logs`` (the
same evidence path as the diagnosis): the invocations that started after the fix (one that met a cold start
only if its init began after it too), and how each ended.

For a plan whose recovery is records flowing again (``records_flow``: a stopped event source, or bad
input a mapping must now skip), recovered once the last ``min_invocations`` invocations after the fix all
succeeded: the bad record is still retried, and fails, until it is skipped, so a failure before them
decides nothing. Where the fix makes the function run another version (an alias moved back), only that
version's invocations count. For any other plan (``invocations_succeed``), recovered once ``min_invocations``
invocations started after the fix and none of those failed; not recovered as soon as one of them failed
(a timeout, the runtime exiting, an error record, a failed init). Undecided while fewer have run.

While the logs hold no invocation report since the fix (none ran yet, or a system log level above INFO
drops the start and report records), ``get_function_metrics`` is read instead, for ``invocations_succeed``:
the whole minutes that begin once an invocation started before the fix has ended (the fix plus the
function's timeout), their Invocations and Errors summed; recovered at ``min_invocations`` invocations and
no error, not recovered at the first error. Not after an alias moved back: the function's series sums
every version, and only the reports tell which version ran.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from supervisor.remediation.plan import Plan

LOGS_TOOL: Final[str] = "get_recent_logs"
METRICS_TOOL: Final[str] = "get_function_metrics"
MIN_METRIC_MINUTES: Final[int] = 5  # the tool's shortest window
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
        if isinstance(i.get("started"), str) and _requested(i) >= since and _runs(i, plan.recovery.version)
    ]
    failed = [i for i in after if i.get("outcome") != SUCCEEDED]
    if plan.recovery.kind == "records_flow":  # from the reports only: the metrics count retried failures too
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
    if not after and plan.recovery.version is None:  # none ran since, or its log level drops the reports
        return await _from_metrics(call_tool, plan, since, now, min_invocations)
    return Verdict(None, f"{len(after)} of {min_invocations} invocations seen since the fix")


async def _from_metrics(
    call_tool: CallTool, plan: Plan, since: datetime, now: datetime, count: int
) -> Verdict:
    """The verdict from the function's metrics, in the whole minutes after the fix and its timeout."""
    minutes = max(MIN_METRIC_MINUTES, math.ceil((now - since).total_seconds() / 60) + 1)
    arguments = {"lambda_name": plan.recovery.function, "minutes": minutes}
    answer = json.loads(await call_tool(METRICS_TOOL, arguments))
    ended = since + timedelta(seconds=int(answer.get("timeout_seconds") or 900))
    first = ended.astimezone(UTC).replace(second=0, microsecond=0)
    first += timedelta(minutes=1) if first < ended else timedelta()
    counted = [m for m in answer.get("minutes") or [] if _instant(str(m.get("timestamp"))) >= first]
    invocations = sum(float(m.get("invocations") or 0) for m in counted)
    errors = sum(float(m.get("errors") or 0) for m in counted)
    where = f"in the function's metrics from {first:%H:%M} UTC (its logs hold no report since the fix)"
    if errors:
        return Verdict(False, f"{errors:g} error(s) of {invocations:g} invocations {where}")
    if invocations >= count:
        return Verdict(True, f"{invocations:g} invocations, none failed, {where}")
    return Verdict(None, f"{invocations:g} of {count} invocations {where}")


def _records_flow(after: list[dict[str, Any]], failed: list[dict[str, Any]], count: int) -> Verdict:
    last = sorted(after, key=lambda i: str(i["started"]))[-count:]
    if len(last) == count and all(i.get("outcome") == SUCCEEDED for i in last):
        retried = f"; {len(failed)} failed before them, the bad records retried" if failed else ""
        return Verdict(True, f"the last {count} invocations after the fix succeeded{retried}")
    return Verdict(
        None, f"{len(after)} invocations since the fix, {len(failed)} failed: records not moving yet"
    )


def _requested(invocation: dict[str, Any]) -> datetime:
    """The latest the invocation can have been routed: its start, less the init phase of the cold start it
    met (Lambda initialises an environment before the invoke phase its START line dates, so one routed to
    the configuration from before the fix may start after it)."""
    init = invocation.get("init_duration_ms")
    cold = timedelta(milliseconds=init) if isinstance(init, int | float) and init > 0 else timedelta()
    return _instant(str(invocation["started"])) - cold


def _runs(invocation: dict[str, Any], version: str | None) -> bool:
    """Whether the invocation ran ``version`` (any, when None), as its log stream names it
    (``2026/12/02/[3]<id>``); a stream that names none is counted."""
    found = _STREAM_VERSION.search(str(invocation.get("log_stream") or ""))
    return version is None or found is None or found.group(1) == version


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
