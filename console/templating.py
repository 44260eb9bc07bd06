"""Pages as HTML: the Jinja2 environment (autoescape on for every template and string) and the renderer
every page and the sign-in share."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

from supervisor.incident.outgoing_text import shown_controls

HERE: Final = Path(__file__).parent
Render = Callable[..., HTMLResponse]  # render(request, template, status=..., **values)


def _shown(value: Any) -> Any:
    """Every ``{{ value }}``: text with its bidirectional and other control characters shown as
    ``[U+XXXX]``, so no line is reordered or hidden (markup made in ``render`` has done this already)."""
    return shown_controls(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment() -> Environment:
    env = Environment(
        finalize=_shown,
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["quote"] = lambda value: quote(str(value), safe="")
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return env


class PageRenderer:
    """``render(request, template, status=200, **values)``: the template with the signed-in identity (if
    any), as an HTML response whose Server-Timing header says how long the rendering took."""

    def __init__(self, env: Environment) -> None:
        self._env = env

    def __call__(self, request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        started = time.perf_counter()
        identity = request.scope.get("state", {}).get("identity")
        body = self._env.get_template(name).render(identity=identity, **values)
        headers = {"Server-Timing": f"render;dur={(time.perf_counter() - started) * 1000:.1f}"}
        return HTMLResponse(body, status_code=status, headers=headers)
