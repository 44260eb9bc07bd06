"""What MCP costs: per-tool latency through MCP (SSE and Streamable HTTP, with auth) against the same tool
function called in-process, throughput of concurrent clients, and server memory across many SSE sessions.

    .venv/bin/python -m bench.mcp_overhead            # full run, about nine minutes on 2 cores
    .venv/bin/python -m bench.mcp_overhead --quick    # seconds; checks the benchmark still runs

Everything runs against a fresh sandbox: the server is the shipped ``incident-mcp-server`` in its own
process, as the read-only ``mcp-server`` profile; the direct calls use the same profile from this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import anyio.to_thread
from mcp.client.session import ClientSession
from mcp_types import CallToolResult

from chaos.mcp_process import server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract.registry import TOOL_NAMES, TOOLS, ToolName
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings
from tests.mcp_support import TRANSPORTS, Transport, mcp_session

ADDED_TARGET_MS = 3.0  # at p50, MCP may add the SDK's ping and this much to the direct call
MEMORY_TARGET_MB = 10.0


@dataclass(frozen=True)
class Config:
    samples: int = 200  # per tool and path
    clients: int = 100
    calls_per_client: int = 20
    throughput_runs: int = 3
    sessions: int = 2_000
    session_concurrency: int = 10


QUICK = Config(
    samples=5, clients=4, calls_per_client=3, throughput_runs=1, sessions=20, session_concurrency=4
)


@dataclass
class Latency:
    tool: ToolName
    p50_ms: dict[str, float] = field(default_factory=dict)  # path -> p50
    p95_ms: dict[str, float] = field(default_factory=dict)
    check_ms: float = 0.0  # p50 of the SDK client's JSON-schema check of one answer (validate_tool_result)
    answer_kb: float = 0.0  # the structured answer, as JSON

    def added(self, transport: Transport) -> float:
        return self.p50_ms[transport] - self.p50_ms["direct"]

    def ping(self, transport: Transport) -> float:
        return self.p50_ms[f"ping-{transport}"]


@dataclass
class Throughput:
    calls: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.seconds


@dataclass
class Report:
    latency: list[Latency]
    ping_p50_ms: dict[str, float]  # transport -> p50 of a ping in a loop of pings, no tool call between
    throughput: dict[str, list[Throughput]]  # transport -> one entry per run
    sessions: int
    rss_before_mb: float
    rss_after_mb: float
    clients: int = 0  # in each throughput run, each making calls_per_client calls
    calls_per_client: int = 0

    def within(self, row: Latency, transport: Transport) -> str:
        """'yes': added p50 within ping + 3 ms; 'floor': within once the client's schema check of the answer
        is taken off; 'no': neither."""
        limit = row.ping(transport) + ADDED_TARGET_MS
        if row.added(transport) <= limit:
            return "yes"
        return "floor" if row.added(transport) - row.check_ms <= limit else "no"

    @property
    def memory_growth_mb(self) -> float:
        return self.rss_after_mb - self.rss_before_mb


def _direct_calls(sandbox: Sandbox) -> dict[ToolName, Callable[[], object]]:
    """The tool functions exactly as the server runs them, bound to the same identity and settings."""
    settings = ServerSettings()
    runner = ToolRunner(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    return {
        tool: partial(
            runner.run, tool, TOOLS[tool].arguments.model_validate({"lambda_name": names.FUNCTION_NAME})
        )
        for tool in TOOL_NAMES
    }


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def _call_tool(session: ClientSession, tool: ToolName) -> CallToolResult:
    result = await session.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def _check_ms(session: ClientSession, tool: ToolName, samples: int) -> tuple[float, float]:
    """p50 of the SDK client's own check of one answer against the tool's output schema (part of every
    ``call_tool``), and the answer's size in KB."""
    result = await _call_tool(session, tool)
    times = [await _timed(partial(session.validate_tool_result, tool, result)) for _ in range(samples)]
    return statistics.median(times), len(json.dumps(result.structured_content)) / 1024


