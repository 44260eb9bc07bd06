"""``get_recent_logs`` on a busy function whose failures are only in the newest minutes, against other ways
of reading the same window: how long each takes, how many AWS reads it makes (calls, events read), and
whether it finds the newest failures (their reports) and the last success before them.

The world, in a sandbox of its own: ``--events`` of everyday traffic for ``data-processor`` over the last
25 minutes across ``--streams`` log streams (chaos/workload/traffic.py; ``--errors`` of its invocations
also print an error-like line about a call they retried), then the s3 actions taken out of its role
(iam-s3) and ``--failures`` invocations that fail in the sandbox's runtime. ``--format json`` switches the
function to Lambda's JSON log format first. The ways of reading a 30-minute window:

- a full scan: ``FilterLogEvents`` paging over the whole window (the baseline);
- oldest first: ``FilterLogEvents`` up to ``LOGS_SCAN_LIMIT`` events, then one lookup per error term over
  the whole window (the tool before issue 41);
- Logs Insights: ``fields @timestamp, @message, @logStream | sort @timestamp desc | limit 10000``;
- ``GetLogEvents`` backwards: ``DescribeLogStreams`` by last event time, then each stream's newest events,
  kept from the latest instant every cut-off stream reaches (a newest part without a hole);
- ``get_recent_logs``: newest first in time slices (mcp_server/tools/log_window.py), then the error terms
  over the older part it did not read.

The emulator answers Insights at once and reads every event of a group on each ``FilterLogEvents`` call
whatever its time range: times are the sandbox's, calls and events read are what AWS would see.

    python -m bench.log_volume [--events 100000] [--streams 50] [--errors 30] [--failures 3] [--runs 3]
                               [--format text|json] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from chaos.faults.chaos import Chaos
from chaos.faults.iam import REVOKE_S3
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.traffic import RETRIED, Traffic, write_traffic
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentLogsArgs, LogsResponse
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings
from mcp_server.tools.envelope import place
from mcp_server.tools.log_window import scan
from mcp_server.tools.logs import ERROR_TERMS

FUNCTION = names.FUNCTION_NAME
MINUTE_MS = 60_000
WINDOW_MS = 30 * MINUTE_MS  # the tool's default window
INSIGHTS_QUERY = "fields @timestamp, @message, @logStream | sort @timestamp desc | limit 10000"
Events = list[dict[str, Any]]


@dataclass
class Row:
    case: str
    filter_calls: int
    other_calls: str  # the other CloudWatch Logs calls, e.g. "StartQuery 1, GetQueryResults 1"
    events_read: int
    median_ms: float
    failures_found: int
    last_success_found: bool


@dataclass
class Result:
    log_format: str
    events: int
    streams: int
    failures: int
    retried_lines: int
    retried_returned: int
    returned_events: int
    rows: list[Row]


@dataclass(frozen=True)
class World:
    traffic: Traffic
    failed: tuple[str, ...]  # request ids of the failed invocations


class Calls:
    """The CloudWatch Logs calls made through a client, and how many events (or query rows) they returned."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.events = 0
        client.meta.events.register("after-call.cloudwatch-logs", self._count)

    def _count(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self.counts[model.name] += 1
        self.events += len(parsed.get("events") or parsed.get("results") or [])

    def reset(self) -> None:
        self.counts.clear()
        self.events = 0

    def others(self) -> str:
        return ", ".join(
            f"{name} {n}" for name, n in sorted(self.counts.items()) if name != "FilterLogEvents"
        )


def _world(
    sandbox: Sandbox, events: int, streams: int, errors: int, failures: int, log_format: str, say: Any
) -> World:
    """The traffic, then iam-s3 and ``failures`` invocations that fail; the role restored afterwards."""
    operator = sandbox.session(names.OPERATOR)
    if log_format == "json":
        operator.client("lambda").update_function_configuration(
            FunctionName=FUNCTION, LoggingConfig={"LogFormat": "JSON"}
        )
    now_ms = int(time.time() * 1000)
    traffic = write_traffic(
        operator,
        FUNCTION,
        events=events,
        streams=streams,
        start_ms=now_ms - 25 * MINUTE_MS,
        end_ms=now_ms - MINUTE_MS // 2,
        retried=errors,
        progress=say,
    )
    chaos = Chaos(operator, say=lambda _: None)
    chaos.inject(REVOKE_S3, FUNCTION)
    try:
        with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as runtime:
            ran = [runtime.invoke(FUNCTION, names.input_event()) for _ in range(failures)]
    finally:
        chaos.restore(REVOKE_S3, FUNCTION)
    if any(invocation.status != "failed" for invocation in ran):
        raise RuntimeError(f"expected {failures} failed invocations: {[i.status for i in ran]}")
    return World(traffic, tuple(invocation.request_id for invocation in ran))


def _window(group: str) -> dict[str, Any]:
    now_ms = int(time.time() * 1000)
    return {"logGroupName": group, "startTime": now_ms - WINDOW_MS, "endTime": now_ms}


def full_scan(logs: Any, group: str, budget: int) -> Events:
    return scan(logs, _window(group), sys.maxsize)[0]


def oldest_first(logs: Any, group: str, budget: int) -> Events:
    """The tool before: the window oldest first up to the budget, then every error term over all of it."""
    request = _window(group)
    read, whole = scan(logs, request, budget)
    if whole:
        return read
    found = {e["eventId"]: e for e in read}
    for term in ERROR_TERMS:
        found |= {e["eventId"]: e for e in scan(logs, request | {"filterPattern": term}, budget)[0]}
    return sorted(found.values(), key=lambda event: event["timestamp"])


def _instant(value: str) -> int:
    """An Insights ``@timestamp``: AWS gives '2026-01-02 03:04:05.678', the emulator epoch milliseconds."""
    if value.isdigit():
        return int(value)
    return int(datetime.fromisoformat(value.replace(" ", "T") + "+00:00").timestamp() * 1000)


def insights(logs: Any, group: str, budget: int) -> Events:
    window = _window(group)
    query = logs.start_query(
        logGroupName=group,
        startTime=window["startTime"] // 1000,
        endTime=window["endTime"] // 1000 + 1,
        queryString=INSIGHTS_QUERY,
    )
    while (answer := logs.get_query_results(queryId=query["queryId"]))["status"] in ("Scheduled", "Running"):
        time.sleep(0.1)
    rows = [{field["field"]: field["value"] for field in row} for row in answer["results"]]
    events = [
        {"timestamp": _instant(r["@timestamp"]), "message": r["@message"], "logStreamName": r["@logStream"]}
        for r in rows
    ]
    return sorted(events, key=lambda event: event["timestamp"])


def _active_streams(logs: Any, group: str, start_ms: int) -> list[str]:
    """The streams with an event after ``start_ms``, the latest first (``lastEventTimestamp`` is eventually
    consistent on AWS: typically within an hour)."""
    found: list[str] = []
    token: dict[str, str] = {}
    while True:
        page = logs.describe_log_streams(
            logGroupName=group, orderBy="LastEventTime", descending=True, **token
        )
        for stream in page["logStreams"]:
            if stream.get("lastEventTimestamp", 0) < start_ms:
                return found
            found.append(stream["logStreamName"])
        if "nextToken" not in page:
            return found
        token = {"nextToken": page["nextToken"]}


def get_log_events_backwards(logs: Any, group: str, budget: int) -> Events:
    window = _window(group)
    streams = _active_streams(logs, group, window["startTime"])
    share = max(1, min(10_000, budget // max(1, len(streams))))
    read: Events = []
    reaches = [window["startTime"]]  # how far back every stream cut off by the share was read
    for stream in streams:
        page = logs.get_log_events(
            logGroupName=group,
            logStreamName=stream,
            startTime=window["startTime"],
            endTime=window["endTime"],
            startFromHead=False,
            limit=share,
        )["events"]
        read += [event | {"logStreamName": stream} for event in page]
        if len(page) == share:
            reaches.append(page[0]["timestamp"])
    kept = [event for event in read if event["timestamp"] >= max(reaches)]
    return sorted(kept, key=lambda event: event["timestamp"])


def _found(events: Events, world: World) -> tuple[int, bool]:
    """How many failed invocations' reports were read; whether the last success's start and report were."""
    seen = {(where.kind, where.request_id) for where in place(events)}
    failures = sum(("report", request) in seen for request in world.failed)
    newest = world.traffic.newest_request_id
    return failures, {("start", newest), ("report", newest)} <= seen


def _timed(runs: int, read: Callable[[], Any], calls: Calls) -> tuple[Any, float]:
    times: list[float] = []
    answer: Any = None
    for _ in range(runs):
        calls.reset()
        started = time.perf_counter()
        answer = read()
        times.append((time.perf_counter() - started) * 1000)
    return answer, round(statistics.median(times), 1)


Reader = Callable[[Any, str, int], Events]  # (logs client, log group, scan limit) -> the events read
READERS: tuple[tuple[str, Reader, str], ...] = (  # (case, how, as whom: the MCP server lacks the others)
    ("full scan of the window with FilterLogEvents (baseline)", full_scan, names.MCP_SERVER),
    ("oldest first to the scan limit, then error terms (before)", oldest_first, names.MCP_SERVER),
    ("Logs Insights, sort @timestamp desc, limit 10000", insights, names.OPERATOR),
    ("GetLogEvents backwards over the newest streams", get_log_events_backwards, names.OPERATOR),
)


def _reader(sandbox: Sandbox, world: World, budget: int, runs: int, reader: tuple[str, Reader, str]) -> Row:
    case, read, identity = reader
    logs = sandbox.session(identity).client("logs")
    calls = Calls(logs)
    got, median = _timed(runs, lambda: read(logs, world.traffic.group, budget), calls)
    return Row(
        case, calls.counts["FilterLogEvents"], calls.others(), calls.events, median, *_found(got, world)
    )


def _tool(sandbox: Sandbox, world: World, runs: int) -> tuple[Row, LogsResponse]:
    settings = ServerSettings()
    clients = AwsClients.create(settings, sandbox.session(names.MCP_SERVER))
    calls = Calls(clients.client("logs"))
    runner = ToolRunner(settings, clients)
    args = GetRecentLogsArgs(lambda_name=FUNCTION, limit=100)
    answer, median = _timed(runs, lambda: runner.run("get_recent_logs", args), calls)
    assert isinstance(answer, LogsResponse)
    shown = {i.request_id: i for i in answer.invocations}
    failures = sum(shown[r].outcome != "no_error_seen" for r in world.failed if r in shown)
    last = shown.get(world.traffic.newest_request_id)
    found = last is not None and last.started is not None and last.outcome == "no_error_seen"
    row = Row(
        "get_recent_logs: newest first in time slices, then error terms over the rest",
        calls.counts["FilterLogEvents"],
        calls.others(),
        calls.events,
        median,
        failures,
        found,
    )
    return row, answer


def run(
    events: int,
    streams: int,
    errors: int,
    failures: int,
    runs: int,
    progress: Callable[[str], None] = lambda _: None,
    *,
    log_format: str = "text",
) -> Result:
    budget = ServerSettings().logs_scan_limit
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp, running_sandbox(Path(tmp)) as sandbox:
        world = _world(sandbox, events, streams, errors, failures, log_format, progress)
        rows = [_reader(sandbox, world, budget, runs, reader) for reader in READERS]
        progress("measured the other ways")
        row, answer = _tool(sandbox, world, runs)
        rows.append(row)
    retried = sum(1 for e in answer.events if e.message.startswith(RETRIED.split("{", 1)[0]))
    return Result(
        log_format, world.traffic.events, streams, failures, errors, retried, answer.returned_events, rows
    )


def render(result: Result) -> str:
    which = " (JSON log format)" if result.log_format == "json" else ""
    every = "every" if result.retried_returned == result.retried_lines else "NOT every"
    return "\n".join(
        [
            "| how the window is read | FilterLogEvents calls | other calls | events read | median "
            "| newest failures found | last success found |",
            "| --- | ---: | --- | ---: | ---: | ---: | --- |",
            *(
                f"| {r.case} | {r.filter_calls} | {r.other_calls or '-'} | {r.events_read} | "
                f"{r.median_ms:.1f} ms | {r.failures_found}/{result.failures} | "
                f"{'yes' if r.last_success_found else 'NO'} |"
                for r in result.rows
            ),
            "",
            f"{result.events} events of everyday traffic{which} across {result.streams} log streams over 25 "
            f"minutes, then {result.failures} failed invocations; get_recent_logs (30 minutes, limit 100) "
            f"answers with {result.returned_events} events, {every} line about a retried call among them "
            f"({result.retried_returned}/{result.retried_lines}).",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000, help="events of traffic (default 100000)")
    parser.add_argument("--streams", type=int, default=50, help="log streams (default 50)")
    parser.add_argument("--errors", type=int, default=30, help="invocations retrying a call (default 30)")
    parser.add_argument("--failures", type=int, default=3, help="failed invocations at the end (default 3)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each way (default 3)")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="the function's log format (default text)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if min(args.events, args.streams, args.failures, args.runs) < 1 or args.errors < 0:
        parser.error("need --events, --streams, --failures, --runs >= 1 and --errors >= 0")
    result = run(
        args.events,
        args.streams,
        args.errors,
        args.failures,
        args.runs,
        lambda line: print(line, file=sys.stderr, flush=True),
        log_format=args.format,
    )
    print(json.dumps(asdict(result), indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
