"""The Lambda service's background passes: a caller can wait until they act on what it just changed."""

from __future__ import annotations

import threading
import time

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.lambda_service import LambdaService
from chaos.workload.runtime import LocalLambdaRuntime


class _GatedPoller:
    """A poller whose first pass waits for ``gate``; it records when each pass began and ended."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.in_first = threading.Event()
        self.passes: list[tuple[float, float]] = []

    def poll_once(self) -> list[object]:
        began = time.monotonic()
        if not self.passes:
            self.in_first.set()
            self.gate.wait(30)
        self.passes.append((began, time.monotonic()))
        return []


def test_caught_up_waits_for_a_whole_pass_begun_after_the_call(
    sandbox: Sandbox, runtime: LocalLambdaRuntime
) -> None:
    service = LambdaService(runtime, sandbox.session(names.LAMBDA_SERVICE))
    poller = _GatedPoller()
    service.poller = poller  # type: ignore[assignment]
    answer: list[tuple[float, bool, float]] = []
    with service:
        assert poller.in_first.wait(30)
        waiter = threading.Thread(
            target=lambda: answer.append((time.monotonic(), service.caught_up(30), time.monotonic()))
        )
        waiter.start()
        time.sleep(0.2)  # the waiter is waiting while the pass that began before it is still under way
        poller.gate.set()
        waiter.join(40)
    ((called, caught_up, returned),) = answer
    assert caught_up
    # the pass under way when it was called does not count: it may have read the world before the change
    assert any(called < began and ended <= returned for began, ended in poller.passes), poller.passes


def test_caught_up_says_so_when_no_pass_runs(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    service = LambdaService(runtime, sandbox.session(names.LAMBDA_SERVICE))
    poller = _GatedPoller()
    service.poller = poller  # type: ignore[assignment]
    with service:
        assert poller.in_first.wait(30)
        assert service.caught_up(0.3) is False
        poller.gate.set()
