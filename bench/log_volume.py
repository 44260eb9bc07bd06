"""``get_recent_logs`` on a log group with 100,000 events in its window: latency, against reading every
event of the window with plain ``FilterLogEvents`` paging in the same run, and whether every error line
the answer's cap leaves room for is returned. ``--format json`` writes the events in Lambda's JSON log
format (application records, and the Python runtime's JSON error record for the error lines) instead of
text lines.

    python -m bench.log_volume [--events 100000] [--errors 50] [--runs 3] [--format text|json] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentLogsArgs, LogsResponse
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings

FUNCTION = "log-volume-bench"
GROUP = f"/aws/lambda/{FUNCTION}"
BATCH = 10_000  # the most events one PutLogEvents call takes
WINDOW_MS = 20 * 60_000


@dataclass
class Result:
    log_format: str
    events: int
    errors_in_window: int
    errors_returned: int
    returned_events: int
    tool_median_ms: float
    scan_median_ms: float
    ratio: float


def _is_error(index: int, every: int) -> bool:
    return index % every == every // 2


def _message(index: int, every: int) -> str:
    if _is_error(index, every):
        return f"[ERROR] {index:06d} AccessDenied: not authorized to perform s3:GetObject"
    return f"INFO {index:06d} processed batch of 25 orders"


def _json_message(index: int, every: int) -> str:
    """The JSON log format's application record, or the Python runtime's JSON error record (``log_level``,
    ``errorType``, ``errorMessage``, ``requestId``, ``stackTrace``) for the error lines."""
    request = f"00000000-0000-4000-8000-{index:012d}"
    if _is_error(index, every):
        return json.dumps(
            {
                "timestamp": "2026-11-22T00:00:00Z",
                "log_level": "ERROR",
                "errorMessage": f"{index:06d} not authorized to perform s3:GetObject",
                "errorType": "AccessDenied",
                "requestId": request,
                "stackTrace": ['  File "/var/task/app.py", line 12, in handler\n'],
            }
        )
    return json.dumps(
        {
            "timestamp": "2026-11-22T00:00:00.000Z",
            "level": "INFO",
            "requestId": request,
            "message": f"{index:06d} processed batch of 25 orders",
        }
    )


def _returned_errors(answer: LogsResponse, log_format: str) -> int:
    marker = '"errorType"' if log_format == "json" else "[ERROR]"
    return sum(1 for event in answer.events if marker in event.message)


def _seed(
    sandbox: Sandbox, events: int, errors: int, log_format: str, progress: Callable[[str], None]
) -> int:
    logs = sandbox.session(names.OPERATOR).client("logs")
    logs.create_log_group(logGroupName=GROUP)
    every = max(1, events // errors)
    write = _json_message if log_format == "json" else _message
    start = int(time.time() * 1000) - WINDOW_MS
    for batch_start in range(0, events, BATCH):
        stream = f"2026/11/22/[$LATEST]{batch_start // BATCH:04d}"
        logs.create_log_stream(logGroupName=GROUP, logStreamName=stream)
        indices = range(batch_start, min(events, batch_start + BATCH))
        logs.put_log_events(
            logGroupName=GROUP,
            logStreamName=stream,
            logEvents=[
                {"timestamp": start + index * WINDOW_MS // events, "message": write(index, every)}
                for index in indices
            ],
        )
        progress(f"seeded {min(events, batch_start + BATCH)}/{events} events")
    return sum(1 for index in range(events) if _is_error(index, every))


def _scan_all(sandbox: Sandbox) -> float:
    logs = sandbox.session(names.MCP_SERVER).client("logs")
    now = int(time.time() * 1000)
    started = time.perf_counter()
    token: str | None = None
    while True:
        page = logs.filter_log_events(
            logGroupName=GROUP,
            startTime=now - 30 * 60_000,
            endTime=now,
            limit=BATCH,
            **({"nextToken": token} if token else {}),
        )
        token = page.get("nextToken")
        if not token:
            return (time.perf_counter() - started) * 1000


def run(
    events: int,
    errors: int,
    runs: int,
    progress: Callable[[str], None] = lambda _: None,
    *,
    log_format: str = "text",
) -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp, running_sandbox(Path(tmp)) as sandbox:
        in_window = _seed(sandbox, events, errors, log_format, progress)
        settings = ServerSettings()
        runner = ToolRunner(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
        tool_ms: list[float] = []
        scan_ms: list[float] = []
        answer: LogsResponse | None = None
        for number in range(runs):
            scan_ms.append(_scan_all(sandbox))
            started = time.perf_counter()
            result = runner.run("get_recent_logs", GetRecentLogsArgs(lambda_name=FUNCTION))
            tool_ms.append((time.perf_counter() - started) * 1000)
            assert isinstance(result, LogsResponse)
            answer = result
            progress(f"run {number + 1}/{runs}")
        assert answer is not None
        returned = _returned_errors(answer, log_format)
        tool, scan = statistics.median(tool_ms), statistics.median(scan_ms)
        return Result(
            log_format,
            events,
            in_window,
            returned,
            answer.returned_events,
            round(tool, 1),
            round(scan, 1),
            round(tool / scan, 2),
        )


def render(result: Result) -> str:
    every = "every" if result.errors_returned == result.errors_in_window else "NOT every"
    which = ", JSON log format" if result.log_format == "json" else ""
    return "\n".join(
        [
            "| case | median |",
            "| --- | ---: |",
            f"| read the whole window with FilterLogEvents (baseline) | {result.scan_median_ms:.1f} ms |",
            f"| get_recent_logs (30 minutes, limit 100{which}) | {result.tool_median_ms:.1f} ms "
            f"({result.ratio:.2f}x) |",
            "",
            f"{result.events} events in the window, {result.errors_in_window} of them error lines: "
            f"the answer holds {result.returned_events} events, {every} error line ({result.errors_returned}/"
            f"{result.errors_in_window}).",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000, help="events in the window (default 100000)")
    parser.add_argument("--errors", type=int, default=50, help="error lines among them (default 50)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (default 3)")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="the log format the events are written in (default text)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.events < 1 or not 1 <= args.errors <= args.events or args.runs < 1:
        parser.error("need --events >= 1, 1 <= --errors <= --events, --runs >= 1")
    result = run(
        args.events,
        args.errors,
        args.runs,
        lambda line: print(line, file=sys.stderr, flush=True),
        log_format=args.format,
    )
    print(json.dumps(asdict(result), indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
