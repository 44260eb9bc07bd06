"""`incident-drill`: start the sandbox and the MCP server, run every scenario through the whole loop,
print the scorecard and write drill-report.md / drill-report.json. Exit 0 when every scenario passed,
1 when one failed, 2 on bad usage or configuration."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from chaos.drill.lanes import ANSWER_LOG, claimer, run_lanes
from chaos.drill.progress import Progress
from chaos.drill.report import DrillRun, dumps, markdown, scorecard
from chaos.drill.scenarios import SCENARIOS, Scenario
from chaos.drill.settings import DrillSettings
from chaos.mcp_process import CONSOLE_STATE_FILE, ServerProcess, record, start_server
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, SandboxError, start_sandbox
from chaos.selection import select_by_name
from supervisor.orchestrator import SERVICE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-drill",
        description="Run fault scenarios through the whole loop (fault, alarm, SNS, agent, diagnosis, state) "
        "on the embedded AWS sandbox, and score them.",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="run only this scenario (repeatable); see --list",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--model", default="rules", help="supervisor model: rules (default, offline) or bedrock:<model-id>"
    )
    parser.add_argument(
        "--report-dir", type=Path, default=Path("drill-report"), help="default ./drill-report/"
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the sandbox, MCP server and incident console up afterwards, and print how to connect "
        "to them",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="split the scenarios over N lanes, each with its own sandbox, MCP server and supervisor "
        "(default DRILL_JOBS, 4; 1 with --keep-running)",
    )
    parser.add_argument("--lane", type=int, help=argparse.SUPPRESS)  # one lane of a split drill (lanes.py)
    parser.add_argument("--claims", type=Path, help=argparse.SUPPRESS)  # where the lanes claim scenarios
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(".sandbox"),
        help="sandbox files when --keep-running (default .sandbox/); otherwise a temporary directory",
    )
    return parser


def _selected(requested: list[str] | None) -> list[Scenario]:
    return select_by_name(SCENARIOS, requested, "scenario")


def _jobs(args: argparse.Namespace, settings: DrillSettings) -> int:
    if args.jobs is not None and not 1 <= args.jobs <= 8:
        raise ValueError(f"--jobs must be between 1 and 8, not {args.jobs}")
    if args.keep_running and (args.jobs or 1) > 1:
        raise ValueError("--keep-running keeps one sandbox up: it runs one lane (leave out --jobs)")
    if args.keep_running or args.lane:
        return 1
    return int(args.jobs or settings.jobs)


def _check_model(model: str) -> None:
    from supervisor.settings import SupervisorSettings

    try:
        SupervisorSettings(supervisor_model=model)
    except ValidationError as error:
        raise ValueError(error.errors()[0]["msg"].removeprefix("Value error, ")) from None


@contextmanager
def _supervisor_logs(path: Path) -> Iterator[TextIO]:
    """The supervisor's JSON logs, EMF metrics and warnings go to one file, as CloudWatch would keep them,
    instead of into the scorecard."""
    from aws_lambda_powertools import Logger

    with path.open("w") as stream:
        handler = logging.StreamHandler(stream)
        Logger(service=SERVICE, logger_handler=handler)  # the first Logger of a service fixes its handler
        root = logging.getLogger()
        file_handler = logging.StreamHandler(stream)
        file_handler.setLevel(logging.WARNING)
        root.addHandler(file_handler)
        try:
            yield stream
        finally:
            root.removeHandler(file_handler)


def _start_console(sandbox: Sandbox, report_dir: Path, state_dir: Path) -> ServerProcess | None:
    """The incident console on a free loopback port, as the sandbox's read-only console identity, over
    the drill's tables and report, left running for ``incident-sandbox down`` to stop."""
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {
        "AWS_PROFILE": names.CONSOLE,
        "CONSOLE_DRILL_REPORT": str((report_dir / "drill-report.json").resolve()),
        "CONSOLE_STATE_TABLE": names.STATE_TABLE,
        "CONSOLE_CONTEXT_TABLE": names.CONTEXT_TABLE,
    }
    log = report_dir / "console.log"
    try:
        console = start_server(env, log, detach=True, module="console.cli")
    except (RuntimeError, TimeoutError) as error:
        print(f"incident-drill: the incident console did not start ({error}); see {log}", file=sys.stderr)
        return None
    record(console, state_dir, CONSOLE_STATE_FILE)
    return console


def _connect_help(
    sandbox: Sandbox, server: ServerProcess, console: ServerProcess | None, state_dir: Path
) -> str:
    key = sandbox.world.mcp_api_key
    desktop = {
        "mcpServers": {
            "incident-response": {
                "command": "uvx",
                "args": ["mcp-proxy", f"{server.url}/sse", "-H", "Authorization", f"Bearer {key}"],
            }
        }
    }
    console_line = (
        f"  console      {console.url}/incidents (read-only console identity), pid {console.pid}\n"
        if console is not None
        else "  console      did not start (see console.log beside the reports)\n"
    )
    return f"""
The sandbox, the MCP server and the incident console are still running.
  MCP server   {server.url}/sse (SSE) and {server.url}/mcp (Streamable HTTP), pid {server.pid}
  bearer key   {key}
  AWS          source {(state_dir / "env").resolve()}   (then AWS_PROFILE=operator|mcp-server|supervisor)
{console_line}
MCP Inspector:  npx @modelcontextprotocol/inspector   → transport SSE, URL {server.url}/sse,
                header Authorization: Bearer {key}
Claude Desktop (claude_desktop_config.json):
{json.dumps(desktop, indent=2)}
Break something and ask Claude what is wrong:
  source {(state_dir / "env").resolve()}; AWS_PROFILE=operator incident-chaos iam revoke --target s3
Stop them all with:  incident-sandbox down --state-dir {state_dir}
"""


