"""What the console shows of incidents past: beside one incident, its function's other incidents of the
last 90 days scored against it (``mcp_server.history``, the reading ``get_incident_history`` answers
with) and their patterns; and the fleet: every incident of the window (one range query on the index of
every incident, newest first, bounded), by function and by fault class and week, with what the fixes did.
Only ``dynamodb:Query`` is called."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import fmean
from typing import Any, Final

from pydantic import ValidationError

from mcp_server.contract.history import (
    FIX_VERDICT,
    PRIMARY_FAULT,
    RECOVERED_AT,
    RESOURCES,
    TRIGGER_EVENT,
    GetIncidentHistoryArgs,
    PastIncident,
    Pattern,
)
from mcp_server.history import APPLIED, History, instant, patterns, read_history, seconds_between, stamp
from supervisor.incident.store import INCIDENT_KIND, from_item

BESIDE: Final[int] = 10  # past incidents shown beside one
FLEET_DAYS: Final[int] = 90
FLEET_READ: Final[int] = 2_000  # incidents the fleet page reads at most, the newest
WEEKS: Final[int] = 13
_FLEET: Final = ("function_name", "observed_at", "fault_types", PRIMARY_FAULT, FIX_VERDICT, RECOVERED_AT)


@dataclass(frozen=True)
class Beside:
    """The function's other incidents, the most similar to this one first, and its patterns."""

    rows: list[PastIncident]
    patterns: list[Pattern]
    read: int
    more: bool


def beside(dynamodb: Any, table: str, state: dict[str, Any], now: datetime) -> Beside | None:
    """``state``'s function's history scored against it; None for a function name history cannot take."""
    faults = [str(f) for f in state.get("fault_types") or []]
    primary = str(state.get(PRIMARY_FAULT) or (faults[0] if faults else "")) or None
    try:
        args = GetIncidentHistoryArgs(
            lambda_name=str(state.get("function_name")),
            fault_type=primary,
            trigger_event=str(state.get(TRIGGER_EVENT) or "") or None,
            resource=next(iter(state.get(RESOURCES) or []), None),
        )
    except ValidationError:
        return None
    history: History = read_history(dynamodb, table, args.lambda_name, args, now, by_fault=False)
    others = [p for p in history.past if p.incident_id != state.get("incident_id")]
    ranked = sorted(others, key=lambda p: (p.similarity or 0, p.observed_at), reverse=True)
    return Beside(ranked[:BESIDE], patterns(others, now), len(others), history.more)


@dataclass
class FunctionRow:
    function: str
    incidents: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    fixes_applied: int = 0
    fixes_held: int = 0
    recover_seconds: list[float] = field(default_factory=list)

    @property
    def mean_seconds_to_recover(self) -> float | None:
        return round(fmean(self.recover_seconds), 1) if self.recover_seconds else None


@dataclass
class Fleet:
    since: str
    read: int
    more: bool
    functions: list[FunctionRow]
    weeks: list[str]  # each week's first day, oldest first
    by_week: dict[str, list[int]]  # fault class -> incidents each week


def fleet(dynamodb: Any, table: str, index: str, now: datetime) -> Fleet:
    """Every incident of the last FLEET_DAYS (the newest FLEET_READ), by function and by fault class."""
    since = now - timedelta(days=FLEET_DAYS)
    items, more = _recent(dynamodb, table, index, stamp(since))
    rows: dict[str, FunctionRow] = {}
    first = (now - timedelta(weeks=WEEKS - 1)).date()
    first -= timedelta(days=first.weekday())  # a Monday
    weeks = [first + timedelta(weeks=n) for n in range(WEEKS)]
    by_week: dict[str, list[int]] = defaultdict(lambda: [0] * WEEKS)
    for item in items:
        row = rows.setdefault(str(item["function_name"]), FunctionRow(str(item["function_name"])))
        faults = [str(f) for f in item.get("fault_types") or []]
        fault = str(item.get(PRIMARY_FAULT) or (faults[0] if faults else "undiagnosed"))
        row.incidents += 1
        row.faults[fault] += 1
        row.fixes_applied += item.get(FIX_VERDICT) in APPLIED
        if item.get(FIX_VERDICT) == "held" and item.get(RECOVERED_AT):
            row.fixes_held += 1
            row.recover_seconds.append(seconds_between(str(item["observed_at"]), str(item[RECOVERED_AT])))
        week = (instant(str(item["observed_at"])).date() - first).days // 7
        if 0 <= week < WEEKS:
            by_week[fault][week] += 1
    ordered = sorted(rows.values(), key=lambda r: (-r.incidents, r.function))
    labels = [str(week) for week in weeks]
    return Fleet(stamp(since), len(items), more, ordered, labels, dict(sorted(by_week.items())))


def _recent(dynamodb: Any, table: str, index: str, since: str) -> tuple[list[dict[str, Any]], bool]:
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table,
        IndexName=index,
        KeyConditionExpression="#k = :kind AND updated_at >= :since",
        FilterExpression="observed_at >= :since",
        ProjectionExpression=", ".join(f"#a{n}" for n in range(len(_FLEET))),
        ExpressionAttributeNames={"#k": "kind"} | {f"#a{n}": name for n, name in enumerate(_FLEET)},
        ExpressionAttributeValues={":kind": {"S": INCIDENT_KIND}, ":since": {"S": since}},
        ScanIndexForward=False,
    )
    found: list[dict[str, Any]] = []
    for page in pages:
        for raw in page.get("Items", []):
            if len(found) == FLEET_READ:
                return found, True
            found.append(from_item(raw))
    return found, False
