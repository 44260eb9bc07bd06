"""What the console reads: pages of incidents from the status index (never a scan) and one incident's
two items. Only ``dynamodb:Query`` and ``dynamodb:GetItem`` are ever called.

The list is newest first by last update across the statuses asked for: each status is one range query
on ``status-updated_at-index`` (descending), and a page is the merge of those answers. The ``next``
token records, per status, the index key of the last incident shown (or that the status is exhausted),
so the next page resumes each query exactly where the merge stopped.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import heapq
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from supervisor.incident.signals import stamp
from supervisor.incident.store import STATUS_INDEX, STATUSES, from_item

OPEN: Final[frozenset[str]] = frozenset({"RECEIVED", "INVESTIGATING"})
_INDEX_KEY: Final[tuple[str, ...]] = ("incident_id", "status", "updated_at")
# What a row shows: the list never reads an incident's detail or notification attributes.
_ROW: Final = "incident_id, #s, updated_at, created_at, function_name, error_type, #src"
_HEADLINES: Final = 10_000  # diagnosed incidents whose headline is kept in memory
_ARN: Final = re.compile(r"^arn:aws[\w-]*:lambda:(?P<region>[\w-]+):(?P<account>\d{12}):function:")

Attributes = dict[str, dict[str, Any]]


def _is_string(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {"S"} and isinstance(value["S"], str)


class BadToken(ValueError):
    """A ``next`` token this console did not issue."""


def encode_token(cursors: dict[str, Attributes | None]) -> str:
    return base64.urlsafe_b64encode(json.dumps(cursors, separators=(",", ":")).encode()).decode()


def decode_token(token: str, statuses: tuple[str, ...]) -> dict[str, Attributes | None]:
    try:
        cursors = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadToken("malformed next token") from None
    if not isinstance(cursors, dict) or not set(cursors) <= set(statuses):
        raise BadToken("the next token does not belong to these filters")
    for key in cursors.values():
        if key is not None and (
            not isinstance(key, dict)
            or set(key) != set(_INDEX_KEY)
            or not all(
                isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in key.values()
            )
        ):
            raise BadToken("malformed next token")
    return cursors


@dataclass
class Summary:
    """One row of the list: the state item and what its diagnosis says, if there is one yet."""

    state: dict[str, Any]
    fault_types: list[str] = field(default_factory=list)
    severity: str | None = None
    confidence: float | None = None

    @property
    def is_open(self) -> bool:
        return str(self.state.get("status")) in OPEN


@dataclass
class Page:
    rows: list[Summary]
    next_token: str | None


@dataclass
class _Run:
    """One status's answer: its items newest first, and whether the query has more after them."""

    status: str
    items: list[Attributes]
    more: bool


def _keyed(run: _Run) -> list[tuple[str, str, str, Attributes]]:
    return [(item["updated_at"]["S"], item["incident_id"]["S"], run.status, item) for item in run.items]


