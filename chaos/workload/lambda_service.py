"""The Lambda service's own background work in the sandbox: asynchronous invocations (the internal queue,
retries, destinations and dead-letter queues) and the pollers of SQS and Kinesis event source mappings.

Three threads, so that a long batch on one path never holds another up. Each pass takes what the
emulator queued (``Invoke`` with ``InvocationType=Event``, SNS deliveries), runs every asynchronous event
that is due, and polls every enabled mapping once. A pass that fails is recorded (``errors``) and the next
one goes on: a broken queue must not stop every other path, as it would not on AWS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import boto3

from chaos.workload.async_invocation import AsyncInvoker, Clock
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from chaos.workload.sqs_poller import SqsPoller
from chaos.workload.stream_poller import StreamPoller

PASS_SECONDS = 0.5  # between two passes of each path
ERRORS_KEPT = 20


class LambdaService:
    """``with LambdaService(runtime, platform):`` the asynchronous paths run until the block ends."""

    def __init__(
        self, runtime: LocalLambdaRuntime, platform: boto3.Session, clock: Clock | None = None
    ) -> None:
        self.invoker = AsyncInvoker(runtime, platform, clock)
        self.poller = SqsPoller(runtime, platform)
        self.streams = StreamPoller(runtime, platform)
        self.errors: list[str] = []
        self.runtime = runtime
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._seen: list[Invocation] = []
        self._passes = threading.Condition()
        self._started: dict[str, int] = {}  # path → passes begun
        self._finished: dict[str, int] = {}  # path → passes ended
        runtime.observers.append(self._observe)

    def _observe(self, invocation: Invocation) -> None:
        with self._lock:
            self._seen.append(invocation)

    def take_invocations(self) -> list[Invocation]:
        """Every invocation the runtime made since the last call, whoever asked for it."""
        with self._lock:
            taken, self._seen = self._seen, []
        return taken

    def caught_up(self, timeout: float) -> bool:
        """Wait until every path has run a whole pass begun after this call, so that a change made before
        it (a mapping disabled, a queue's policy) is what the service acts on from now; False if ``timeout``
        seconds went by first. A pass under way may have read the world as it was before."""
        with self._passes:
            wanted = {path: begun + 1 for path, begun in self._started.items()}
            return self._passes.wait_for(
                lambda: all(self._finished.get(path, 0) >= n for path, n in wanted.items()), timeout
            )

    def start(self) -> LambdaService:
        self._stop.clear()
        passes = {
            "lambda-async": self._async_pass,
            "lambda-sqs": self.poller.poll_once,
            "lambda-streams": self.streams.poll_once,
        }
        with self._passes:
            self._started = dict.fromkeys(passes, 0)
            self._finished = dict.fromkeys(passes, 0)
        self._threads = [
            threading.Thread(target=self._loop, args=(name, work), name=name, daemon=True)
            for name, work in passes.items()
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads = []

    def close(self) -> None:
        self.stop()
        if self._observe in self.runtime.observers:
            self.runtime.observers.remove(self._observe)

    def __enter__(self) -> LambdaService:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def _async_pass(self) -> None:
        self.invoker.collect()
        self.invoker.pump()

    def _loop(self, path: str, work: Callable[[], object]) -> None:
        while not self._stop.is_set():
            with self._passes:
                self._started[path] += 1
            try:
                work()
            except Exception as error:  # recorded; the next pass goes on
                with self._lock:
                    self.errors = [*self.errors, f"{type(error).__name__}: {error}"][-ERRORS_KEPT:]
            with self._passes:
                self._finished[path] += 1
                self._passes.notify_all()
            self._stop.wait(PASS_SECONDS)
