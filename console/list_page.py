"""/incidents: one page of incidents, newest first, filtered by status, function and time window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from console import render
from console.data import BadFilter, BadToken, IncidentReader, Page, account_region
from console.templating import Render
from supervisor.incident.lifecycle import STATUSES

WINDOWS: Final[dict[str, timedelta | None]] = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "all": None,
}


def list_route(
    reader: IncidentReader, page: Render, *, page_size: int, refresh_seconds: int, region: str | None
) -> Route:
    async def incidents(request: Request) -> Response:
        params = request.query_params
        status = params.get("status", "")
        function = params.get("function", "").strip()
        window = params.get("since", "all")
        if status and status not in STATUSES:
            return PlainTextResponse(f"unknown status {status!r}", status_code=400)
        if window not in WINDOWS:
            return PlainTextResponse(f"unknown window {window!r}", status_code=400)
        now = datetime.now(UTC)
        delta = WINDOWS[window]
        try:
            listing = reader.page(
                statuses=(status,) if status else STATUSES,
                function=function or None,
                since=now - delta if delta is not None else None,
                size=page_size,
                token=params.get("next") or None,
            )
        except (BadToken, BadFilter) as error:
            return PlainTextResponse(str(error), status_code=400)
        filters = {"status": status, "function": function, "since": window}
        return page(
            request,
            "list.html",
            rows=_rows(listing, region, now),
            filters=filters,
            statuses=STATUSES,
            windows=list(WINDOWS),
            next_url=_next_url(filters, listing.next_token),
            refresh=refresh_seconds if any(r.is_open for r in listing.rows) else None,
        )

    return Route("/incidents", incidents)


def _rows(listing: Page, region: str | None, now: datetime) -> list[dict[str, Any]]:
    return [
        {
            "summary": row,
            "account_region": account_region(row.state, region),
            "age": render.age(row.state.get("created_at"), now),
        }
        for row in listing.rows
    ]


def _next_url(filters: dict[str, str], next_token: str | None) -> str | None:
    """The next page's URL: the same filters (those set) and the token, when there is a next page."""
    if not next_token:
        return None
    return "/incidents?" + urlencode({k: v for k, v in filters.items() if v} | {"next": next_token})
