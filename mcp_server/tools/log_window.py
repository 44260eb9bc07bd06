"""A log window read newest first, within a budget of events, with ``FilterLogEvents`` alone.

``FilterLogEvents`` answers in ascending time, interleaving every stream of the group, and its
``startTime`` and ``endTime`` are inclusive. So the window is read in time slices taken backwards from its
end: the last minute first, then slices sized from the density read so far to hold about half of the
budget left. Each slice is read whole or not kept: one that holds more than three quarters of the budget
left (a quarter of the budget until a slice is kept) is cut in half toward its newer end, or shorter where
what it read shows a denser part, and read again (three times at most; what it read still counts against
the budget). What is kept is always every event from some instant to the window's end, across
all streams: the newest part of the window, without a hole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PAGE_LIMIT = 10_000  # the most events one FilterLogEvents page may hold
FIRST_SLICE_MS = 60_000
MAX_SLICES = 12
MAX_OVERFLOWS = 3
LEAST_SHARE = 16  # stop once less than 1/16 of the budget is left


@dataclass(frozen=True)
class Suffix:
    """The newest part of a window that was read: ``events`` (ascending) are every event from
    ``read_from_ms`` to the window's end; ``scanned`` counts every event fetched, overflowed slices too."""

    events: list[dict[str, Any]]
    read_from_ms: int
    scanned: int


def scan(logs_client: Any, request: dict[str, Any], cap: int) -> tuple[list[dict[str, Any]], bool]:
    """Every matching event, page by page, up to ``cap``; and whether the scan was complete."""
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        paging = {"nextToken": token} if token else {}
        page = logs_client.filter_log_events(**request, **paging, limit=min(PAGE_LIMIT, cap - len(events)))
        events += page.get("events", [])
        token = page.get("nextToken")
        if not token:
            return events, True
        if len(events) >= cap:
            return events, False


def _cap(budget: int, left: int, kept: list[list[dict[str, Any]]]) -> int:
    """The most events the next slice may hold: three quarters of the budget left, and a quarter of the
    budget until a slice is kept (the density is unknown until then); a slice is sized to hold two thirds
    of it."""
    return max(1, left * 3 // 4 if kept else min(left, budget // 4))


def _newest(events: list[dict[str, Any]]) -> int:
    return max(int(event["timestamp"]) for event in events)


def _span(events: int, covered_ms: int, target: int, rest_ms: int) -> int:
    """A slice's length: ``target`` events at the density of ``events`` over ``covered_ms``; the rest of the
    window when nothing was found yet."""
    if events == 0:
        return rest_ms
    return max(1, min(rest_ms, target * covered_ms // events))


def newest_suffix(logs_client: Any, request: dict[str, Any], budget: int) -> Suffix:
    """The newest events of ``request``'s window (``startTime`` to ``endTime``), newest slice first,
    fetching at most ``budget`` events in all."""
    start_ms, end_ms = int(request["startTime"]), int(request["endTime"])
    slices: list[list[dict[str, Any]]] = []
    cursor, kept, scanned, overflows = end_ms, 0, 0, 0  # every event after ``cursor`` is read
    newest_ms, span = end_ms, FIRST_SLICE_MS
    while cursor >= start_ms and len(slices) < MAX_SLICES:
        left = budget - scanned
        if left < 1 or (slices and left < budget // LEAST_SHARE):
            break
        low = max(start_ms, cursor - span + 1)
        events, whole = scan(
            logs_client, request | {"startTime": low, "endTime": cursor}, _cap(budget, left, slices)
        )
        scanned += len(events)
        if whole:
            newest_ms = _newest(events) if events and not kept else newest_ms
            slices.append(events)
            kept += len(events)
            cursor = low - 1
            target = _cap(budget, budget - scanned, slices) * 2 // 3
            if target < 1:
                break
            # The density from the newest event found: a quiet last stretch would make it look sparser.
            span = _span(kept, newest_ms - cursor, target, cursor - start_ms + 1)
            continue
        overflows += 1
        target = _cap(budget, budget - scanned, slices) * 2 // 3
        if overflows > MAX_OVERFLOWS or span == 1 or target < 1:
            break
        # Halved toward the newer end, or shorter still as dense as the part it read.
        stretch = _newest(events) - min(int(event["timestamp"]) for event in events) + 1
        span = max(1, min(span // 2, _span(len(events), stretch, target, span)))
    return Suffix([event for chunk in reversed(slices) for event in chunk], cursor + 1, scanned)
