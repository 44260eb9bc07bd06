"""The stage of a diagnosis: provisional while CloudTrail may still be delivering the change that started
the failure, final once it cannot be or once a re-check has looked again.

AWS: "CloudTrail typically delivers logs within an average of about 5 minutes of an API call. This time is
not guaranteed" (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/how-cloudtrail-works.html),
while a one-minute alarm fires about a minute after the first failures. So a diagnosis whose first failure
is younger than the bound (``CLOUDTRAIL_DELIVERY_BOUND_SECONDS``) is provisional: stored and published at
once, with a gap naming the window still open, and re-checked at ``recheck_at`` = first failure + bound.

The status stays DIAGNOSED; the stage is an attribute of the incident-state item:

    final               false while provisional, true once final (absent: final, as every incident was
                        before stages existed, and every FAILED or ERROR one)
    first_failure_at    the diagnosis's first failure (its timeline), else the alarm's time
    recheck_at          first failure + bound: when the re-check reads the change history again
    recheck_claim, recheck_claimed_at   a re-check running now (a lease, as a notification's claim)
    recheck_resent_at   when the watchdog sent a re-check that never ran again
    final_reason        why it became final without a re-check's diagnosis

boto3 and the standard library only: read on the orchestrator's cold path and by the watchdog.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.config import Config
from botocore.exceptions import ClientError

from supervisor.incident.signals import stamp
from supervisor.incident.store import (
    MAX_REASON_CHARS,
    STATUS_INDEX,
    IncidentStore,
    Item,
    TransitionConflict,
    from_item,
    is_incident_id,
    to_item,
)

FINAL: Final[str] = "final"
FIRST_FAILURE_AT: Final[str] = "first_failure_at"
RECHECK_AT: Final[str] = "recheck_at"
RECHECK_RESENT_AT: Final[str] = "recheck_resent_at"
FINAL_REASON: Final[str] = "final_reason"
RECHECK_KIND: Final[str] = "recheck"
MAX_DELAY_SECONDS: Final[int] = 900  # SQS's longest DelaySeconds
RECHECK_LEASE: Final[timedelta] = timedelta(minutes=15)  # Lambda's longest run: an older claim was abandoned
GAP_SOURCE: Final[str] = "get_recent_changes"  # what the open window leaves incomplete
METRICS_TOOL: Final[str] = "get_function_metrics"
METRIC_PERIOD: Final[timedelta] = timedelta(minutes=1)  # Lambda's metrics, as the metrics tool reads them
NEVER_RAN: Final[str] = "the re-check never ran: the provisional diagnosis stands"
_NAMES: Final[dict[str, str]] = {"#s": "status", "#final": FINAL}


@dataclass(frozen=True)
class Stage:
    """Where a diagnosis stands when it is recorded."""

    final: bool
    first_failure: datetime
    window_start: datetime  # changes made from here to the first failure may not be delivered yet
    recheck_at: datetime | None  # None once final

    def attributes(self) -> dict[str, object]:
        """What the incident-state item records of it."""
        values: dict[str, object] = {FINAL: self.final, FIRST_FAILURE_AT: stamp(self.first_failure)}
        if self.recheck_at is not None:
            values[RECHECK_AT] = stamp(self.recheck_at)
        return values


def _instant(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def delay_until(recheck_at: str, now: datetime) -> int:
    """A re-check message's DelaySeconds: the seconds until ``recheck_at``, within SQS's 0 to 900."""
    moment = _instant(recheck_at)
    seconds = math.ceil((moment - now).total_seconds()) if moment is not None else 0
    return min(MAX_DELAY_SECONDS, max(0, seconds))


def first_failure(diagnosis: Mapping[str, Any], alarm_at: datetime) -> datetime:
    """The diagnosis's first failure (the earliest ``first_failure`` entry of its timeline), else the
    alarm's time. An entry read from a metric datapoint alone only says the failures began within that
    minute: it counts as the minute's end (never after the alarm), so that the window whose changes may be
    undelivered is not cut short."""
    evidence = diagnosis.get("evidence") or []
    times = []
    for entry in diagnosis.get("timeline") or []:
        if not isinstance(entry, Mapping) or entry.get("kind") != "first_failure":
            continue
        moment = _instant(entry.get("time"))
        if moment is None:
            continue
        cited = [evidence[i] for i in entry.get("evidence") or [] if isinstance(i, int) and i < len(evidence)]
        if cited and all(isinstance(p, Mapping) and p.get("tool") == METRICS_TOOL for p in cited):
            moment = min(moment + METRIC_PERIOD, max(moment, alarm_at))
        times.append(moment)
    return min(times) if times else alarm_at


def stage_of(failed_at: datetime, now: datetime, bound_seconds: int) -> Stage:
    """Provisional when the first failure is younger than the bound (a bound of 0: always final)."""
    bound = timedelta(seconds=bound_seconds)
    if bound_seconds > 0 and now - failed_at < bound:
        return Stage(False, failed_at, now - bound, failed_at + bound)
    return Stage(True, failed_at, now - bound, None)


def window_gap(stage: Stage, scheduled: bool) -> dict[str, object]:
    """The gap a provisional diagnosis carries: the window whose changes may not be delivered yet, and
    when (or whether) the re-check looks again."""
    recheck_at = stamp(stage.recheck_at) if stage.recheck_at else "?"
    then = (
        f"a re-check at {recheck_at} reads the change history again and sends the final diagnosis"
        if scheduled
        else "no re-check is scheduled (RECHECK_QUEUE_URL is not set): the watchdog makes this diagnosis "
        f"final as it stands after {recheck_at}"
    )
    reason = (
        f"provisional: changes made between {stamp(stage.window_start)} and the first failure at "
        f"{stamp(stage.first_failure)} may not be delivered to CloudTrail's event history yet (it delivers "
        f"within about 5 minutes on average, without a guarantee), so the trigger may be missing; {then}."
    )
    return {"source": GAP_SOURCE, "reason": reason, "evidence": []}


# ---------------------------------------------------------------------------- the re-check message


class MalformedRecheck(ValueError):
    """An SQS message that is not a re-check: rejected, never retried."""


def recheck_message(incident_id: str) -> str:
    return json.dumps({"incident_id": incident_id, "kind": RECHECK_KIND}, sort_keys=True)


def parse_recheck(body: object) -> str:
    """The incident id a re-check message names; MalformedRecheck says what is wrong with any other."""
    if not isinstance(body, str) or not body:
        raise MalformedRecheck("the message has no body")
    try:
        message = json.loads(body)
    except ValueError:
        raise MalformedRecheck(f"the body is not JSON: {body[:80]!r}") from None
    if not isinstance(message, dict):
        raise MalformedRecheck(f"the body is a JSON {type(message).__name__}, not an object")
    if message.get("kind") != RECHECK_KIND:
        raise MalformedRecheck(f"kind is {message.get('kind')!r}, not {RECHECK_KIND!r}")
    if extra := sorted(set(message) - {"incident_id", "kind"}):
        raise MalformedRecheck(f"unknown fields {extra}: a re-check carries incident_id and kind only")
    incident_id = message.get("incident_id")
    if not isinstance(incident_id, str) or not is_incident_id(incident_id):
        raise MalformedRecheck(
            f"incident_id {str(incident_id)[:120]!r} is not an incident id (<function>@<time>)"
        )
    return incident_id


def sqs_client(session: Any) -> Any:
    """The SQS client of the re-checks: standard retries, bounded timeouts."""
    return session.client(
        "sqs",
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=5, read_timeout=10
        ),
    )


def send_recheck(sqs: Any, queue_url: str, incident_id: str, delay_seconds: int) -> str:
    """Send the re-check of ``incident_id``, delivered after ``delay_seconds``; its SQS message id."""
    response = sqs.send_message(
        QueueUrl=queue_url, MessageBody=recheck_message(incident_id), DelaySeconds=delay_seconds
    )
    return str(response["MessageId"])


# ---------------------------------------------------------------------------- conditional writes


def _update(store: IncidentStore, incident_id: str, **request: Any) -> Item | None:
    """One conditional UpdateItem on incident-state: the new item, or None when its condition failed."""
    try:
        response = store.dynamodb.update_item(
            TableName=store.state_table,
            Key={"incident_id": {"S": incident_id}},
            ReturnValues="ALL_NEW",
            **request,
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return None
        raise
    return from_item(response["Attributes"])


def claim_recheck(store: IncidentStore, incident_id: str, token: str) -> Item | None:
    """Take the right to re-check a provisional ``incident_id``: the item, or None when it is not
    provisional (final already, or not DIAGNOSED) or another re-check holds an unexpired claim."""
    now = store.clock()
    return _update(
        store,
        incident_id,
        UpdateExpression="SET recheck_claim = :token, recheck_claimed_at = :now",
        ConditionExpression="#s = :diagnosed AND #final = :false"
        " AND (attribute_not_exists(recheck_claim) OR recheck_claimed_at < :expired)",
        ExpressionAttributeNames=_NAMES,
        ExpressionAttributeValues=to_item(
            {
                ":diagnosed": "DIAGNOSED",
                ":false": False,
                ":expired": stamp(now - RECHECK_LEASE),
                ":token": token,
                ":now": stamp(now),
            }
        ),
    )


def release_recheck(store: IncidentStore, incident_id: str, token: str) -> None:
    """Give a claim back (the re-check could not record its outcome), so that a redelivery may re-check."""
    _update(
        store,
        incident_id,
        UpdateExpression="REMOVE recheck_claim, recheck_claimed_at",
        ConditionExpression="recheck_claim = :token",
        ExpressionAttributeValues=to_item({":token": token}),
    )


def make_final(
    store: IncidentStore,
    incident_id: str,
    *,
    token: str | None,
    headline: dict[str, object] | None = None,
    reason: str | None = None,
) -> Item:
    """Make a provisional ``incident_id`` final: under the re-check's claim ``token``, or, with none, only
    while no re-check holds an unexpired claim. ``headline`` is the final diagnosis's (None: the provisional
    one stands, ``reason`` says why). TransitionConflict when it is not provisional or the claim was lost."""
    now = store.clock()
    names = dict(_NAMES)
    values = to_item({":diagnosed": "DIAGNOSED", ":false": False, ":true": True, ":now": stamp(now)})
    sets = ["#final = :true", "updated_at = :now"]
    if reason is not None:
        sets.append(f"{FINAL_REASON} = :reason")
        values |= to_item({":reason": reason[:MAX_REASON_CHARS]})
    for n, (name, value) in enumerate(to_item(headline or {}).items()):
        sets.append(f"#h{n} = :h{n}")
        names[f"#h{n}"] = name
        values[f":h{n}"] = value
    condition = "#s = :diagnosed AND #final = :false AND "
    if token is None:
        condition += "(attribute_not_exists(recheck_claim) OR recheck_claimed_at < :expired)"
        values |= to_item({":expired": stamp(now - RECHECK_LEASE)})
    else:
        condition += "recheck_claim = :token"
        values |= to_item({":token": token})
    final = _update(
        store,
        incident_id,
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE recheck_claim, recheck_claimed_at",
        ConditionExpression=condition,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    if final is None:
        raise TransitionConflict(incident_id, "DIAGNOSED and provisional", store.get(incident_id))
    return final


def mark_resent(store: IncidentStore, incident_id: str) -> Item | None:
    """Record that the watchdog sends the re-check again: the item, or None when it did so before or the
    incident is no longer provisional. Written before the send, so that it is sent again at most once."""
    now = store.clock()
    return _update(
        store,
        incident_id,
        UpdateExpression=f"SET {RECHECK_RESENT_AT} = :now",
        ConditionExpression="#s = :diagnosed AND #final = :false"
        f" AND attribute_not_exists({RECHECK_RESENT_AT})",
        ExpressionAttributeNames=_NAMES,
        ExpressionAttributeValues=to_item({":now": stamp(now), ":diagnosed": "DIAGNOSED", ":false": False}),
    )


def overdue(store: IncidentStore, since: datetime, until: datetime) -> list[Item]:
    """Provisional incidents diagnosed since ``since`` whose ``recheck_at`` is before ``until``: one range
    query on the status index (a provisional incident was last updated before its re-check time), never a
    scan."""
    paginator = store.dynamodb.get_paginator("query")
    items: list[Item] = []
    for page in paginator.paginate(
        TableName=store.state_table,
        IndexName=STATUS_INDEX,
        KeyConditionExpression="#s = :diagnosed AND updated_at BETWEEN :since AND :until",
        FilterExpression=f"#final = :false AND {RECHECK_AT} < :until",
        ExpressionAttributeNames=_NAMES,
        ExpressionAttributeValues=to_item(
            {":diagnosed": "DIAGNOSED", ":false": False, ":since": stamp(since), ":until": stamp(until)}
        ),
    ):
        items.extend(from_item(item) for item in page["Items"])
    return items


def is_provisional(item: Mapping[str, Any]) -> bool:
    return item.get("status") == "DIAGNOSED" and item.get(FINAL) is False