class IncidentReader:
    def __init__(self, dynamodb: Any, state_table: str, context_table: str, workers: int = 8) -> None:
        self.dynamodb = dynamodb
        self.state_table = state_table
        self.context_table = context_table
        self.workers = workers
        # DIAGNOSED is terminal and its context item is written once: its headline never changes.
        self._headlines: dict[str, tuple[tuple[str, ...], str | None, float | None]] = {}

    # ------------------------------------------------------------------ the list

    def _run(
        self, status: str, start: Attributes | None, want: int, function: str | None, since: datetime | None
    ) -> _Run:
        condition = "#s = :status"
        values: Attributes = {":status": {"S": status}}
        kwargs: dict[str, Any] = {}
        if since is not None:
            condition += " AND updated_at >= :since"
            values[":since"] = {"S": stamp(since)}
        if function:
            kwargs["FilterExpression"] = "function_name = :function"
            values[":function"] = {"S": function}
        if not function:
            kwargs["Limit"] = want
        # With a filter most of a page may not match: each request reads a full (1 MB) page of the index
        # rather than many narrow ones; only the matches come back.
        items: list[Attributes] = []
        while True:
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            response = self.dynamodb.query(
                TableName=self.state_table,
                IndexName=STATUS_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeNames={"#s": "status", "#src": "source"},
                ExpressionAttributeValues=values,
                ProjectionExpression=_ROW,
                ScanIndexForward=False,
                **kwargs,
            )
            items.extend(response["Items"])
            start = response.get("LastEvaluatedKey")
            if start is None:
                return _Run(status, items[:want], more=len(items) > want)
            if len(items) >= want:
                return _Run(status, items[:want], more=True)

    def page(
        self,
        *,
        statuses: tuple[str, ...] = STATUSES,
        function: str | None = None,
        since: datetime | None = None,
        size: int = 25,
        token: str | None = None,
    ) -> Page:
        cursors: dict[str, Attributes | None] = (
            decode_token(token, statuses) if token else dict.fromkeys(statuses)
        )
        with ThreadPoolExecutor(len(cursors)) as pool:  # one range query per status, side by side
            runs = list(
                pool.map(lambda status: self._run(status, cursors[status], size, function, since), cursors)
            )
        merged = heapq.merge(
            *(
                [(item["updated_at"]["S"], item["incident_id"]["S"], run.status, item) for item in run.items]
                for run in runs
            ),
            reverse=True,
        )
        shown: list[Attributes] = []
        last: dict[str, Attributes] = {}
        for _, _, status, item in merged:
            if len(shown) == size:
                break
            shown.append(item)
            last[status] = item
        following: dict[str, Attributes | None] = {}
        for run in runs:
            used = sum(1 for item in shown if item["status"]["S"] == run.status)
            if used == len(run.items) and not run.more:
                continue  # exhausted
            following[run.status] = (
                {key: last[run.status][key] for key in _INDEX_KEY} if used else cursors[run.status]
            )
        rows = self._summaries([from_item(item) for item in shown])
        return Page(rows, encode_token(following) if following else None)

    def _summaries(self, states: list[dict[str, Any]]) -> list[Summary]:
        """Each row with its diagnosis' headline, one GetItem per incident, a few at a time."""

        def summary(state: dict[str, Any]) -> Summary:
            row = Summary(state)
            if state.get("status") != "DIAGNOSED":
                return row
            known = self._headlines.get(str(state["incident_id"]))
            if known is not None:
                row.fault_types, row.severity, row.confidence = list(known[0]), known[1], known[2]
                return row
            response = self.dynamodb.get_item(
                TableName=self.context_table,
                Key={"incident_id": {"S": str(state["incident_id"])}},
                ProjectionExpression="diagnosis",
            )
            text = response.get("Item", {}).get("diagnosis", {}).get("S")
            if text:
                diagnosis = json.loads(text)
                row.fault_types = list(diagnosis.get("fault_types", []))
                row.severity = diagnosis.get("severity")
                row.confidence = diagnosis.get("confidence")
                if len(self._headlines) >= _HEADLINES:
                    self._headlines.clear()
                self._headlines[str(state["incident_id"])] = (
                    tuple(row.fault_types),
                    row.severity,
                    row.confidence,
                )
            return row

        if not any(state.get("status") == "DIAGNOSED" for state in states):
            return [Summary(state) for state in states]
        with ThreadPoolExecutor(min(self.workers, len(states))) as pool:
            return list(pool.map(summary, states))

    # ------------------------------------------------------------------ one incident

    def incident(self, incident_id: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The state item and the decoded context item (None before an investigation recorded one)."""
        key = {"incident_id": {"S": incident_id}}
        response = self.dynamodb.get_item(TableName=self.state_table, Key=key)
        if "Item" not in response or "status" not in response["Item"]:
            return None
        state = from_item(response["Item"])
        item = self.dynamodb.get_item(TableName=self.context_table, Key=key).get("Item")
        return state, (decode_context(item) if item else None)


def decode_context(item: Attributes) -> dict[str, Any]:
    """The incident-context item with its JSON and gzip attributes opened."""
    plain = from_item(item)
    for name in ("diagnosis", "reasoning_chain", "token_usage", "incident"):
        if isinstance(plain.get(name), str):
            plain[name] = json.loads(plain[name])
    if isinstance(plain.get("tool_results"), bytes):
        plain["tool_results"] = json.loads(gzip.decompress(plain["tool_results"]))
    return plain


def account_region(function_name: str, default_region: str | None) -> tuple[str, str]:
    """From a function ARN; a bare name is in the console's own account and region."""
    match = _ARN.match(function_name)
    if match:
        return match["account"], match["region"]
    return "-", default_region or "-"
