"""The console's Starlette application: server-rendered pages, Jinja2 with autoescape on, no scripts
beyond ``static/console.js`` (copy buttons, scrolling a highlight into view)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from console.auth import ConsoleAuth, sign_in
from console.auth_routes import AuthRoutes
from console.data import IncidentReader
from console.drill_page import drill_route
from console.incident_page import incident_route
from console.list_page import list_route
from console.settings import ConsoleSettings
from console.templating import HERE, PageRenderer, environment
from supervisor.incident.store import dynamodb_client


def create_app(settings: ConsoleSettings, session: Any) -> ASGIApp:
    """The console over ``settings``' tables, read through ``session`` (a boto3 Session). On a
    non-loopback bind every page but /healthz, /static/* and /auth/* requires a sign-in (console.auth):
    a session cookie, or a bearer key or access token; ValueError when none is configured."""
    setup = sign_in(settings)
    reader = IncidentReader(dynamodb_client(session), settings.state_table, settings.context_table)
    page = PageRenderer(environment())
    region = getattr(session, "region_name", None)
    app: ASGIApp = Starlette(
        routes=[
            *(AuthRoutes(setup, page).routes() if setup is not None else []),
            Route("/", home),
            Route("/healthz", healthz),
            list_route(
                reader,
                page,
                page_size=settings.page_size,
                refresh_seconds=settings.refresh_seconds,
                region=region,
            ),
            incident_route(reader, page, refresh_seconds=settings.refresh_seconds, region=region),
            drill_route(page, settings.drill_report),
            static_files(),
        ]
    )
    if setup is not None:
        app = ConsoleAuth(app, setup)
    return app


async def home(request: Request) -> Response:
    return RedirectResponse("/incidents")


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def static_files() -> BaseRoute:
    """/static/*: the stylesheet and the script (nothing secret: open without a sign-in)."""
    return Mount("/static", StaticFiles(directory=HERE / "static"), name="static")
