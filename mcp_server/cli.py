"""`incident-mcp-server`: serve the diagnostic tools over SSE + Streamable HTTP (default), or stdio."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

import anyio
import uvicorn
from botocore.exceptions import BotoCoreError
from pydantic import ValidationError

from mcp_server.app import Transport, build_app
from mcp_server.aws import AwsClients, RegionNotConfigured
from mcp_server.claude_config import claude_desktop_config, config_warnings
from mcp_server.http_server import uvicorn_config
from mcp_server.keys import KeyConfigurationError, WeakKeyError, require_strong_keys, resolve_api_keys
from mcp_server.logging_setup import configure_logging
from mcp_server.oauth import OAuthConfigurationError, OAuthMode, oauth_mode
from mcp_server.server import build_server
from mcp_server.settings import LOOPBACK_HOSTS, ServerSettings

logger = logging.getLogger("incident-mcp-server")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-mcp-server",
        description="Read-only Lambda diagnostic tools over MCP. AWS access uses the standard AWS "
        "configuration chain (AWS_PROFILE, AWS_REGION, ...).",
    )
    parser.add_argument(
        "--transport",
        choices=["both", "sse", "http", "stdio"],
        default="both",
        help="both (default): SSE at /sse and Streamable HTTP at /mcp on one port; stdio: local MCP hosts",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve HTTP without bearer auth; refused unless bound to a loopback address",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument(
        "--print-claude-config",
        action="store_true",
        help="print the claude_desktop_config.json entry that runs this server over stdio with this "
        "environment's AWS configuration (absolute paths, no secrets), and exit",
    )
    return parser


def _print_claude_config() -> int:
    for warning in config_warnings(os.environ):
        print(f"incident-mcp-server: {warning}", file=sys.stderr)
    print(json.dumps(claude_desktop_config(os.environ), indent=2))
    return 0


def _start_refused(error: Exception) -> str:
    """Why the server does not start, for its configuration's author."""
    if isinstance(error, ValidationError):
        return f"invalid configuration:\n{error}"
    if isinstance(error, OAuthConfigurationError):
        return f"invalid configuration: {error}"
    if isinstance(error, KeyConfigurationError):
        return f"refusing to start without a bearer key: {error}"
    if isinstance(error, BotoCoreError | RegionNotConfigured):  # e.g. an AWS_PROFILE that does not exist
        return f"AWS configuration problem: {error}"
    return str(error)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.print_claude_config:
        return _print_claude_config()
    configure_logging(args.log_level)  # JSON lines on stderr: stdout belongs to the protocol under stdio
    if args.insecure_no_auth and args.transport != "stdio" and args.host not in LOOPBACK_HOSTS:
        print(
            "incident-mcp-server: --insecure-no-auth is only allowed on a loopback address", file=sys.stderr
        )
        return 2
    http = args.transport != "stdio"
    oauth: OAuthMode | None = None
    try:
        settings = ServerSettings()
        server = build_server(settings, AwsClients.create(settings))
        if http and not args.insecure_no_auth:
            oauth = oauth_mode(settings, host=args.host, port=args.port)
            keys = resolve_api_keys(settings)
            if args.host not in LOOPBACK_HOSTS:
                require_strong_keys(keys, f"incident-mcp-server on {args.host} (not loopback)")
        else:
            keys = []
    except (
        ValidationError,
        OAuthConfigurationError,
        WeakKeyError,
        KeyConfigurationError,
        BotoCoreError,
        RegionNotConfigured,
    ) as error:
        print(f"incident-mcp-server: {_start_refused(error)}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        anyio.run(server.run_stdio_async)
        return 0
    if not keys and oauth is None:
        logger.warning("serving WITHOUT authentication on %s (loopback only)", args.host)
    transports: frozenset[Transport] = (
        frozenset({"sse", "http"}) if args.transport == "both" else frozenset({args.transport})
    )
    app = build_app(server, settings, host=args.host, keys=keys, transports=transports, oauth=oauth)
    paths = {"both": "/sse and /mcp", "sse": "/sse", "http": "/mcp"}[args.transport]
    tokens = f"access tokens from {settings.mcp_oauth_issuer}" if oauth else "no access tokens"
    logger.info(
        "serving %s on http://%s:%d (%d accepted key(s), %s)", paths, args.host, args.port, len(keys), tokens
    )
    config = uvicorn_config(
        app,
        host=args.host,
        port=args.port,
        header_timeout=settings.mcp_request_header_timeout,
        keep_alive=settings.mcp_keep_alive_timeout,
        log_level=args.log_level,
    )
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
