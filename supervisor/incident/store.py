"""Incident state in DynamoDB: claiming an incident for a signal, and status transitions as conditional
writes, so two handlers (or a handler and the watchdog) can never both move the same incident. The
statuses and their moves: ``supervisor.incident.lifecycle``.

Shared by the orchestrator and the watchdog. boto3 only: it is on the orchestrator's cold path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.config import Config
from botocore.exceptions import ClientError

from mcp_server.contract.history import EXPIRES_AT, FUNCTION_INDEX, HISTORY_INDEX, HISTORY_KEY
from mcp_server.lambda_names import LAMBDA_NAME_PATTERN
from supervisor.incident.lifecycle import TRANSITIONS, Status
from supervisor.incident.signals import MAX_AHEAD, Signal, stamp

STATUS_INDEX: Final[str] = "status-updated_at-index"
RECENT_INDEX: Final[str] = "kind-updated_at-index"  # every incident, newest first, in one range query
INCIDENT_KIND: Final[str] = "incident"  # the ``kind`` of an incident item (the pointer items have none)
# Each index of incident-state: its partition and sort attributes (all strings), projecting everything.
INDEXES: Final[dict[str, tuple[str, str]]] = {
    STATUS_INDEX: ("status", "updated_at"),
    FUNCTION_INDEX: ("function_name", "updated_at"),
    RECENT_INDEX: ("kind", "updated_at"),
    HISTORY_INDEX: (HISTORY_KEY, "observed_at"),  # get_incident_history's
}
MAX_REASON_CHARS: Final[int] = 500
RETENTION_DAYS: Final[int] = 365
_INCIDENT_ID: Final = re.compile(
    rf"(?:{LAMBDA_NAME_PATTERN})@\d{{4}}-\d{{2}}-\d{{2}}T\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,6}})?Z"
)
# One notification of a terminal incident's outcome, one more before it for a provisional diagnosis, one per
# status of lifecycle.NOTICED (its stage); each claimed and recorded under its own prefix (notice_prefix).
NOTIFY_STAGES: Final[dict[str, str]] = {"final": "", "provisional": "provisional_"}
_POINTER_PREFIX: Final[str] = "latest#"  # one item per function: its most recent incident

Item = dict[str, Any]
Clock = Callable[[], datetime]


def dynamodb_client(session: Any) -> Any:
    """A DynamoDB client for the incident tables: standard retries, bounded timeouts."""
    return session.client(
        "dynamodb",
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=5, read_timeout=10
        ),
    )


def utc_now() -> datetime:
    return datetime.now(UTC)


class IncidentStateError(Exception):
    """A transition that must not happen."""


class IllegalTransition(IncidentStateError):
    def __init__(self, incident_id: str, source: str, target: str) -> None:
        super().__init__(f"incident {incident_id}: {source} -> {target} is not a transition of the lifecycle")


class TransitionConflict(IncidentStateError):
    """The incident was not in the expected state: another writer moved it first."""

    def __init__(self, incident_id: str, expected: str, current: Item | None) -> None:
        self.incident_id = incident_id
        self.expected = expected
        self.current = current
        found = "it does not exist" if current is None else f"it is {current.get('status')}"
        super().__init__(f"incident {incident_id} was expected to be {expected}, but {found}")


def incident_id_for(signal: Signal) -> str:
    """Deterministic: a redelivered message maps to the same id."""
    return f"{signal.function_name}@{stamp(signal.observed_at)}"


def is_incident_id(value: str) -> bool:
    """Whether ``value`` has the shape of an incident id (``incident_id_for``)."""
    return _INCIDENT_ID.fullmatch(value) is not None


def _to_attribute(value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return {"N": repr(value)}
    if isinstance(value, bytes):
        return {"B": value}
    if isinstance(value, list):
        return {"L": [_to_attribute(v) for v in value]}
    return {"S": str(value)}


def to_item(values: dict[str, object]) -> dict[str, dict[str, Any]]:
    return {key: _to_attribute(value) for key, value in values.items() if value is not None}


def _from_attribute(attribute: dict[str, Any]) -> Any:
    (kind, value), *_ = attribute.items()
    if kind == "N":
        return int(value) if value.lstrip("-").isdigit() else float(value)
    if kind == "L":
        return [_from_attribute(v) for v in value]
    return value


def from_item(item: dict[str, dict[str, Any]]) -> Item:
    return {key: _from_attribute(attribute) for key, attribute in item.items()}


def _conflict(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def notice_prefix(stage: str) -> str:
    return NOTIFY_STAGES.get(stage, f"{stage.lower()}_")


class IncidentStore:
    def __init__(
        self,
        dynamodb: Any,
        state_table: str,
        context_table: str | None = None,
        clock: Clock = utc_now,
        retention_days: int = RETENTION_DAYS,
    ) -> None:
        self.dynamodb = dynamodb
        self.state_table = state_table
        self.context_table = context_table
        self.clock = clock
        self.retention = timedelta(days=retention_days)  # how long after its alarm an incident is kept

    def _expiry(self, moment: datetime) -> int:
        return int((moment + self.retention).timestamp())

    # ------------------------------------------------------------------ reads

    def get(self, incident_id: str) -> Item | None:
        response = self.dynamodb.get_item(
            TableName=self.state_table, Key={"incident_id": {"S": incident_id}}, ConsistentRead=True
        )
        return from_item(response["Item"]) if "Item" in response else None

    def _query(self, index: str = STATUS_INDEX, **kwargs: Any) -> Iterator[dict[str, Any]]:
        paginator = self.dynamodb.get_paginator("query")
        yield from paginator.paginate(TableName=self.state_table, IndexName=index, **kwargs)

    def created_since(self, since: datetime) -> int:
        """Incidents created at or after ``since``, counted in one range query on the index of every
        incident by its last update (an incident created then was also updated then), never a scan."""
        total = 0
        for page in self._query(
            RECENT_INDEX,
            KeyConditionExpression="#k = :kind AND updated_at >= :since",
            FilterExpression="created_at >= :since",
            ExpressionAttributeNames={"#k": "kind"},
            ExpressionAttributeValues={":kind": {"S": INCIDENT_KIND}, ":since": {"S": stamp(since)}},
            Select="COUNT",
        ):
            total += int(page["Count"])
        return total

    def not_updated_since(self, status: Status, cutoff: datetime) -> list[Item]:
        """Incidents in ``status`` whose last update is older than ``cutoff``, from the status index."""
        items: list[Item] = []
        for page in self._query(
            KeyConditionExpression="#s = :status AND updated_at < :cutoff",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":status": {"S": status}, ":cutoff": {"S": stamp(cutoff)}},
        ):
            items.extend(from_item(item) for item in page["Items"])
        return items

    # ------------------------------------------------------------------ writes

    def claim(self, signal: Signal, window_seconds: int) -> tuple[Item, bool]:
        """The incident for ``signal`` and whether this call created it (as RECEIVED).

        A signal joins its function's latest incident when that one opened less than
        ``window_seconds`` before it (a re-fired alarm for an ongoing failure); otherwise it opens one
        whose id derives from the signal alone. Either way concurrent deliveries agree on the id and
        exactly one of them creates it. An incident opened by an alarm on a queue or topic keeps its ARN
        (``alarmed_resource``)."""
        if not signal.function_name:
            raise ValueError("a signal is claimed for a function: resolve its alarmed resource first")
        incident_id = incident_id_for(signal)
        if window_seconds > 0:
            incident_id = self._join_or_open(signal, incident_id, timedelta(seconds=window_seconds))
        now = stamp(self.clock())
        values: dict[str, object] = {
            "incident_id": incident_id,
            "kind": INCIDENT_KIND,
            "status": "RECEIVED",
            "created_at": now,
            "updated_at": now,
            "function_name": signal.function_name,
            "account": signal.account,
            "region": signal.region,
            "error_type": signal.error_type,
            "source": signal.source,
            "detail": signal.detail,
            "observed_at": stamp(signal.observed_at),
            "time_note": signal.time_note,
            "message_id": signal.message_id,
            "alarmed_resource": signal.alarmed_resource.arn if signal.alarmed_resource else None,
            "investigations": 0,
            EXPIRES_AT: self._expiry(signal.observed_at),
        }
        try:
            self.dynamodb.put_item(
                TableName=self.state_table,
                Item=to_item(values),
                ConditionExpression="attribute_not_exists(incident_id)",
            )
        except ClientError as error:
            if not _conflict(error):
                raise
            existing = self.get(incident_id)
            if existing is None:  # cannot happen: the condition failed because it exists
                raise
            return existing, False
        return values, True

    def _join_or_open(self, signal: Signal, candidate: str, window: timedelta) -> str:
        key = {"incident_id": {"S": _POINTER_PREFIX + signal.function_name}}
        opened = stamp(signal.observed_at)
        expired = stamp(signal.observed_at - window)
        ahead = stamp(signal.observed_at + MAX_AHEAD)  # an incident opened later than this is misdated
        for _ in range(3):  # a lost race means someone else just opened one: read it again
            response = self.dynamodb.get_item(TableName=self.state_table, Key=key, ConsistentRead=True)
            latest = from_item(response["Item"]) if "Item" in response else None
            if latest is not None and expired < str(latest["opened_at"]) <= ahead:
                return str(latest["points_to"])
            try:
                self.dynamodb.put_item(
                    TableName=self.state_table,
                    Item=key | to_item({"points_to": candidate, "opened_at": opened}),
                    ConditionExpression="attribute_not_exists(incident_id) OR opened_at <= :expired"
                    " OR opened_at > :ahead",
                    ExpressionAttributeValues={":expired": {"S": expired}, ":ahead": {"S": ahead}},
                )
            except ClientError as error:
                if not _conflict(error):
                    raise
                continue
            return candidate
        return candidate

    def transition(
        self,
        incident_id: str,
        source: str,
        target: str,
        *,
        expected_updated_at: str | None = None,
        reason: str | None = None,
        category: str | None = None,
        headline: dict[str, object] | None = None,
    ) -> Item:
        """Move ``incident_id`` from ``source`` to ``target``; the new item. ``headline`` (a diagnosis'
        fault types, severity and confidence) is written with the move, for lists that read only this item.

        Raises IllegalTransition for a move the lifecycle does not have, and TransitionConflict when
        the incident is not in ``source`` (or, with ``expected_updated_at``, was updated since)."""
        if target not in TRANSITIONS.get(source, frozenset()):
            raise IllegalTransition(incident_id, source, target)
        names = {"#s": "status"}
        values = to_item({":source": source, ":target": target, ":now": stamp(self.clock())})
        sets = ["#s = :target", "updated_at = :now"]
        condition = "#s = :source"
        if expected_updated_at is not None:
            condition += " AND updated_at = :seen"
            values[":seen"] = {"S": expected_updated_at}
        if reason is not None:
            sets.append("error_reason = :reason")
            values[":reason"] = {"S": reason[:MAX_REASON_CHARS]}
        if category is not None:
            sets.append("error_category = :category")
            values[":category"] = {"S": category}
        for n, (name, value) in enumerate(to_item(headline or {}).items()):
            sets.append(f"#h{n} = :h{n}")
            names[f"#h{n}"] = name
            values[f":h{n}"] = value
        update = "SET " + ", ".join(sets)
        if target == "INVESTIGATING":
            update += " ADD investigations :one"
            values[":one"] = {"N": "1"}
        update += " REMOVE released_for"  # a release is good for the state it was given in only
        try:
            response = self.dynamodb.update_item(
                TableName=self.state_table,
                Key={"incident_id": {"S": incident_id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conflict(error):
                raise TransitionConflict(incident_id, source, self.get(incident_id)) from None
            raise
        return from_item(response["Attributes"])

    def release(self, incident_id: str, expected_updated_at: str, message_id: str) -> None:
        """Give an investigation that could not be finished back to the redelivery of ``message_id``:
        that delivery may re-enter it at once instead of waiting for it to go stale. Conditional on the
        incident being still INVESTIGATING as last seen; TransitionConflict otherwise."""
        try:
            self.dynamodb.update_item(
                TableName=self.state_table,
                Key={"incident_id": {"S": incident_id}},
                UpdateExpression="SET released_for = :message",
                ConditionExpression="#s = :investigating AND updated_at = :seen",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=to_item(
                    {":message": message_id, ":investigating": "INVESTIGATING", ":seen": expected_updated_at}
                ),
            )
        except ClientError as error:
            if _conflict(error):
                raise TransitionConflict(incident_id, "INVESTIGATING", self.get(incident_id)) from None
            raise

    # ------------------------------------------------------------------ the outcome's notification

    def claim_notification(
        self, incident_id: str, token: str, lease: timedelta, stage: str = "final"
    ) -> Item | None:
        """Take the right to publish the notification of ``stage`` of ``incident_id``; the item, or None
        when it was sent already, another delivery holds an unexpired claim, or the incident is not at that
        stage (the final one: terminal and not provisional; the provisional one: a provisional diagnosis
        whose final notification is not sent). A claim older than ``lease`` (its holder died between
        claiming and recording) can be taken over."""
        p, now = notice_prefix(stage), self.clock()
        values: dict[str, object] = {":token": token, ":now": stamp(now), ":expired": stamp(now - lease)}
        if stage == "final":
            at_stage = "#s IN (:diagnosed, :failed, :error) AND (attribute_not_exists(#f) OR #f = :true)"
            values |= {":diagnosed": "DIAGNOSED", ":failed": "FAILED", ":error": "ERROR", ":true": True}
        elif stage == "provisional":
            at_stage = "#s = :diagnosed AND #f = :false AND attribute_not_exists(notified_at)"
            values |= {":diagnosed": "DIAGNOSED", ":false": False}
        else:  # a remediation status: noticed while the incident is in it
            at_stage, values[":stage"] = "#s = :stage", stage
        try:
            response = self.dynamodb.update_item(
                TableName=self.state_table,
                Key={"incident_id": {"S": incident_id}},
                UpdateExpression=f"SET {p}notify_claim = :token, {p}notify_claimed_at = :now",
                ConditionExpression=f"{at_stage} AND attribute_not_exists({p}notified_at)"
                f" AND (attribute_not_exists({p}notify_claim) OR {p}notify_claimed_at < :expired)",
                ExpressionAttributeNames={"#s": "status"} | ({"#f": "final"} if "#f" in at_stage else {}),
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conflict(error):
                return None
            raise
        return from_item(response["Attributes"])

    def notification_sent(self, incident_id: str, token: str, message_id: str, stage: str = "final") -> None:
        """Record the published message under the claim ``token`` holds: it is never sent again."""
        p = notice_prefix(stage)
        self.dynamodb.update_item(
            TableName=self.state_table,
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression=f"SET {p}notified_at = :now, {p}notification_message_id = :message "
            f"REMOVE {p}notify_claim, {p}notify_claimed_at, {p}notify_error",
            ConditionExpression=f"{p}notify_claim = :token",
            ExpressionAttributeValues=to_item(
                {":now": stamp(self.clock()), ":message": message_id, ":token": token}
            ),
        )

    def notification_failed(self, incident_id: str, token: str, error: str, stage: str = "final") -> None:
        """Give the claim back, noting why, so that the next delivery publishes again."""
        p = notice_prefix(stage)
        self.dynamodb.update_item(
            TableName=self.state_table,
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression=f"SET {p}notify_error = :error REMOVE {p}notify_claim, {p}notify_claimed_at",
            ConditionExpression=f"{p}notify_claim = :token",
            ExpressionAttributeValues=to_item({":error": error[:MAX_REASON_CHARS], ":token": token}),
        )

    def unnotified_between(
        self, status: Status, since: datetime, until: datetime, stage: str = "final"
    ) -> list[Item]:
        """Incidents in ``status`` last updated in [``since``, ``until``] whose notification of ``stage``
        was never recorded as sent: one range query on the status index, never a scan. A claim in
        progress is not filtered out here; ``claim_notification`` refuses it."""
        items: list[Item] = []
        for page in self._query(
            KeyConditionExpression="#s = :status AND updated_at BETWEEN :since AND :until",
            FilterExpression=f"attribute_not_exists({notice_prefix(stage)}notified_at)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=to_item(
                {":status": status, ":since": stamp(since), ":until": stamp(until)}
            ),
        ):
            items.extend(from_item(item) for item in page["Items"])
        return items

    # ------------------------------------------------------------------ incident-context

    def _context(self) -> str:
        if self.context_table is None:
            raise ValueError("this IncidentStore was built without an incident-context table")
        return self.context_table

    def put_context(self, attributes: dict[str, dict[str, Any]]) -> None:
        expiry = {EXPIRES_AT: {"N": str(self._expiry(self.clock()))}}
        self.dynamodb.put_item(TableName=self._context(), Item=expiry | attributes)

    def get_context(self, incident_id: str) -> dict[str, dict[str, Any]] | None:
        response = self.dynamodb.get_item(
            TableName=self._context(), Key={"incident_id": {"S": incident_id}}, ConsistentRead=True
        )
        item: dict[str, dict[str, Any]] | None = response.get("Item")
        return item

    def update_context(self, incident_id: str, values: Mapping[str, object]) -> None:
        """Set ``values`` on ``incident_id``'s incident-context item (created when there is none, to expire
        as a new one does)."""
        names = {f"#c{n}": name for n, name in enumerate(values)} | {"#ttl": EXPIRES_AT}
        sets = [f"#c{n} = :c{n}" for n in range(len(values))] + ["#ttl = if_not_exists(#ttl, :ttl)"]
        given = {f":c{n}": value for n, value in enumerate(values.values())}
        self.dynamodb.update_item(
            TableName=self._context(),
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(given | {":ttl": self._expiry(self.clock())}),
        )
