"""What the console reads: pages of incidents from one index of incident-state (never a scan) and one
incident's two items. Only ``dynamodb:Query`` and ``dynamodb:GetItem`` are ever called.

A page is one range query, newest first by last update, on the index that fits its filters: a function's
incidents on ``function_name-updated_at-index``, one status's on ``status-updated_at-index``, every
incident on ``kind-updated_at-index``; a status filter the index does not key is a filter expression. A
row needs nothing but the state item: a diagnosis' headline is written onto it with the DIAGNOSED
transition. The ``next`` token is the index key of the last incident shown.

Nothing a request carries reaches DynamoDB unchecked: an incident id is a function name or ARN, ``@`` and
a time; a function filter is a function name or ARN; a token's key is an incident's key on the index the
filters choose, inside their partition.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from mcp_server.contract.history import FUNCTION_INDEX
from mcp_server.lambda_names import LAMBDA_NAME_PATTERN
from supervisor.incident.lifecycle import IN_FLIGHT, STATUSES
from supervisor.incident.signals import stamp
from supervisor.incident.stage import is_provisional
from supervisor.incident.store import (
    INCIDENT_KIND,
    INDEXES,
    RECENT_INDEX,
    STATUS_INDEX,
    from_item,
    is_incident_id,
)

OPEN: Final[frozenset[str]] = IN_FLIGHT  # a page showing one reloads itself
# What a row shows (and the index keys a token needs): never an incident's detail or notification state.
_ROW: Final = (
    "incident_id, #s, updated_at, created_at, function_name, #kind, account, #region, error_type, #src, "
    "fault_types, severity, confidence, #final"
)
_NAMES: Final = {"#s": "status", "#src": "source", "#kind": "kind", "#region": "region", "#final": "final"}
_ARN: Final = re.compile(r"^arn:aws[\w-]*:lambda:(?P<region>[\w-]+):(?P<account>\d{12}):function:")
_SORT_KEY_MAX: Final = 1024  # DynamoDB's limit for a sort key value (an empty one is refused too)
_FUNCTION: Final = re.compile(LAMBDA_NAME_PATTERN)

Attributes = dict[str, dict[str, Any]]


class BadToken(ValueError):
    """A ``next`` token this console did not issue."""


class BadFilter(ValueError):
    """A filter no incident can match."""


def _key_names(index: str) -> set[str]:
    return {"incident_id", *INDEXES[index]}


def encode_token(index: str, key: Attributes) -> str:
    text = json.dumps({"index": index, "key": key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode()


def decode_token(token: str, index: str, partition: str) -> Attributes:
    """The index key a ``next`` token resumes after; BadToken unless it was issued for ``index`` and
    names an incident in ``partition`` (the filters' value of the index's partition key)."""
    try:
        cursor = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadToken("malformed next token") from None
    if not isinstance(cursor, dict) or set(cursor) != {"index", "key"}:
        raise BadToken("malformed next token")
    if cursor["index"] != index:
        raise BadToken("the next token does not belong to these filters")
    key = cursor["key"]
    if (
        not isinstance(key, dict)
        or set(key) != _key_names(index)
        or not all(isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in key.values())
    ):
        raise BadToken("malformed next token")
    if not is_incident_id(key["incident_id"]["S"]) or not 0 < len(key["updated_at"]["S"]) <= _SORT_KEY_MAX:
        raise BadToken("malformed next token")
    if key[INDEXES[index][0]]["S"] != partition:
        raise BadToken("the next token does not belong to these filters")
    return key


@dataclass
class Summary:
    """One row of the list: the state item, with its diagnosis' headline once it has one."""

    state: dict[str, Any]

    @property
    def is_open(self) -> bool:
        return str(self.state.get("status")) in OPEN

    @property
    def fault_types(self) -> list[str]:
        return [str(fault) for fault in self.state.get("fault_types") or []]

    @property
    def severity(self) -> str | None:
        value = self.state.get("severity")
        return str(value) if value is not None else None

    @property
    def confidence(self) -> float | None:
        value = self.state.get("confidence")
        return float(value) if value is not None else None

    @property
    def is_provisional(self) -> bool:
        """A diagnosis made before the change history could be complete, not yet re-checked."""
        return is_provisional(self.state)


@dataclass
class Page:
    rows: list[Summary]
    next_token: str | None


@dataclass(frozen=True)
class _Plan:
    """The one range query that answers a page's filters."""

    index: str
    condition: str
    values: Attributes
    filter: str | None


