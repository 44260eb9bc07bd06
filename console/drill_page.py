"""/drill: the last drill's scorecard, read from the JSON report the drill wrote (CONSOLE_DRILL_REPORT)."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.templating import Render


def drill_route(page: Render, report_path: Path) -> Route:
    def drill(request: Request) -> Response:  # a file read: Starlette runs it in its thread pool
        if not report_path.is_file():
            return page(request, "drill.html", report=None, path=str(report_path))
        report = json.loads(report_path.read_text())
        return page(request, "drill.html", report=report, path=str(report_path))

    return Route("/drill", drill)
