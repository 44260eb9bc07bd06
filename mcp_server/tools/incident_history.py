"""``get_incident_history``: the function's ended incidents from incident-state, by Query only (never a
Scan): on the history index (its function and primary fault) when a fault type is asked, else on the
function index. Each is scored against the arguments (``SIMILARITY_RULE``), and the patterns are counted
over every incident read."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from statistics import fmean
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from mcp_server.contract.common import Gap
from mcp_server.contract.history import (
    ENDED,
    EXPIRES_AT,
    FIX,
    FUNCTION_INDEX,
    HISTORY_INDEX,
    HISTORY_KEY,
    MAX_LISTED,
    MAX_READ,
    PRIMARY_FAULT,
    RECOVERED_AT,
    RECURRING_COUNT,
    RECURRING_DAYS,
    RESOLVED_BY,
    RESOURCES,
    TRIGGER_EVENT,
    WEIGHTS,
    GetIncidentHistoryArgs,
    IncidentHistoryResponse,
    PastCall,
    PastIncident,
    Pattern,
)
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext

APPLIED = frozenset({"REMEDIATED", "NOT_REMEDIATED", "UNDO_FAILED"})  # the executor called the fix
# What an answer is made of, and no other attribute: the outcome, never the alarm's detail or a reason.
READ: tuple[str, ...] = ("incident_id", "kind", "status", "observed_at", "fault_types", PRIMARY_FAULT)
READ += (TRIGGER_EVENT, RESOURCES, FIX, RESOLVED_BY, RECOVERED_AT, EXPIRES_AT)
_ITEM = TypeDeserializer()


def incident_history(ctx: ToolContext, args: GetIncidentHistoryArgs) -> IncidentHistoryResponse:
    now = datetime.now(UTC)
    since = now - timedelta(days=args.days)
    function = ctx.target.function_name
    table = ctx.settings.mcp_incident_state_table
    if args.fault_type:
        index, key = HISTORY_INDEX, f"{HISTORY_KEY} = :key AND observed_at >= :since"
        values = {":key": f"{function}#{args.fault_type}", ":since": _stamp(since)}
    else:
        index, key = FUNCTION_INDEX, "function_name = :key AND updated_at >= :since"
        values = {":key": function, ":since": _stamp(since)}

    def query() -> tuple[list[dict[str, Any]], bool]:
        pages = ctx.clients.dynamodb.get_paginator("query").paginate(
            TableName=table,
            IndexName=index,
            KeyConditionExpression=key,
            ExpressionAttributeValues={name: {"S": value} for name, value in values.items()},
            ProjectionExpression=", ".join(f"#a{n}" for n in range(len(READ))),  # the outcome, no prose
            ExpressionAttributeNames={f"#a{n}": name for n, name in enumerate(READ)},
            ScanIndexForward=False,  # the newest first
        )
        return _ended(pages, now)

    meaning = "no past incident of the function is known: the history could not be read"
    read = ctx.reads.one(Read("dynamodb:Query", f"{table} index {index}", query, meaning))
    items, more = read or ([], False)
    past = [_past(item, args) for item in items if str(item.get("observed_at", "")) >= _stamp(since)]
    if more:
        ctx.reads.gaps.append(
            Gap(
                source=f"dynamodb:Query of {table} index {index}",
                meaning=f"only the newest {MAX_READ:,} incidents were read: older ones are not counted",
            )
        )
    listed = sorted(past, key=lambda p: (p.similarity or 0, p.observed_at), reverse=True)[:MAX_LISTED]
    return IncidentHistoryResponse(
        function_name=function,
        window_start=_stamp(since),
        incidents_read=len(past),
        incidents=listed,
        patterns=_patterns(past, now),
        gaps=ctx.reads.gaps,
    )


def _ended(pages: Iterable[dict[str, Any]], now: datetime) -> tuple[list[dict[str, Any]], bool]:
    """The ended incidents of the pages, at most MAX_READ, but not those expired (their retention over,
    not yet deleted); whether more were left unread."""
    found: list[dict[str, Any]] = []
    for page in pages:
        for raw in page.get("Items", []):
            item = {name: _ITEM.deserialize(value) for name, value in raw.items()}
            expired = item.get(EXPIRES_AT) is not None and int(item[EXPIRES_AT]) <= now.timestamp()
            if item.get("status") in ENDED and item.get("kind", "incident") == "incident" and not expired:
                if len(found) == MAX_READ:
                    return found, True
                found.append(item)
    return found, False


def _past(item: dict[str, Any], args: GetIncidentHistoryArgs) -> PastIncident:
    faults = [str(f) for f in item.get("fault_types") or []]
    primary = item.get(PRIMARY_FAULT)
    ordered = [str(primary), *(f for f in faults if f != primary)] if primary else faults
    resources = [str(r) for r in item.get(RESOURCES) or []]
    trigger = str(item[TRIGGER_EVENT]) if item.get(TRIGGER_EVENT) else None
    shared = [
        name
        for name, same in (
            ("fault class", args.fault_type is not None and args.fault_type in faults),
            ("trigger kind", args.trigger_event is not None and args.trigger_event == trigger),
            ("resource", args.resource is not None and any(_same(args.resource, r) for r in resources)),
        )
        if same
    ]
    asked = (args.fault_type, args.trigger_event, args.resource) != (None, None, None)
    recovered = item.get(RECOVERED_AT) if item.get("status") == "REMEDIATED" else None
    return PastIncident(
        incident_id=str(item["incident_id"]),
        observed_at=str(item["observed_at"]),
        status=str(item["status"]),
        fault_types=ordered,
        trigger_event=trigger,
        resources=resources,
        fix=_fix(item.get(FIX)),
        resolved_by=str(item[RESOLVED_BY]) if item.get(RESOLVED_BY) else None,
        seconds_to_recover=_seconds(str(item["observed_at"]), str(recovered)) if recovered else None,
        similarity=round(sum(WEIGHTS[name] for name in shared), 2) if asked else None,
        shared=shared,
    )


def _patterns(past: list[PastIncident], now: datetime) -> list[Pattern]:
    groups: dict[tuple[str, str | None], list[PastIncident]] = defaultdict(list)
    for incident in past:
        if incident.fault_types:
            groups[(incident.fault_types[0], incident.trigger_event)].append(incident)
    recent = _stamp(now - timedelta(days=RECURRING_DAYS))
    patterns = []
    for (fault, trigger), incidents in groups.items():
        held = [i.seconds_to_recover for i in incidents if i.status == "REMEDIATED" and i.seconds_to_recover]
        in_month = sum(i.observed_at >= recent for i in incidents)
        patterns.append(
            Pattern(
                fault_type=fault,
                trigger_event=trigger,
                incidents=len(incidents),
                in_last_30_days=in_month,
                recurring=in_month >= RECURRING_COUNT,
                fixes_applied=sum(i.status in APPLIED for i in incidents),
                fixes_held=sum(i.status == "REMEDIATED" for i in incidents),
                mean_seconds_to_recover=round(fmean(held), 1) if held else None,
            )
        )
    return sorted(patterns, key=lambda p: (-p.incidents, p.fault_type, p.trigger_event or ""))


def _fix(text: object) -> list[PastCall]:
    """The stored fix's calls; none when it is absent or not the JSON the executor writes."""
    try:
        calls = json.loads(str(text)) if text else []
        return [
            PastCall(service=c["service"], operation=c["operation"], parameters=c["params"]) for c in calls
        ]
    except (ValueError, TypeError, KeyError):
        return []


def _same(asked: str, named: str) -> bool:
    """The same resource, named or by ARN (an ARN's last name: after its last ':' or '/')."""
    return asked == named or _last(asked) == _last(named)


def _last(name: str) -> str:
    return name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def _seconds(start: str, end: str) -> float:
    return round((_instant(end) - _instant(start)).total_seconds(), 1)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _stamp(moment: datetime) -> str:
    """As the supervisor stamps incident times: UTC, milliseconds, fixed width (sorts as text)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
