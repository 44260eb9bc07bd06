"""`incident-diagnose`: run one diagnosis of a Lambda function and print the report (or its JSON)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import uuid

from pydantic import ValidationError

from mcp_server.contract import GetLambdaConfigArgs
from supervisor.models import build_model
from supervisor.report import as_json, progress_line, render
from supervisor.run import resolve_mcp_key, run_agent
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

EXIT_DIAGNOSED, EXIT_NO_DIAGNOSIS, EXIT_USAGE, EXIT_AGENT_ERROR = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-diagnose",
        description="Diagnose a failing Lambda function through the MCP diagnostic server. Settings also "
        "come from the environment (SUPERVISOR_MODEL, MCP_SERVER_URL, MCP_API_KEY, ...).",
    )
    parser.add_argument("--lambda", dest="lambda_name", required=True, help="function name or ARN")
    parser.add_argument("--mcp-url", help="MCP server URL, '.../sse' or '.../mcp' (default: MCP_SERVER_URL)")
    parser.add_argument(
        "--model",
        help="'rules', 'bedrock:<model-id>' or 'provider:model' (default: SUPERVISOR_MODEL or rules)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a report")
    parser.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    return parser


def _fail(message: str, code: int) -> int:
    print(f"incident-diagnose: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    try:
        GetLambdaConfigArgs(lambda_name=args.lambda_name)
        overrides = {"mcp_server_url": args.mcp_url, "supervisor_model": args.model}
        settings = SupervisorSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as error:
        details = "; ".join(e["msg"] for e in error.errors(include_url=False))
        return _fail(f"invalid input: {details}", EXIT_USAGE)

    def show(record: object) -> None:
        if not args.quiet:
            print(progress_line(record), file=sys.stderr, flush=True)  # type: ignore[arg-type]

    incident_id = f"manual-{uuid.uuid4().hex[:12]}"
    incident = {"source": "incident-diagnose", "function_name": args.lambda_name}
    try:
        model = build_model(settings.supervisor_model, settings)
        api_key = resolve_mcp_key(settings)
        if not args.quiet:
            print(
                f"Diagnosing {args.lambda_name} with {settings.supervisor_model} "
                f"via {settings.mcp_server_url}",
                file=sys.stderr,
            )
        result = asyncio.run(
            run_agent(
                incident,
                incident_id,
                args.lambda_name,
                settings=settings,
                api_key=api_key,
                model=model,
                on_record=show,
            )
        )
    except AgentError as error:
        code = EXIT_USAGE if error.category == "config" else EXIT_AGENT_ERROR
        return _fail(str(error), code)
    print(as_json(result, args.lambda_name) if args.json else render(result, args.lambda_name))
    return EXIT_DIAGNOSED if result.diagnosis is not None else EXIT_NO_DIAGNOSIS


if __name__ == "__main__":
    sys.exit(main())
