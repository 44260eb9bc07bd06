"""``POST /_sandbox/cloudwatch/reset``: forget every metric datapoint and put every alarm back to
INSUFFICIENT_DATA, without notifying anyone.

On AWS an alarm on one-minute metrics cannot fire twice within its period; a drill that runs scenarios
seconds apart, or a test suite, starts each one with a clean CloudWatch instead. Nothing but the sandbox's
own harness calls it; the diagnosis never sees it happen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

from moto.cloudwatch.models import cloudwatch_backends
from werkzeug.wrappers import Request, Response

from chaos.sandbox.extensions import server_app

RESET_PATH = "/_sandbox/cloudwatch/reset"
# Held by a reset, by an alarm evaluation pass and by any emulator thread that writes datapoints, so none
# lands (or is judged) across a reset.
LOCK = threading.RLock()
_listeners: list[Callable[[], None]] = []


def on_reset(listener: Callable[[], None]) -> None:
    """Call ``listener`` (under ``LOCK``) after every reset: for extensions that keep metric state."""
    _listeners.append(listener)


def reset() -> None:
    with LOCK:
        _reset_backends()
        for listener in _listeners:
            listener()


def _reset_backends() -> None:
    for regions in list(cloudwatch_backends.values()):
        for backend in list(regions.values()):
            backend.metric_data = []
            backend.paged_metric_data = {}
            for alarm in list(backend.alarms.values()):
                alarm.update_state("Reset by the sandbox", "{}", "INSUFFICIENT_DATA")


def _reset(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if Request(environ).method != "POST":
        return Response("POST to reset CloudWatch\n", status=405)(environ, start_response)
    reset()
    return Response(status=204)(environ, start_response)


def install() -> None:
    server_app.mount(RESET_PATH, _reset)
