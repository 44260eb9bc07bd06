"""A function's incident history, read from incident-state by ``Query`` only (never a Scan): on the
history index (the function and its primary fault) when a fault type is asked, else on the function
index; only incidents that ended and are within their retention, as past incidents scored against what is
asked (``SIMILARITY_RULE``), and their patterns. ``get_incident_history`` answers with it; the
supervisor's planning reads its own table with it."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from statistics import fmean
from typing import Any, get_args

from boto3.dynamodb.types import TypeDeserializer

from mcp_server.contract.history import (
    ENDED,
    EXPIRES_AT,
    FIX,
    FIX_VERDICT,
    FUNCTION_INDEX,
    HISTORY_INDEX,
    HISTORY_KEY,
    MAX_READ,
    PRIMARY_FAULT,
    RECOVERED_AT,
    RECURRING_COUNT,
    RECURRING_DAYS,
    RESOLVED_BY,
    RESOURCES,
    TRIGGER_EVENT,
    WEIGHTS,
    FixVerdict,
    GetIncidentHistoryArgs,
    PastCall,
    PastIncident,
    Pattern,
)

APPLIED: frozenset[str | None] = frozenset({"held", "did_not_help", "not_verified"})  # the fix was called
# What an answer is made of, and no other attribute: the outcome, never the alarm's detail or a reason.
READ: tuple[str, ...] = ("incident_id", "kind", "status", "observed_at", "fault_types", PRIMARY_FAULT)
READ += (TRIGGER_EVENT, RESOURCES, FIX, FIX_VERDICT, RESOLVED_BY, RECOVERED_AT, EXPIRES_AT)
_ITEM = TypeDeserializer()


@dataclass(frozen=True)
class History:
    index: str  # the index queried
    window_start: str
    past: list[PastIncident]  # newest first
    more: bool  # the read bound left older incidents unread


def read_history(
    dynamodb: Any,
    table: str,
    function: str,
    args: GetIncidentHistoryArgs,
    now: datetime,
    by_fault: bool | None = None,
) -> History:
    """``function``'s ended incidents of the last ``args.days``, scored as ``args`` asks: those of its
    fault type only (the history index) unless ``by_fault`` is False (then every one, from the function
    index); raises what the Query raises."""
    since = stamp(now - timedelta(days=args.days))
    if args.fault_type and by_fault is not False:
        index, key = HISTORY_INDEX, f"{HISTORY_KEY} = :key AND observed_at >= :since"
        partition = f"{function}#{args.fault_type}"
    else:
        index, key, partition = FUNCTION_INDEX, "function_name = :key AND updated_at >= :since", function
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table,
        IndexName=index,
        KeyConditionExpression=key,
        ExpressionAttributeValues={":key": {"S": partition}, ":since": {"S": since}},
        ProjectionExpression=", ".join(f"#a{n}" for n in range(len(READ))),
        ExpressionAttributeNames={f"#a{n}": name for n, name in enumerate(READ)},
        ScanIndexForward=False,  # the newest first
    )
    items, more = _ended(pages, now)
    past = [_past(item, args) for item in items if str(item.get("observed_at", "")) >= since]
    return History(index, since, past, more)


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
        fix_verdict=item.get(FIX_VERDICT) if item.get(FIX_VERDICT) in get_args(FixVerdict) else None,
        resolved_by=str(item[RESOLVED_BY]) if item.get(RESOLVED_BY) else None,
        seconds_to_recover=seconds_between(str(item["observed_at"]), str(recovered)) if recovered else None,
        similarity=round(sum(WEIGHTS[name] for name in shared), 2) if asked else None,
        shared=shared,
    )


def patterns(past: list[PastIncident], now: datetime) -> list[Pattern]:
    groups: dict[tuple[str, str | None], list[PastIncident]] = defaultdict(list)
    for incident in past:
        if incident.fault_types:
            groups[(incident.fault_types[0], incident.trigger_event)].append(incident)
    recent = stamp(now - timedelta(days=RECURRING_DAYS))
    found = []
    for (fault, trigger), incidents in groups.items():
        held = [i.seconds_to_recover for i in incidents if i.fix_verdict == "held" and i.seconds_to_recover]
        in_month = sum(i.observed_at >= recent for i in incidents)
        found.append(
            Pattern(
                fault_type=fault,
                trigger_event=trigger,
                incidents=len(incidents),
                in_last_30_days=in_month,
                recurring=in_month >= RECURRING_COUNT,
                fixes_applied=sum(i.fix_verdict in APPLIED for i in incidents),
                fixes_held=sum(i.fix_verdict == "held" for i in incidents),
                mean_seconds_to_recover=round(fmean(held), 1) if held else None,
            )
        )
    return sorted(found, key=lambda p: (-p.incidents, p.fault_type, p.trigger_event or ""))


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


def seconds_between(start: str, end: str) -> float:
    return round((instant(end) - instant(start)).total_seconds(), 1)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def stamp(moment: datetime) -> str:
    """As the supervisor stamps incident times: UTC, milliseconds, fixed width (sorts as text)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
