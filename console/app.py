"""The console's Starlette application: server-rendered pages, read-only but for a decision on a plan
(``console.decision_page``), Jinja2 with autoescape on, no scripts beyond ``static/console.js`` (copy
buttons, scrolling a highlight into view), behind the request-guard layer the MCP server is served through
(``mcp_server.http_guard``): a Host outside the console's names is 421, and every page says not to frame,
sniff, cache or refer it, and to run its own script only."""

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
from console.decision_page import DecisionGate, decision_route, queue_sender
from console.drill_page import drill_route
from console.fleet_page import fleet_route
from console.incident_page import incident_route
from console.list_page import list_route
from console.settings import ConsoleSettings
from console.templating import HERE, PageRenderer, environment
from executor.approvals import Approvals
from mcp_server.http_guard import GuardPolicy, guarded, host_allow_list, page_headers
from supervisor.incident.store import dynamodb_client

# A load balancer's health check names the task's address, not the console's.
OPEN_TO_ANY_HOST = frozenset({"/healthz"})
MAX_BODY_BYTES = 16 * 1024  # the sign-in form and a decision on a plan are the console's request bodies


def create_app(settings: ConsoleSettings, session: Any) -> ASGIApp:
    """The console over ``settings``' tables, read through ``session`` (a boto3 Session). On a
    non-loopback bind every page but /healthz, /static/* and /auth/* requires a sign-in (console.auth):
    a session cookie, or a bearer key or access token; ValueError when none is configured. A Host other
    than the loopback names, the bind address, the public URL's and CONSOLE_ALLOWED_HOSTS is refused."""
    setup = sign_in(settings)
    dynamodb = dynamodb_client(session)
    reader = IncidentReader(dynamodb, settings.state_table, settings.context_table)
    page = PageRenderer(environment())
    region = getattr(session, "region_name", None)
    gate = DecisionGate(
        settings.console_approvers(),
        settings.decision_sign_in_minutes * 60,
        setup.cookies if setup is not None else None,
    )
    approvals = Approvals(dynamodb, settings.approvals_table)
    ask = queue_sender(session, settings.remediation_queue_url)
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
            decision_route(gate, reader, approvals, ask, page, settings.public_url),
            incident_route(reader, page, gate, refresh_seconds=settings.refresh_seconds, region=region),
            fleet_route(reader, page),
            drill_route(page, settings.drill_report),
            static_files(),
        ]
    )
    if setup is not None:
        app = ConsoleAuth(app, setup)
    hosts = host_allow_list(settings.host, settings.host_names())
    return guarded(app, GuardPolicy(hosts, OPEN_TO_ANY_HOST, page_headers(), MAX_BODY_BYTES))


async def home(request: Request) -> Response:
    return RedirectResponse("/incidents")


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def static_files() -> BaseRoute:
    """/static/*: the stylesheet and the script (nothing secret: open without a sign-in)."""
    return Mount("/static", StaticFiles(directory=HERE / "static"), name="static")
