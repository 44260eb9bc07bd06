"""`incident-diagnose`: run one diagnosis of a Lambda function and print the report (or its JSON)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
import uuid

import boto3
from botocore.exceptions import BotoCoreError, ClientError, ProfileNotFound
from pydantic import ValidationError

from mcp_server.contract import GetLambdaConfigArgs
from supervisor.agent.mcp_key import resolve_mcp_key
from supervisor.agent.models import build_model
from supervisor.agent.report import as_json, progress_line, render
from supervisor.agent.run import run_agent
from supervisor.incident.replay import load_recorded, replay
from supervisor.incident.store import IncidentStore, dynamodb_client
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

EXIT_DIAGNOSED, EXIT_NO_DIAGNOSIS, EXIT_USAGE, EXIT_AGENT_ERROR, EXIT_REPLAY_DIFFERS = 0, 1, 2, 3, 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-diagnose",
        description="Diagnose a failing Lambda function through the MCP diagnostic server. Settings also "
        "come from the environment (SUPERVISOR_MODEL, MCP_SERVER_URL, MCP_API_KEY, ...).",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--lambda", dest="lambda_name", help="function name or ARN to diagnose live")
    target.add_argument(
        "--replay",
        metavar="INCIDENT_ID",
        help="re-run a recorded investigation from its tool results in incident-context (no MCP server "
        "needed) and check its replay hash; exit 4 when the hash differs",
    )
    parser.add_argument("--mcp-url", help="MCP server URL, '.../sse' or '.../mcp' (default: MCP_SERVER_URL)")
    parser.add_argument(
        "--model",
        help="'rules', 'bedrock:<model-id>' or 'provider:model' (default: SUPERVISOR_MODEL or rules)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a report")
    parser.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    loop = parser.add_argument_group("the whole loop (--remediate, with --lambda)")
    loop.add_argument(
        "--remediate",
        action="store_true",
        help="open an incident, diagnose it (re-checked once CloudTrail has delivered), plan and review the "
        "fix, ask you to approve it as your own AWS identity (one of REMEDIATION_APPROVERS), then have the "
        "executor apply it and prove recovery or undo it; exit 0 only when REMEDIATED",
    )
    loop.add_argument(
        "--supervisor-profile",
        default="supervisor",
        help="the AWS profile the supervisor's part runs as (default: the sandbox's supervisor)",
    )
    loop.add_argument(
        "--executor-profile",
        default="executor",
        help="the AWS profile the executor runs as (default: the sandbox's executor)",
    )
    return parser


def _details(error: ValidationError) -> str:
    return "; ".join(e["msg"] for e in error.errors(include_url=False))


def _fail(message: str, code: int) -> int:
    print(f"incident-diagnose: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    try:
        if args.lambda_name is not None:
            GetLambdaConfigArgs(lambda_name=args.lambda_name)
        overrides = {"mcp_server_url": args.mcp_url, "supervisor_model": args.model}
        settings = SupervisorSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as error:
        return _fail(f"invalid input: {_details(error)}", EXIT_USAGE)

    if args.remediate and (args.json or args.replay is not None):
        return _fail(
            "--remediate takes --lambda and asks you at a terminal: no --json or --replay", EXIT_USAGE
        )
    if args.replay is not None:
        return _replay(args.replay, settings, as_json_output=args.json)
    if args.remediate:
        return _remediate(args, {k: v for k, v in overrides.items() if v is not None}, settings)

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


def _remediate(args: argparse.Namespace, overrides: dict[str, str], settings: SupervisorSettings) -> int:
    from executor.approvals import ApprovalRefused  # the executor's side: this command only
    from executor.terminal import LoopStopped, TerminalLoop

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        loop = TerminalLoop(
            person=boto3.Session(),
            supervisor=boto3.Session(profile_name=args.supervisor_profile),
            executor=boto3.Session(profile_name=args.executor_profile),
            say=say,
            show=print,
            ask=input,
            sleep=time.sleep,
        )
        model = build_model(settings.supervisor_model, settings)
        say(f"Remediating {args.lambda_name} with {settings.supervisor_model} via {settings.mcp_server_url}")
        status = loop.run(args.lambda_name, overrides, model, lambda r: say(progress_line(r)))
    except ProfileNotFound as error:
        return _fail(f"{error}: --remediate runs on the sandbox (source .sandbox/env)", EXIT_USAGE)
    except ValidationError as error:
        return _fail(f"invalid executor settings: {_details(error)}", EXIT_USAGE)
    except AgentError as error:
        return _fail(str(error), EXIT_USAGE if error.category == "config" else EXIT_AGENT_ERROR)
    except (LoopStopped, ApprovalRefused) as stopped:
        return _fail(str(stopped), EXIT_NO_DIAGNOSIS)
    except KeyboardInterrupt:
        return _fail(
            "interrupted: what was recorded stands (incident-remediate show reads it)", EXIT_NO_DIAGNOSIS
        )
    except (ClientError, BotoCoreError) as error:
        return _fail(f"AWS refused or failed: {error}", EXIT_AGENT_ERROR)
    return EXIT_DIAGNOSED if status == "REMEDIATED" else EXIT_NO_DIAGNOSIS


def _replay(incident_id: str, settings: SupervisorSettings, *, as_json_output: bool) -> int:
    store = IncidentStore(
        dynamodb_client(boto3.Session()), settings.incident_state_table, settings.incident_context_table
    )
    try:
        recorded = load_recorded(store, incident_id)
    except LookupError as error:
        return _fail(str(error), EXIT_USAGE)
    except (ClientError, BotoCoreError) as error:
        return _fail(f"could not read {settings.incident_context_table}: {error}", EXIT_AGENT_ERROR)
    try:
        outcome = asyncio.run(replay(recorded, settings=settings))
    except AgentError as error:
        return _fail(str(error), EXIT_AGENT_ERROR)
    verdict = {
        "incident_id": incident_id,
        "recorded_model": recorded.model,
        "replay_model": settings.supervisor_model,
        "recorded_hash": recorded.replay_hash,
        "replay_hash": outcome.replay_hash,
        "matches": outcome.matches,
    }
    if as_json_output:
        report = json.loads(as_json(outcome.result, recorded.function_name)) | {"replay": verdict}
        print(json.dumps(report, indent=2))
    else:
        same = "matches the recorded hash" if outcome.matches else f"DIFFERS from {recorded.replay_hash}"
        print(render(outcome.result, recorded.function_name))
        print(f"Replay:       {settings.supervisor_model}, hash {outcome.replay_hash} {same}")
    return EXIT_DIAGNOSED if outcome.matches else EXIT_REPLAY_DIFFERS


if __name__ == "__main__":
    sys.exit(main())
