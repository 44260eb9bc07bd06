"""The Lambda service's own background work in the sandbox: asynchronous invocations (the internal queue,
retries, destinations and dead-letter queues) and the pollers of SQS event source mappings.

Two threads, so that a long batch on one path never holds the other up. Each pass takes what the
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

PASS_SECONDS = 0.2  # between two passes of each path
ERRORS_KEPT = 20


class LambdaService:
    """``with LambdaService(runtime, platform):`` the asynchronous paths run until the block ends."""

    def __init__(
        self, runtime: LocalLambdaRuntime, platform: boto3.Session, clock: Clock | None = None
    ) -> None:
        self.invoker = AsyncInvoker(runtime, platform, clock)
        self.poller = SqsPoller(runtime, platform)
        self.errors: list[str] = []
        self.runtime = runtime
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._seen: list[Invocation] = []
        runtime.observers.append(self._observe)

    def _observe(self, invocation: Invocation) -> None:
        with self._lock:
            self._seen.append(invocation)

    def take_invocations(self) -> list[Invocation]:
        """Every invocation the runtime made since the last call, whoever asked for it."""
        with self._lock:
            taken, self._seen = self._seen, []
        return taken

    def start(self) -> LambdaService:
        self._stop.clear()
        passes = {"lambda-async": self._async_pass, "lambda-sqs": self.poller.poll_once}
        self._threads = [
            threading.Thread(target=self._loop, args=(work,), name=name, daemon=True)
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

    def _loop(self, work: Callable[[], object]) -> None:
        while not self._stop.is_set():
            try:
                work()
            except Exception as error:  # recorded; the next pass goes on
                with self._lock:
                    self.errors = [*self.errors, f"{type(error).__name__}: {error}"][-ERRORS_KEPT:]
            self._stop.wait(PASS_SECONDS)
