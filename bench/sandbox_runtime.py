"""What the sandbox costs: start-up with the whole world, and invocation latency of its Lambda runtime.

Start-up: ``start_sandbox`` (emulator, identities, IAM enforcement, the three-function world in two
accounts) against the bare emulator process reaching readiness, interleaved run by run. Invocations:
``data-processor`` cold (a new execution environment: worker start, package download, imports) and warm
(the same environment again), against the one S3 ``GetObject`` the handler makes, done directly with
boto3 as the function's role. Goal of issue 14: start-up <= 6 s.

    python -m bench.sandbox_runtime [--starts 3] [--invocations 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, _free_port, _stop_process, _wait_ready, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime

START_GOAL_SECONDS = 6.0


@dataclass
class Row:
    case: str
    median_ms: float
    p90_ms: float
    ratio: float
    baseline: str


def _p90(samples: list[float]) -> float:
    return sorted(samples)[max(0, round(0.9 * len(samples)) - 1)]


def _bare_emulator_ms(work_dir: Path) -> float:
    port = _free_port("127.0.0.1")
    log = work_dir / f"bare-{port}.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            [sys.executable, "-m", "chaos.sandbox.emulator", "--port", str(port)], stdout=out, stderr=out
        )
    try:
        _wait_ready(process, f"http://127.0.0.1:{port}", log)
        return (time.perf_counter() - started) * 1000
    finally:
        _stop_process(process)


def _sandbox_ms(work_dir: Path, index: int) -> float:
    started = time.perf_counter()
    with running_sandbox(work_dir / f"sandbox-{index}"):
        return (time.perf_counter() - started) * 1000


def _row(case: str, samples: list[float], baseline: str, baseline_ms: float) -> Row:
    median = statistics.median(samples)
    return Row(case, round(median, 1), round(_p90(samples), 1), round(median / baseline_ms, 2), baseline)


def run(starts: int, invocations: int, progress: Callable[[str], None] = lambda _: None) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        work_dir = Path(tmp)
        bare: list[float] = []
        full: list[float] = []
        for index in range(starts):
            bare.append(_bare_emulator_ms(work_dir))
            full.append(_sandbox_ms(work_dir, index))
            progress(f"start {index + 1}/{starts}")
        bare_ms = statistics.median(bare)
        rows = [
            _row("bare emulator ready", bare, "bare emulator", bare_ms),
            _row("sandbox up (world provisioned)", full, "bare emulator", bare_ms),
        ]
        with running_sandbox(work_dir / "invocations") as sandbox:
            direct, cold, warm = _invocations(sandbox, invocations, progress)
        direct_ms = statistics.median(direct)
        rows += [
            _row("S3 GetObject, direct (baseline)", direct, "GetObject", direct_ms),
            _row("invoke data-processor, warm", warm, "GetObject", direct_ms),
            _row("invoke data-processor, cold", cold, "GetObject", direct_ms),
        ]
        return rows


def _invocations(
    sandbox: Sandbox, count: int, progress: Callable[[str], None]
) -> tuple[list[float], list[float], list[float]]:
    operator = sandbox.session(names.LAMBDA_SERVICE)  # the identity the function's role trusts
    role_arn = sandbox.world.role_arn
    credentials = operator.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="bench")["Credentials"]
    s3 = operator.client(
        "s3",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    direct: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    for index in range(count):
        started = time.perf_counter()
        s3.get_object(Bucket=names.INPUT_BUCKET, Key=names.INPUT_KEYS[0])["Body"].read()
        direct.append((time.perf_counter() - started) * 1000)
        with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as runtime:
            for samples in (cold, warm):
                started = time.perf_counter()
                invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())
                if invocation.status != "succeeded":
                    raise RuntimeError(f"benchmark invocation {invocation.status}: {invocation.error}")
                samples.append((time.perf_counter() - started) * 1000)
        progress(f"invocation {index + 1}/{count}")
    return direct, cold, warm


def render(rows: list[Row]) -> str:
    lines = [
        "| case | median | p90 | vs baseline |",
        "| --- | ---: | ---: | ---: |",
        *(
            f"| {r.case} | {r.median_ms:.1f} ms | {r.p90_ms:.1f} ms | {r.ratio:.2f}x {r.baseline} |"
            for r in rows
        ),
    ]
    start = next(r for r in rows if r.case.startswith("sandbox up"))
    verdict = "meets" if start.median_ms <= START_GOAL_SECONDS * 1000 else "MISSES"
    lines.append(
        f"\nsandbox start-up {start.median_ms / 1000:.2f} s {verdict} the goal "
        f"of <= {START_GOAL_SECONDS:.0f} s"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=3, help="sandbox start-ups to time (default 3)")
    parser.add_argument("--invocations", type=int, default=20, help="cold/warm pairs to time (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.starts < 1 or args.invocations < 1:
        parser.error("--starts and --invocations must be at least 1")
    rows = run(args.starts, args.invocations, lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps([asdict(r) for r in rows], indent=2) if args.json else render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
