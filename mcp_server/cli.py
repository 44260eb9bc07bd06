"""`incident-mcp-server`: serve the diagnostic tools over SSE + Streamable HTTP (default), or stdio."""

from __future__ import annotations

import argparse
import logging
import sys

import anyio
import uvicorn
from botocore.exceptions import BotoCoreError
from pydantic import ValidationError

from mcp_server.app import Transport, build_app
from mcp_server.aws import AwsClients
from mcp_server.keys import KeyConfigurationError, resolve_api_keys
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # stdout belongs to the protocol under stdio: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    # The AWS SDK's DEBUG output dumps request and response bodies (the SSM key among them): never below INFO.
    for noisy in ("botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger().level))
    if args.insecure_no_auth and args.transport != "stdio" and args.host not in LOOPBACK_HOSTS:
        print(
            "incident-mcp-server: --insecure-no-auth is only allowed on a loopback address", file=sys.stderr
        )
        return 2
    try:
        settings = ServerSettings()
        server = build_server(settings, AwsClients.create(settings))
        keys = [] if args.insecure_no_auth or args.transport == "stdio" else resolve_api_keys(settings)
    except ValidationError as error:
        print(f"incident-mcp-server: invalid configuration:\n{error}", file=sys.stderr)
        return 2
    except KeyConfigurationError as error:
        print(f"incident-mcp-server: refusing to start without a bearer key: {error}", file=sys.stderr)
        return 2
    except BotoCoreError as error:  # e.g. an AWS_PROFILE that does not exist
        print(f"incident-mcp-server: AWS configuration problem: {error}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        anyio.run(server.run_stdio_async)
        return 0
    if not keys:
        logger.warning("serving WITHOUT authentication on %s (loopback only)", args.host)
    transports: frozenset[Transport] = (
        frozenset({"sse", "http"}) if args.transport == "both" else frozenset({args.transport})
    )
    app = build_app(server, settings, host=args.host, keys=keys, transports=transports)
    paths = {"both": "/sse and /mcp", "sse": "/sse", "http": "/mcp"}[args.transport]
    logger.info("serving %s on http://%s:%d (%d accepted key(s))", paths, args.host, args.port, len(keys))
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level.lower(), access_log=False, lifespan="on"
    )
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
