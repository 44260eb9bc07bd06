"""What a diagnosis's notification recalls of the function's past: the earlier incidents of its pattern
(the function, the primary fault, the trigger's event) from the supervisor's own table, read as
``get_incident_history`` reads it (``mcp_server.history``): how often, which fix was applied, whether it
held and how long recovery took. Corroboration for the person reading, never evidence: the diagnosis is
made and verified without it, and a history that cannot be read only says so."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from mcp_server.contract.history import (
    PRIMARY_FAULT,
    RECURRING_COUNT,
    RECURRING_DAYS,
    TRIGGER_EVENT,
    GetIncidentHistoryArgs,
    PastIncident,
)
from mcp_server.history import read_history, stamp
from supervisor.incident.store import IncidentStore

MAX_RECALLED: Final[int] = 3  # earlier incidents named, the newest


def recalled(store: IncidentStore, incident: Mapping[str, Any]) -> list[str]:
    """The lines that recall ``incident``'s pattern; none when it has no primary fault or no earlier one."""
    primary, trigger = incident.get(PRIMARY_FAULT), str(incident.get(TRIGGER_EVENT) or "") or None
    if not primary:
        return []
    try:
        args = GetIncidentHistoryArgs(
            lambda_name=str(incident["function_name"]), fault_type=str(primary), trigger_event=trigger
        )
        now = store.clock()
        history = read_history(store.dynamodb, store.state_table, args.lambda_name, args, now)
    except ValidationError:
        return []
    except (ClientError, BotoCoreError) as error:
        return [f"not read ({type(error).__name__}): whether this happened before is not known"]
    earlier = [
        p for p in history.past if p.incident_id != incident.get("incident_id") and p.trigger_event == trigger
    ]
    if not earlier:
        return []
    after = f" after {trigger}" if trigger else " (no change found)"
    month = stamp(now - timedelta(days=RECURRING_DAYS))
    recent = sum(p.observed_at >= month for p in earlier) + 1  # with this one
    count = (
        f"{len(earlier)} earlier incident(s) in {args.days} days, {recent} in {RECURRING_DAYS} with this one"
    )
    lines = [f"{primary}{after}: {count}"]
    lines += [_line(p) for p in earlier[:MAX_RECALLED]]
    if recent >= RECURRING_COUNT:
        lines.append(
            f"recurring ({recent} in {RECURRING_DAYS} days): advice, never applied: a lasting fix, "
            f"such as an alarm or a test on the change that keeps causing it{after}"
        )
    return lines


def _line(past: PastIncident) -> str:
    fix = ", ".join(f"{c.service} {c.operation}" for c in past.fix) or "no fix planned"
    if past.fix_verdict == "held" and past.seconds_to_recover is not None:
        outcome = f"the fix held, recovered in {past.seconds_to_recover:.0f} s after the alarm"
    else:
        outcome = {
            "did_not_help": "the fix did not help (undone)",
            "not_verified": "the fix was undone unjudged",
            "not_applied": "the fix was not applied",
            "rejected": "the fix was rejected",
        }.get(str(past.fix_verdict), past.status)
    who = f", approved by {past.resolved_by}" if past.resolved_by else ""
    return f"{past.incident_id}: {outcome} ({fix}{who})"