async def measure_latency(
    sandbox: Sandbox, url: str, samples: int, progress: Callable[[str], None]
) -> tuple[list[Latency], dict[str, float]]:
    """Direct, SSE and HTTP calls interleaved one by one, so drift in the emulator hits every path alike."""
    direct = _direct_calls(sandbox)
    key = sandbox.world.mcp_api_key
    rows = []
    async with mcp_session("sse", url, key) as sse, mcp_session("http", url, key) as http:
        paths: dict[str, Callable[[ToolName], Awaitable[object]]] = {
            "direct": lambda tool: anyio.to_thread.run_sync(direct[tool]),
            "sse": lambda tool: _call_tool(sse, tool),
            "http": lambda tool: _call_tool(http, tool),
            # The SDK's round trip with no tool, in among the calls it is compared with (alone, in a loop
            # of pings, it is faster: see ping_p50_ms).
            "ping-sse": lambda tool: sse.send_ping(),
            "ping-http": lambda tool: http.send_ping(),
        }
        pings: dict[str, list[float]] = {transport: [] for transport in TRANSPORTS}
        for _ in range(samples):
            pings["sse"].append(await _timed(sse.send_ping))
            pings["http"].append(await _timed(http.send_ping))
        ping_p50 = {transport: statistics.median(values) for transport, values in pings.items()}
        for tool in TOOL_NAMES:
            for call in paths.values():  # warm-up: connections, caches, first-call imports
                await call(tool)
            times: dict[str, list[float]] = {path: [] for path in paths}
            for _ in range(samples):
                for path, call in paths.items():
                    times[path].append(await _timed(partial(call, tool)))
            row = Latency(tool)
            row.check_ms, row.answer_kb = await _check_ms(http, tool, samples)
            for path, values in times.items():
                row.p50_ms[path] = statistics.median(values)
                row.p95_ms[path] = statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]
            rows.append(row)
            progress(f"latency {tool}: done ({samples} samples per path)")
    return rows, ping_p50


async def measure_throughput(
    url: str, key: str, transport: Transport, clients: int, calls_per_client: int
) -> Throughput:
    """``clients`` sessions at once, each making ``calls_per_client`` calls across the tools."""
    errors: list[BaseException] = []
    times: list[float] = []

    async def client(index: int) -> None:
        try:
            async with mcp_session(transport, url, key) as session:
                for call in range(calls_per_client):
                    tool = TOOL_NAMES[(index + call) % len(TOOL_NAMES)]
                    times.append(await _timed(partial(_call_tool, session, tool)))
        except Exception as error:
            errors.append(error)

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    seconds = time.perf_counter() - started
    if errors:
        print(f"  {transport}: first error: {errors[0]!r}", file=sys.stderr)
    centiles = statistics.quantiles(times, n=100) if len(times) > 1 else (times or [0.0]) * 99
    return Throughput(clients * calls_per_client, len(errors), seconds, centiles[49], centiles[98])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def churn_sse_sessions(url: str, key: str, sessions: int, concurrency: int) -> None:
    """Open, initialize, list tools and close ``sessions`` SSE sessions, ``concurrency`` at a time."""
    limiter = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limiter, mcp_session("sse", url, key) as session:
            await session.list_tools()

    await asyncio.gather(*(one() for _ in range(sessions)))


def _seed_logs(sandbox: Sandbox, invocations: int = 10) -> None:
    """Give get_recent_logs a realistic answer: a few invocations' worth of log lines."""
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as runtime:
        for index in range(invocations):
            runtime.invoke(names.FUNCTION_NAME, names.input_event(index % len(names.INPUT_KEYS)))