def _start_mcp_server(
    sandbox: Sandbox, args: argparse.Namespace, state_dir: Path, stack: ExitStack
) -> ServerProcess | None:
    """The MCP server as the sandbox's read-only mcp-server identity, stopped with ``stack`` unless it is
    to keep running; None (said on stderr) when it did not start."""
    answers = args.report_dir / ANSWER_LOG
    answers.unlink(missing_ok=True)  # this run's answers only
    server_env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {
        "AWS_PROFILE": names.MCP_SERVER,
        "MCP_ANSWER_LOG": str(answers.resolve()),
    }
    server_log = args.report_dir / "mcp-server.log"
    try:
        server = start_server(server_env, server_log, detach=args.keep_running)
    except (RuntimeError, TimeoutError) as error:
        print(f"incident-drill: the MCP server did not start ({error}); see {server_log}", file=sys.stderr)
        if args.keep_running:
            sandbox.stop()
        return None
    if args.keep_running:
        record(server, state_dir)
    else:
        stack.callback(server.stop)
    return server


def _report(run: DrillRun, report_dir: Path, progress: Progress, lane: int | None = None) -> None:
    """drill-report.md and drill-report.json written; the scorecard and the summary shown, unless this is
    a lane (the whole drill's are shown once the lanes are merged)."""
    (report_dir / "drill-report.md").write_text(markdown(run))
    (report_dir / "drill-report.json").write_text(dumps(run))
    if lane:
        return
    progress.note("\n" + scorecard(run) + "\n")
    progress.note(run.summary)
    progress.note(f"reports: {report_dir / 'drill-report.md'}, {report_dir / 'drill-report.json'}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for scenario in SCENARIOS:
            print(f"{scenario.name:<20} {scenario.title}  [expects {scenario.expected_label}]")
        return 0
    try:
        scenarios = _selected(args.scenario)
        _check_model(args.model)
        settings = DrillSettings()
        jobs = _jobs(args, settings)
        args.report_dir.mkdir(parents=True, exist_ok=True)
    except (ValueError, ValidationError, OSError) as error:
        print(f"incident-drill: {error}", file=sys.stderr)
        return 2
    progress = Progress(live=False if args.lane else None, lane=args.lane)
    started, started_at = time.monotonic(), datetime.now(UTC).isoformat(timespec="seconds")
    if (lanes := min(jobs, len(scenarios))) > 1:
        progress.note(f"incident-drill: {len(scenarios)} scenario(s), {lanes} lanes, model {args.model}")
        run = run_lanes(scenarios, lanes, args.model, args.report_dir, started_at)
        _report(run, args.report_dir, progress)
        return 0 if run.passed else 1
    with ExitStack() as stack:
        if args.keep_running:
            state_dir = args.state_dir
        else:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="incident-drill-")))
        progress.note(f"incident-drill: {len(scenarios)} scenario(s), model {args.model}")
        try:
            sandbox = start_sandbox(
                state_dir,
                alarm_interval_seconds=settings.alarm_interval_seconds,
                time_scale=settings.time_scale,
            )
        except SandboxError as error:
            print(f"incident-drill: {error}", file=sys.stderr)
            return 2
        if not args.keep_running:
            stack.callback(sandbox.stop)
        progress.note(f"  sandbox ready at {sandbox.endpoint_url} ({time.monotonic() - started:.1f}s)")
        server = _start_mcp_server(sandbox, args, state_dir, stack)
        if server is None:
            return 1
        progress.note(
            f"  MCP server ready at {server.url} (SSE, bearer key from SSM, read-only mcp-server identity) "
            f"({time.monotonic() - started:.1f}s)"
        )
        log = stack.enter_context(_supervisor_logs(args.report_dir / "supervisor.log"))
        # Here, not at the top: the parent of split lanes never loads the supervisor (seconds of CPU the
        # lanes need while they start).
        from chaos.drill.runner import Drill

        drill = stack.enter_context(
            Drill(
                sandbox,
                server.url,
                model=args.model,
                settings=settings,
                progress=progress,
                log=log,
                answer_log=args.report_dir / ANSWER_LOG,
            )
        )
        results = drill.run(scenarios, claimer(args.claims) if args.claims else None)
        closing = drill.closing_checks()
        actions = {identity: sorted(used) for identity, used in drill.aws_actions.items()}
        run = DrillRun(results, args.model, started_at, time.monotonic() - started, closing, actions)
        _report(run, args.report_dir, progress, args.lane)
        if args.keep_running:
            console = _start_console(sandbox, args.report_dir, state_dir)
            progress.note(_connect_help(sandbox, server, console, state_dir))
    return 0 if run.passed else 1


if __name__ == "__main__":
    sys.exit(main())
