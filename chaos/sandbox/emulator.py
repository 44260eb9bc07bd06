"""The emulator process: moto in server mode on loopback, with our moto fixes applied.

Run by :mod:`chaos.sandbox.sandbox` as ``python -m chaos.sandbox.emulator --port N``. IAM enforcement
starts once the sandbox has bootstrapped its identities (moto's ``/moto-api/reset-auth``).

moto's own server (werkzeug's development server) closes the connection after every response, so each
AWS call of every client paid a new TCP connection and a new handler thread. The emulator serves moto's
application with cheroot instead, which keeps connections alive as AWS's endpoints do.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

from chaos.sandbox.emulator_env import UNPATCHED_ENV

# Requests that wait on others: a synchronous Invoke holds its thread for the function's run, and the
# function's own AWS calls need threads meanwhile. werkzeug had no limit; this is far above a drill's peak.
WORKER_THREADS = 128

# Idle connections kept open (cheroot's default is 10, and closes any beyond): every client of every
# identity keeps a pool of them, as AWS's SDKs do against AWS.
KEPT_CONNECTIONS = 1024

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def with_raw_uri(app: WsgiApp) -> WsgiApp:
    """moto reads the undecoded path from ``RAW_URI`` (werkzeug's and gunicorn's name), cheroot names it
    ``REQUEST_URI``; without it a signed request to a percent-encoded path fails its signature check."""

    def call(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ.setdefault("RAW_URI", environ.get("REQUEST_URI", ""))
        return app(environ, start_response)

    return call


def _memoize_action_lookup() -> None:
    """moto finds a request's handler among its response class's methods with ``inspect.getmembers``, on
    every request: 1 to 2 ms of CPU (EC2's class has hundreds). The classes no longer change once the
    emulator serves, so each class's list is read once."""
    from moto.core import responses, utils

    responses.method_names_from_class = functools.cache(utils.method_names_from_class)  # type: ignore[attr-defined]


def _share_region_lists() -> None:
    """moto lists each service's Regions with a new boto3 session for every backend it defines, on import
    and on first use: each parsed botocore's endpoint data again. The lists never
    change in a run, so one session reads each once."""
    import boto3.session

    read = boto3.session.Session.get_available_regions
    shared = boto3.session.Session()

    @functools.cache
    def regions(service: str, partition: str, allow_non_regional: bool) -> tuple[str, ...]:
        return tuple(read(shared, service, partition, allow_non_regional))

    def get_available_regions(
        self: boto3.session.Session,
        service_name: str,
        partition_name: str = "aws",
        allow_non_regional: bool = False,
    ) -> list[str]:
        return list(regions(service_name, partition_name, allow_non_regional))

    boto3.session.Session.get_available_regions = get_available_regions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    # moto reads its settings at import time: enforcement is off until the sandbox turns it on.
    os.environ.setdefault("INITIAL_NO_AUTH_ACTION_COUNT", "inf")
    # Nor does the sandbox run instances: the EC2 images moto loads for every account and Region go unread.
    os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    _share_region_lists()
    from cheroot.wsgi import Server

    _memoize_action_lookup()
    app: WsgiApp
    if os.environ.get(UNPATCHED_ENV) == "1":
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        app = DomainDispatcherApplication(create_backend_app)
    else:
        from chaos.sandbox import extensions, moto_fixes
        from chaos.sandbox.extensions import server_app

        moto_fixes.apply()
        extensions.install(f"http://{args.host}:{args.port}")
        app = server_app.application()
    server = Server((args.host, args.port), with_raw_uri(app), numthreads=WORKER_THREADS)
    server.keep_alive_conn_limit = KEPT_CONNECTIONS
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    print(f"emulator listening on http://{args.host}:{args.port}", flush=True)
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
