"""An execution environment: one worker process running one version of a function's deployed code.

The Lambda service side of :mod:`chaos.workload.worker`. It unpacks the package, starts the worker with
the function's environment, measures the init phase, sends invocations, and enforces the limits the way
Lambda does: past the timeout, or past ``MemorySize`` of resident memory, the worker is killed. Peak
memory is the kernel's high-water mark of the worker (``VmHWM``), never a constant. Its ``/tmp`` is
:mod:`chaos.workload.scratch`'s, of ``EphemeralStorage`` size.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chaos.workload import node_runtime, scratch

WORKER = Path(__file__).with_name("worker.py")
INIT_TIMEOUT_SECONDS = 10.0  # Lambda's limit for the init phase
MEMORY_POLL_SECONDS = 0.005

Outcome = Literal["succeeded", "failed", "timed_out", "out_of_memory", "crashed"]


@dataclass(frozen=True)
class Spec:
    """What an environment is created from: a function version as its configuration says."""

    function_name: str
    version: str
    handler: str
    memory_mb: int
    timeout_seconds: float
    variables: dict[str, str]
    log_group: str
    log_stream: str
    region: str
    runtime: str = "python3.12"
    log_format: str = "Text"  # LoggingConfig.LogFormat: Text or JSON
    application_log_level: str | None = None  # JSON only (TRACE, DEBUG, INFO, WARN, ERROR, FATAL)
    system_log_level: str | None = None  # JSON only (DEBUG, INFO, WARN)
    ephemeral_mb: int = 512  # EphemeralStorage.Size: the size of the environment's /tmp


@dataclass
class RunResult:
    outcome: Outcome
    value: Any = None
    error: dict[str, Any] | None = None  # errorType, errorMessage, stackTrace
    lines: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    exit_detail: str = ""  # how the worker died, when it did
    levels: list[str | None] = field(default_factory=list)  # each line's level, when its log frame gave one


class ExecutionEnvironment:
    def __init__(
        self,
        spec: Spec,
        package: bytes,
        credentials: dict[str, str],
        endpoint_url: str,
        init_limit: float = INIT_TIMEOUT_SECONDS,
    ) -> None:
        """``init_limit``: how long the init may take, Lambda's 10 s for an init phase; the function's
        timeout for an init retried in the invoke phase."""
        self.spec = spec
        self.init_limit = init_limit
        node = node_runtime.is_node(spec.runtime)
        runtime = (
            node_runtime.command(spec.runtime, spec.variables)
            if node
            else [sys.executable, "-I", str(WORKER)]
        )
        self.root = Path(tempfile.mkdtemp(prefix=f"lambda-{spec.function_name}-"))
        code_dir, scratch_dir = self.root / "task", self.root / "tmp"
        scratch_dir.mkdir()
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            archive.extractall(code_dir)
        requests_read, self._requests = os.pipe()
        self._closing = threading.Lock()
        self._frames, frames_write = os.pipe()
        env = _function_environment(spec, credentials, endpoint_url, code_dir) | {"TMPDIR": str(scratch_dir)}
        if node:
            node_runtime.prepare(self.root)
        started = time.perf_counter()
        init_deadline = time.monotonic() + init_limit
        self._process = subprocess.Popen(  # noqa: S603 - our worker, fixed arguments
            scratch.wrapped(
                [*runtime, str(code_dir), spec.handler, str(requests_read), str(frames_write)],
                scratch_dir,
                spec.ephemeral_mb,
            ),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(requests_read, frames_write),
        )
        os.close(requests_read)
        os.close(frames_write)
        self._inbox: queue.Queue[tuple[float, dict[str, Any] | None]] = queue.Queue()  # with arrival time
        self._lines: list[str] = []
        self._levels: list[str | None] = []
        self._killed_for_memory = False
        self._peak_mb = 0
        self._gone = False  # the worker closed its frames pipe: it exited (maybe not yet reaped)
        threading.Thread(target=self._read_frames, daemon=True).start()
        threading.Thread(target=self._read_native_output, daemon=True).start()
        self.busy = False
        self.invocations = 0
        self.init_lines, init = self._collect("init", init_deadline)
        self.init_levels = self._levels
        self.init_ms = (time.perf_counter() - started) * 1000
        self.init_timed_out = init is None and self.init_ms >= init_limit * 1000
        self.init_error: dict[str, Any] | None = init.get("error") if init else self._init_failure()
        if init is None and self.alive:
            self.kill()

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    @property
    def out_of_memory(self) -> bool:
        """Whether the worker was killed for passing its memory size."""
        return self._killed_for_memory

    def max_memory_mb(self) -> int:
        """The worker's peak resident memory so far (its whole life, as Lambda reports it); once it is gone,
        the peak last read, as killing it for a timeout leaves nothing to read."""
        if self.alive:
            self._peak_mb = max(self._peak_mb, _status_kb(self._process.pid, "VmHWM") // 1024)
        return self._peak_mb

    def run(self, request_id: str, event: Any, invoked_arn: str) -> RunResult:
        """One invocation; the deadline starts now."""
        self.invocations += 1
        # Every clock read before the request is written: the handler may start (and finish) before this
        # thread runs again, and its time counts from the invoke, as on Lambda. The duration's start is
        # read first, so that a run cut at the deadline never measures shorter than the timeout.
        started = time.perf_counter()
        deadline = time.time() + self.spec.timeout_seconds
        collect_until = time.monotonic() + self.spec.timeout_seconds
        request = {
            "request_id": request_id,
            "event": event,
            "invoked_function_arn": invoked_arn,
            "deadline_ms": int(deadline * 1000),
        }
        try:
            self._send(request)
        except OSError:
            return RunResult("crashed", lines=[], exit_detail=self._exit_detail())
        lines, result = self._collect("result", collect_until)
        duration_ms = (time.perf_counter() - started) * 1000
        levels = self._levels
        if result is not None:
            outcome: Outcome = "failed" if "error" in result else "succeeded"
            value, error = result.get("value"), result.get("error")
            return RunResult(outcome, value, error, lines, duration_ms, levels=levels)
        if self._killed_for_memory:
            return RunResult(
                "out_of_memory",
                lines=lines,
                duration_ms=duration_ms,
                exit_detail="signal: killed",
                levels=levels,
            )
        if not self._gone and self.alive:
            self.kill()
            return RunResult("timed_out", lines=lines, duration_ms=duration_ms, levels=levels)
        detail = self._exit_detail()
        return RunResult("crashed", lines=lines, duration_ms=duration_ms, exit_detail=detail, levels=levels)

    def _send(self, request: dict[str, Any]) -> None:
        os.write(self._requests, (json.dumps(request) + "\n").encode())

    def kill(self) -> None:
        self.max_memory_mb()  # read before it is gone
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(5)
        # Closed once: a timed-out environment is killed, then closed again by the runtime, and a second
        # os.close would close whatever has reused the number since (another thread's socket, say).
        with self._closing:
            requests, self._requests = self._requests, -1
        if requests >= 0:
            with contextlib.suppress(OSError):
                os.close(requests)
        shutil.rmtree(self.root, ignore_errors=True)

    def _collect(self, kind: str, deadline: float) -> tuple[list[str], dict[str, Any] | None]:
        """Log lines until the ``kind`` frame arrives, the worker dies, memory runs out or ``deadline``
        (``time.monotonic()``) passes."""
        self._lines, self._levels = [], []
        watch = threading.Event()
        threading.Thread(target=self._watch_memory, args=(watch,), daemon=True).start()
        try:
            while True:
                try:  # what arrived by the deadline counts even when this thread runs late to read it
                    arrived, frame = self._inbox.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if arrived > deadline:
                    break
                if frame is None:  # the worker is gone
                    self._gone = True
                    break
                if "log" in frame:
                    self._lines.append(frame["log"])
                    self._levels.append(frame.get("level"))
                elif kind in frame:
                    return self._lines, frame[kind]
        finally:
            watch.set()
        return self._lines, None

    def _watch_memory(self, done: threading.Event) -> None:
        limit_kb = self.spec.memory_mb * 1024
        while not done.wait(MEMORY_POLL_SECONDS) and self.alive:
            if _status_kb(self._process.pid, "VmRSS") >= limit_kb:
                self._killed_for_memory = True
                with contextlib.suppress(ProcessLookupError):
                    self._process.send_signal(signal.SIGKILL)
                return

    def _read_frames(self) -> None:
        with os.fdopen(self._frames, "r", encoding="utf-8", errors="replace") as frames:
            for line in frames:
                with contextlib.suppress(json.JSONDecodeError):
                    self._inbox.put((time.monotonic(), json.loads(line)))
        self._inbox.put((time.monotonic(), None))

    def _read_native_output(self) -> None:
        """What the interpreter itself writes (a crash, say) is logged too, as Lambda does."""
        assert self._process.stdout is not None
        with self._process.stdout as output:
            for raw in output:
                self._inbox.put((time.monotonic(), {"log": raw.decode("utf-8", "replace")}))

    def _init_failure(self) -> dict[str, Any]:
        if self._killed_for_memory:
            detail = "signal: killed"
        elif not self._gone and self.alive:
            detail = f"init did not finish within {self.init_limit:g} s"
        else:
            detail = self._exit_detail()
        return {"errorType": "Runtime.ExitError", "errorMessage": f"Runtime exited with error: {detail}"}

    def _exit_detail(self) -> str:
        code = self._process.wait(5)
        return f"signal: {signal.Signals(-code).name[3:].lower()}" if code < 0 else f"exit status {code}"


def _function_environment(
    spec: Spec, credentials: dict[str, str], endpoint_url: str, code_dir: Path
) -> dict[str, str]:
    """The function's variables over Lambda's reserved ones; nothing from the sandbox's own process."""
    reserved = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "LAMBDA_TASK_ROOT": str(code_dir),
        "_HANDLER": spec.handler,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": spec.function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": spec.version,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_LOG_GROUP_NAME": spec.log_group,
        "AWS_LAMBDA_LOG_STREAM_NAME": spec.log_stream,
        "AWS_REGION": spec.region,
        "AWS_DEFAULT_REGION": spec.region,
        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": credentials["SessionToken"],
        # Where the function's network leads: the sandbox's endpoint, or its VPC's (see network.py).
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_EC2_METADATA_DISABLED": "true",
        # Lambda's advanced logging controls, as the runtime reads them.
        "AWS_LAMBDA_LOG_FORMAT": spec.log_format.upper(),
    }
    if spec.log_format.upper() == "JSON":
        reserved["AWS_LAMBDA_LOG_LEVEL"] = spec.application_log_level or "INFO"
    defaults = node_runtime.default_variables(code_dir) if node_runtime.is_node(spec.runtime) else {}
    return {**defaults, **spec.variables, **reserved}


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
