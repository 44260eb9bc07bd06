"""`incident-console`: serve the read-only incident console (loopback by default), with uvicorn as the
MCP server runs it (a deadline for request heads, JSON log lines)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import uvicorn
from pydantic import ValidationError

from console.app import create_app
from console.settings import ConsoleSettings
from mcp_server.aws import default_session
from mcp_server.http_server import uvicorn_config
from mcp_server.logging_setup import configure_logging

LOG_LEVEL = "INFO"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-console",
        description="Serve the read-only incident console over the incident-state and incident-context "
        "tables (settings from CONSOLE_*; AWS from the standard chain).",
    )
    parser.add_argument("--host", help="address to bind (default CONSOLE_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default CONSOLE_PORT, 8088)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = ConsoleSettings(**overrides)
        app = create_app(settings, default_session())
    except (ValidationError, ValueError) as error:
        print(f"incident-console: {error}", file=sys.stderr)
        return 2
    configure_logging(LOG_LEVEL)  # JSON lines on stderr: a request path cannot forge a line
    where = f"http://{settings.host}:{settings.port}"
    public = f" (public URL {settings.public_url})" if settings.public_url and not settings.loopback() else ""
    print(f"incident-console on {where}/incidents{public}", flush=True)
    config = uvicorn_config(
        app,
        host=settings.host,
        port=settings.port,
        header_timeout=settings.request_header_timeout,
        keep_alive=settings.keep_alive_timeout,
        log_level=LOG_LEVEL,
    )
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