def _plan(statuses: tuple[str, ...], function: str | None, since: datetime | None) -> _Plan:
    values: Attributes
    if function and _FUNCTION.fullmatch(function) is None:
        raise BadFilter(f"{function!r} is not a function name or ARN")
    if function:
        index, condition, values = FUNCTION_INDEX, "function_name = :key", {":key": {"S": function}}
    elif len(statuses) == 1:
        index, condition, values = STATUS_INDEX, "#s = :key", {":key": {"S": statuses[0]}}
    else:
        index, condition, values = RECENT_INDEX, "#kind = :key", {":key": {"S": INCIDENT_KIND}}
    if since is not None:
        condition += " AND updated_at >= :since"
        values[":since"] = {"S": stamp(since)}
    keyed = index == STATUS_INDEX or set(statuses) == set(STATUSES)
    if keyed:
        return _Plan(index, condition, values, None)
    wanted = {f":status{n}": {"S": status} for n, status in enumerate(statuses)}
    return _Plan(index, condition, values | wanted, f"#s IN ({', '.join(wanted)})")


class IncidentReader:
    def __init__(self, dynamodb: Any, state_table: str, context_table: str) -> None:
        self.dynamodb = dynamodb
        self.state_table = state_table
        self.context_table = context_table

    # ------------------------------------------------------------------ the list

    def page(
        self,
        *,
        statuses: tuple[str, ...] = STATUSES,
        function: str | None = None,
        since: datetime | None = None,
        size: int = 25,
        token: str | None = None,
    ) -> Page:
        """Up to ``size`` incidents, newest first, after the one ``token`` names: one range query (a
        few when a filter expression drops most of what the index holds)."""
        plan = _plan(statuses, function, since)
        start = decode_token(token, plan.index, plan.values[":key"]["S"]) if token else None
        since_key = plan.values.get(":since")
        if start is not None and since_key is not None and start["updated_at"]["S"] < since_key["S"]:
            return Page([], None)  # the window moved past the token: nothing after it is inside
        kwargs: dict[str, Any] = {"FilterExpression": plan.filter} if plan.filter else {"Limit": size + 1}
        items: list[Attributes] = []
        while len(items) <= size:  # one more than shown: whether there is a next page
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            response = self.dynamodb.query(
                TableName=self.state_table,
                IndexName=plan.index,
                KeyConditionExpression=plan.condition,
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues=plan.values,
                ProjectionExpression=_ROW,
                ScanIndexForward=False,
                **kwargs,
            )
            items.extend(response["Items"])
            start = response.get("LastEvaluatedKey")
            if start is None:
                break
        shown = items[:size]
        token = None
        if len(items) > size:
            token = encode_token(plan.index, {name: shown[-1][name] for name in _key_names(plan.index)})
        return Page([Summary(from_item(item)) for item in shown], token)

    # ------------------------------------------------------------------ one incident

    def incident(
        self, incident_id: str, *, consistent: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The state item and the decoded context item (None before an investigation recorded one); None
        for an incident that does not exist (or cannot: ``is_incident_id``). ``consistent``: the state
        as last written (a decision is checked against it)."""
        if not is_incident_id(incident_id):
            return None
        key = {"incident_id": {"S": incident_id}}
        response = self.dynamodb.get_item(TableName=self.state_table, Key=key, ConsistentRead=consistent)
        if "Item" not in response or "status" not in response["Item"]:
            return None
        state = from_item(response["Item"])
        item = self.dynamodb.get_item(TableName=self.context_table, Key=key).get("Item")
        return state, (decode_context(item) if item else None)


def decode_context(item: Attributes) -> dict[str, Any]:
    """The incident-context item with its JSON and gzip attributes opened."""
    plain = from_item(item)
    for name in (
        "diagnosis",
        "provisional_diagnosis",
        "recheck_changes",
        "reasoning_chain",
        "token_usage",
        "incident",
        "plan",
        "plan_review",
        "execution",
    ):
        if isinstance(plain.get(name), str):
            plain[name] = json.loads(plain[name])
    if isinstance(plain.get("tool_results"), bytes):
        plain["tool_results"] = json.loads(gzip.decompress(plain["tool_results"]))
    return plain


def account_region(state: Mapping[str, Any], default_region: str | None) -> tuple[str, str]:
    """Where the incident's function runs: as the signal placed it (its alarm's or its topic's ARN), from
    a function ARN, or else the console's own region and an unknown account."""
    if state.get("account") and state.get("region"):
        return str(state["account"]), str(state["region"])
    match = _ARN.match(str(state.get("function_name", "")))
    if match:
        return match["account"], match["region"]
    return "-", default_region or "-"
