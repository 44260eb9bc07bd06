"""The ``LookupEvents`` calls behind ``get_recent_changes``: what finds a write in an account whose event
history is mostly reads, within CloudTrail's rate and the tool's deadline.

``LookupEvents`` takes one lookup attribute per call and answers 50 events a page, newest first, at most
two calls a second per account and Region. Event history records reads as well as writes, and reads are
most of it in a busy account (every ``Get*``, ``List*``, ``Describe*``, this server's own among them), so a
lookup by resource name can spend its pages on reads of the function before it reaches the write that
broke it. So, in each Region:

1. one lookup of the writes (``ReadOnly`` = false), newest first, each event kept for every search it
   matches (by resource name or ARN, or event name and the search's own test) — it covers the window when
   the Region's writes fit in its pages, whatever the reads;
2. when it did not cover the window, each search's own lookup (by ``ResourceName`` or ``EventName``) over
   the part it did not reach, its reads skipped — it covers a resource whose writes are few among many.

Measured on a read-heavy account by ``bench/change_lookups.py``: writes first finds the trigger within
budget where resource names first does not. Every call waits for its turn on the account's and Region's
:class:`~mcp_server.pacing.Pacer`; a lookup stops when its page cap is reached or its next turn would
come too near the tool's deadline, and says where it stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext

PAGE_SIZE = 50  # the most events one LookupEvents page may hold
WRITE_PAGES = 10  # per Region: the writes lookup
SEARCH_PAGES = 10  # per search, over what the writes lookup did not reach
PAGE_MARGIN_SECONDS = 3.0  # no further page is asked for when less of the tool's deadline is left
WRITES = {"AttributeKey": "ReadOnly", "AttributeValue": "false"}


@dataclass(frozen=True)
class Search:
    """The events whose ``attribute`` (resources by default) include ``name``, and of those the ones ``keep``
    accepts (given the CloudTrail record), when it is set."""

    label: str  # e.g. "role data-processor-role"
    name: str
    region: str
    attribute: str = "ResourceName"
    keep: Callable[[dict[str, Any]], bool] | None = None

    def matches(self, event: dict[str, Any], record: dict[str, Any]) -> bool:
        """Whether ``event`` (a write) is one this search's own lookup would find and keep."""
        if self.attribute in ("EventName", "EventSource"):
            found = event.get(self.attribute) == self.name
        else:
            names = {r.get("ResourceName") for r in event.get("Resources") or []}
            arns = {r.get("ARN") for r in record.get("resources") or []}
            found = self.name in names | arns
        return found and (self.keep is None or self.keep(record))


@dataclass(frozen=True)
class Found:
    """What one search or lookup found, page by page."""

    events: list[dict[str, Any]]  # the changing events, newest first
    more: bool  # older matching events were left unread
    stopped: str | None = None  # why the window was not covered, when it was not
    reached: datetime | None = None  # then: the time of the oldest event read


def _record(event: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(event.get("CloudTrailEvent") or "{}")
    return record


class Lookups:
    """The lookups of one tool call over ``start``..``end``; ``limit``: the most events answered."""

    def __init__(self, ctx: ToolContext, start: datetime, end: datetime, limit: int) -> None:
        self._ctx = ctx
        self._start, self._end = start, end
        self._limit = limit

    def found(self, searches: list[Search]) -> list[Found | None]:
        """Each search's events (None where its lookups failed; a gap says why)."""
        regions = list(dict.fromkeys(search.region for search in searches))
        by_region = self._ctx.reads.many([self._region_read(region, searches) for region in regions])
        found = dict(zip(regions, by_region, strict=True))
        return [None if found[s.region] is None else found[s.region][i] for i, s in enumerate(searches)]

    def _region_read(self, region: str, searches: list[Search]) -> Read:
        labels = ", ".join(search.label for search in searches if search.region == region)
        return Read(
            "cloudtrail:LookupEvents",
            f"the writes in {region}",
            lambda: self._in_region(region, searches),
            f"changes to {labels} in the window are unknown",
        )

    def _in_region(self, region: str, searches: list[Search]) -> dict[int, Found]:
        """The searches of ``region`` (by their index in ``searches``): the writes lookup, then each search's
        own lookup over what it did not reach."""
        mine = {i: search for i, search in enumerate(searches) if search.region == region}

        def wanted(event: dict[str, Any]) -> bool:
            record = _record(event)
            return any(search.matches(event, record) for search in mine.values())

        writes = self._pages(region, WRITES, wanted, WRITE_PAGES)
        matched = {i: [e for e in writes.events if s.matches(e, _record(e))] for i, s in mine.items()}
        if writes.stopped is None:
            return {i: Found(matched[i], writes.more) for i in mine}
        older = self._ctx.reads.many(
            [self._search_read(search, writes.reached or self._end) for search in mine.values()]
        )
        found: dict[int, Found] = {}
        for (i, _), pages in zip(mine.items(), older, strict=True):
            if pages is None:  # its gap says why and from when; the writes read still stand
                found[i] = Found(matched[i], more=True)
                continue
            seen = {e["EventId"] for e in matched[i]}
            events = matched[i] + [e for e in pages.events if e["EventId"] not in seen]
            found[i] = Found(events, pages.more, pages.stopped, pages.reached)
        return found

    def _search_read(self, search: Search, before: datetime) -> Read:
        attribute = {"AttributeKey": search.attribute, "AttributeValue": search.name}
        keep = search.keep

        def wanted(event: dict[str, Any]) -> bool:
            return keep is None or keep(_record(event))

        return Read(
            "cloudtrail:LookupEvents",
            f"{search.label} ({search.region})",
            lambda: self._pages(search.region, attribute, wanted, SEARCH_PAGES, before),
            f"changes to {search.label} before {before.isoformat()} are unknown",
        )

    def _pages(
        self,
        region: str,
        attribute: dict[str, str],
        wanted: Callable[[dict[str, Any]], bool],
        cap: int,
        before: datetime | None = None,
    ) -> Found:
        """The ``wanted`` writes one lookup finds, newest first, until the window before ``before`` is
        covered, ``limit`` of them are held, or the cap or the deadline stops it."""
        client = (
            self._ctx.clients.cloudtrail
            if region == self._ctx.clients.region
            else self._ctx.clients.global_cloudtrail
        )
        pacer = self._ctx.clients.lookup_pacer(region)
        params: dict[str, Any] = {
            "LookupAttributes": [attribute],
            "MaxResults": PAGE_SIZE,
            "StartTime": self._start,
            "EndTime": before or self._end,
        }
        events: list[dict[str, Any]] = []
        reached: datetime | None = None
        for _ in range(cap):
            if not pacer.wait(within=self._ctx.reads.remaining() - PAGE_MARGIN_SECONDS):
                return Found(events, True, "the tool's deadline was near", reached or before)
            page = client.lookup_events(**params)
            listed = page.get("Events", [])  # a page may be empty and still have a NextToken
            events += [e for e in listed if e.get("ReadOnly") != "true" and wanted(e)]
            reached = listed[-1]["EventTime"] if listed else reached
            token = page.get("NextToken")
            if token is None or len(events) >= self._limit:
                return Found(events, more=token is not None)
            params["NextToken"] = token
        return Found(events, True, f"its cap of {cap} pages of {PAGE_SIZE} was reached", reached or before)
