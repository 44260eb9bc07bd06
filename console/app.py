"""The console's Starlette application: server-rendered pages, Jinja2 with autoescape on, no scripts
beyond ``static/console.js`` (copy buttons, scrolling a highlight into view)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from console import auth, render
from console.data import OPEN, BadToken, IncidentReader, account_region
from console.settings import ConsoleSettings
from supervisor.incident.store import STATUSES, dynamodb_client

HERE: Final = Path(__file__).parent
WINDOWS: Final[dict[str, timedelta | None]] = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "all": None,
}


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["quote"] = lambda value: quote(str(value), safe="")
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return env


def create_app(settings: ConsoleSettings, session: Any) -> ASGIApp:
    """The console over ``settings``' tables, read through ``session`` (a boto3 Session). On a
    non-loopback bind every page but /healthz, /static/* and /auth/* requires a sign-in (console.auth):
    a session cookie, or a bearer key or access token; ValueError when none is configured."""
    setup = auth.sign_in(settings)
    reader = IncidentReader(dynamodb_client(session), settings.state_table, settings.context_table)
    env = environment()
    region = getattr(session, "region_name", None)

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        started = time.perf_counter()
        identity = request.scope.get("state", {}).get("identity")
        body = env.get_template(name).render(identity=identity, **values)
        headers = {"Server-Timing": f"render;dur={(time.perf_counter() - started) * 1000:.1f}"}
        return HTMLResponse(body, status_code=status, headers=headers)

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
                size=settings.page_size,
                token=params.get("next") or None,
            )
        except BadToken as error:
            return PlainTextResponse(str(error), status_code=400)
        filters = {"status": status, "function": function, "since": window}
        rows = [
            {
                "summary": row,
                "account_region": account_region(row.state, region),
                "age": render.age(row.state.get("created_at"), now),
            }
            for row in listing.rows
        ]
        next_url = (
            "/incidents?" + urlencode({k: v for k, v in filters.items() if v} | {"next": listing.next_token})
            if listing.next_token
            else None
        )
        return page(
            request,
            "list.html",
            rows=rows,
            filters=filters,
            statuses=STATUSES,
            windows=list(WINDOWS),
            next_url=next_url,
            refresh=settings.refresh_seconds if any(r.is_open for r in listing.rows) else None,
        )

    async def incident(request: Request) -> Response:
        incident_id = request.path_params["incident_id"]
        found = reader.incident(incident_id)
        if found is None:
            return page(request, "missing.html", status=404, incident_id=incident_id)
        state, context = found
        diagnosis = (context or {}).get("diagnosis")
        results = list((context or {}).get("tool_results") or [])
        verification = {p["index"]: p for p in (diagnosis or {}).get("verification", {}).get("pointers", [])}
        evidence = []
        for index, pointer in enumerate((diagnosis or {}).get("evidence", [])):
            source = render.evidence_source(pointer, results)
            evidence.append(
                {
                    "index": index,
                    "pointer": pointer,
                    "check": verification.get(index),
                    "source": source,
                    "highlighted": render.highlighted(source["result"], str(pointer["value"]))
                    if source
                    else None,
                }
            )
        marks = render.timeline(diagnosis, state, context)
        prompt_tokens = int((context or {}).get("prompt_tokens", 0))
        completion_tokens = int((context or {}).get("completion_tokens", 0))
        return page(
            request,
            "incident.html",
            state=state,
            context=context,
            diagnosis=diagnosis,
            evidence=evidence,
            marks=marks,
            chart_width=render.WIDTH,
            chart_height=render.timeline_height(marks),
            account_region=account_region(state, region),
            cost=render.cost((context or {}).get("model"), prompt_tokens, completion_tokens),
            refresh=settings.refresh_seconds if state.get("status") in OPEN else None,
        )

    async def drill(request: Request) -> Response:
        path = settings.drill_report
        if not path.is_file():
            return page(request, "drill.html", report=None, path=str(path))
        report = json.loads(path.read_text())
        return page(request, "drill.html", report=report, path=str(path))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def home(request: Request) -> Response:
        return RedirectResponse("/incidents")

    app: ASGIApp = Starlette(
        routes=[
            *(auth.routes(setup, page) if setup is not None else []),
            Route("/", home),
            Route("/healthz", healthz),
            Route("/incidents", incidents),
            Route("/incidents/{incident_id:path}", incident),
            Route("/drill", drill),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
    )
    if setup is not None:
        app = auth.ConsoleAuth(app, setup)
    return app