async def run(sandbox: Sandbox, config: Config, work_dir: Path, progress: Callable[[str], None]) -> Report:
    _seed_logs(sandbox)
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    key = sandbox.world.mcp_api_key
    with server_process(env, work_dir / "server.log") as server:
        latency, ping_p50 = await measure_latency(sandbox, server.url, config.samples, progress)
        throughput: dict[str, list[Throughput]] = {transport: [] for transport in TRANSPORTS}
        for number in range(1, config.throughput_runs + 1):
            for transport in TRANSPORTS:
                figures = await measure_throughput(
                    server.url, key, transport, config.clients, config.calls_per_client
                )
                throughput[transport].append(figures)
                progress(
                    f"throughput run {number}/{config.throughput_runs} {transport}: "
                    f"{figures.calls_per_second:.0f} calls/s, {figures.errors} errors"
                )
        warm_up = max(config.sessions // 20, 1)  # let allocator arenas and caches reach their steady size
        await churn_sse_sessions(server.url, key, warm_up, config.session_concurrency)
        await asyncio.sleep(1)
        before = rss_mb(server.pid)
        await churn_sse_sessions(server.url, key, config.sessions, config.session_concurrency)
        await asyncio.sleep(1)
        after = rss_mb(server.pid)
        progress(f"sessions: {config.sessions} SSE sessions opened and closed")
    return Report(
        latency, ping_p50, throughput, config.sessions, before, after, config.clients, config.calls_per_client
    )


def render(report: Report) -> str:
    lines = [
        "Per-tool latency, ms (p50 / p95); the p50 MCP adds over the direct call; the p50 of the SDK's",
        "ping in among those calls (sse / http); the client's schema check of one answer (p50) and its",
        f"size; whether the added p50 is within the ping + {ADDED_TARGET_MS:g} ms (sse / http; 'floor':",
        "within once the schema check is taken off):",
        f"{'tool':<21}{'direct':>12}{'SSE':>13}{'HTTP':>13}{'+SSE':>6}{'+HTTP':>6}{'ping':>10}{'check':>6}"
        f"{'KB':>4}  within",
    ]
    for row in report.latency:
        cells = [f"{row.p50_ms[p]:.1f} / {row.p95_ms[p]:.1f}" for p in ("direct", "sse", "http")]
        ping = f"{row.ping('sse'):.1f}/{row.ping('http'):.1f}"
        within = " / ".join(report.within(row, t) for t in TRANSPORTS)
        lines.append(
            f"{row.tool:<21}{cells[0]:>12}{cells[1]:>13}{cells[2]:>13}{row.added('sse'):>6.1f}"
            f"{row.added('http'):>6.1f}{ping:>10}"
            f"{row.check_ms:>6.1f}{row.answer_kb:>4.0f}  {within}"
        )
    lines.append(
        "MCP ping p50 alone, in a loop of pings: "
        + ", ".join(f"{t} {ms:.1f} ms" for t, ms in report.ping_p50_ms.items())
    )
    for transport, runs in report.throughput.items():
        for number, run in enumerate(runs, 1):
            lines.append(
                f"{transport} run {number}: {run.calls} calls, {run.errors} errors, "
                f"{run.calls_per_second:.0f} calls/s, p50 {run.p50_ms:.0f} ms, p99 {run.p99_ms:.0f} ms"
            )
    lines.append(
        f"server RSS {report.rss_before_mb:.1f} MB -> {report.rss_after_mb:.1f} MB after {report.sessions} "
        f"SSE sessions: {report.memory_growth_mb:+.1f} MB (target < {MEMORY_TARGET_MB} MB)"
    )
    return "\n".join([*lines, "", *summary(report)])


def summary(report: Report) -> list[str]:
    """What the figures come to, in a few lines (the README shows them)."""

    def pairs(verdict: str) -> list[str]:
        return [
            f"{row.tool} {t}"
            for row in report.latency
            for t in TRANSPORTS
            if report.within(row, t) == verdict
        ]

    within, floor, over = pairs("yes"), pairs("floor"), pairs("no")
    verdict = (
        f"Summary: at p50, MCP adds at most the SDK's ping + {ADDED_TARGET_MS:g} ms for {len(within)} of "
    )
    verdict += f"{len(report.latency) * len(TRANSPORTS)} tool and transport pairs"
    if floor:
        verdict += f"; {len(floor)} more once the client's schema check of the answer is taken off"
        verdict += f" ({', '.join(floor)})"
    verdict += f"; over: {', '.join(over) or 'none'}."
    loads = []
    for transport, runs in report.throughput.items():
        speeds = [run.calls_per_second for run in runs]
        loads.append(
            f"{transport} {sum(run.errors for run in runs)} errors, {min(speeds):.0f}-{max(speeds):.0f} "
            f"calls/s, p99 at most {max(run.p99_ms for run in runs) / 1000:.1f} s"
        )
    repeats = len(next(iter(report.throughput.values()), []))
    load = f"{report.clients} clients x {report.calls_per_client} calls, {repeats} runs per transport: "
    return [*textwrap.wrap(verdict, 105), *textwrap.wrap(load + "; ".join(loads) + ".", 105)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the benchmark runs")
    parser.add_argument("--clients", type=int, help="concurrent clients in the throughput test (default 100)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    config = QUICK if args.quick else Config()
    if args.clients is not None:
        if not 1 <= args.clients <= 1000:
            parser.error("--clients must be between 1 and 1000")
        config = replace(config, clients=args.clients)

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    with (
        tempfile.TemporaryDirectory(prefix="bench-") as tmp,
        running_sandbox(Path(tmp) / "sandbox") as sandbox,
    ):
        progress("sandbox up")
        report = asyncio.run(run(sandbox, config, Path(tmp), progress))
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
