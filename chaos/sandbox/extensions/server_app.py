"""Where emulator extensions meet requests: extra routes and middleware on moto's WSGI app.

The emulator serves :func:`application`: moto's ``DomainDispatcherApplication`` subclassed, the one place
that sees every request, signed or not, before moto picks a backend, without patching moto's routing or
any service's own dispatch (S3, for one, authorizes inside its handlers rather than in
``BaseResponse.call_action``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

Middleware = Callable[[WSGIApplication], WSGIApplication]

_routes: dict[str, WSGIApplication] = {}
_middleware: list[Middleware] = []


def mount(prefix: str, app: WSGIApplication) -> None:
    """Serve every path that starts with ``prefix`` with ``app``; use a prefix moto never serves
    (``/_sandbox/``: no S3 bucket name starts with an underscore)."""
    _routes[prefix] = app


def wrap(middleware: Middleware) -> None:
    """Pass every request moto serves through ``middleware``; the first one registered is outermost."""
    _middleware.append(middleware)


class _SandboxApp(DomainDispatcherApplication):
    def __init__(self, create_app: Callable[[Any], Any]) -> None:
        super().__init__(create_app)
        app: WSGIApplication = super().__call__
        for middleware in reversed(_middleware):
            app = middleware(app)
        self._app = app
        self._backends: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        """moto's answer, once per host: it lists its own package directory and tries its URL patterns on
        every request (a fifth of the emulator's CPU in the drill), and a host's backend never changes.
        moto calls this holding its dispatch lock."""
        if host not in self._backends:
            self._backends[host] = super().get_backend_for_host(host)
        return self._backends[host]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        for prefix, app in _routes.items():
            if path.startswith(prefix):
                return app(environ, start_response)
        return self._app(environ, start_response)


def application() -> WSGIApplication:
    """moto's app with every route and middleware registered so far."""
    return _SandboxApp(create_backend_app)
