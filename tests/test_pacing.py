"""The pacer that keeps the MCP server's LookupEvents within CloudTrail's rate, on a clock the test owns;
and the settings that set a pace, refused when out of range."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from chaos.drill.settings import DrillSettings
from chaos.sandbox.profiles import sandbox_env
from chaos.sandbox.sandbox import MAX_TIME_SCALE, SandboxError, start_sandbox
from mcp_server.pacing import Pacer
from mcp_server.settings import ServerSettings


class Clock:
    """Monotonic seconds that move only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)


def test_turns_are_spaced_one_over_the_rate_apart() -> None:
    clock = Clock()
    pacer = Pacer(2.0, clock=clock, sleep=clock.sleep)
    assert [pacer.wait(within=10) for _ in range(4)] == [True] * 4
    assert clock.slept == [0.5, 1.0, 1.5], "the first goes at once, each next half a second after"


def test_a_turn_beyond_the_budget_is_refused_and_not_taken() -> None:
    clock = Clock()
    pacer = Pacer(2.0, clock=clock, sleep=clock.sleep)
    assert pacer.wait(within=0.1)
    assert not pacer.wait(within=0.1), "the next turn is 0.5 s away"
    assert pacer.wait(within=0.5), "the refused turn was not taken: the next is still 0.5 s away"
    clock.now += 10
    assert pacer.wait(within=0)
    assert clock.slept == [0.5], "an idle pacer lets the next go at once"


def test_threads_sharing_a_pacer_get_distinct_turns() -> None:
    clock = Clock()
    pacer = Pacer(4.0, clock=clock, sleep=clock.sleep)
    threads = [threading.Thread(target=pacer.wait, args=(100,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(clock.slept) == [0.25 * i for i in range(1, 8)]


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate must be above 0"):
        Pacer(0)


def test_a_pace_the_server_cannot_keep_is_refused_with_its_name() -> None:
    with pytest.raises(ValidationError, match="mcp_cloudtrail_lookups_per_second"):
        ServerSettings(mcp_cloudtrail_lookups_per_second=0)


def test_the_mcp_server_keeps_the_pace_of_the_fastest_sandbox(tmp_path: Path) -> None:
    # The pace the sandbox's env file gives its MCP server at the largest time scale the sandbox (and the
    # drill) accepts: a larger one than the server allows would stop the server at startup.
    env = sandbox_env(tmp_path, "http://127.0.0.1:1", "ca-central-1", "key", MAX_TIME_SCALE)
    pace = float(env["MCP_CLOUDTRAIL_LOOKUPS_PER_SECOND"])
    assert ServerSettings(mcp_cloudtrail_lookups_per_second=pace).mcp_cloudtrail_lookups_per_second == pace
    assert DrillSettings(time_scale=MAX_TIME_SCALE).time_scale == MAX_TIME_SCALE
    with pytest.raises(ValidationError, match="time_scale"):
        DrillSettings(time_scale=MAX_TIME_SCALE + 1)


@pytest.mark.parametrize("scale", [0.5, 501.0])
def test_a_time_scale_out_of_range_is_refused_before_anything_starts(scale: float, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="the time scale must be between 1 and 500"):
        start_sandbox(tmp_path, time_scale=scale)
    assert not list(tmp_path.iterdir()), "nothing was started or written"


@pytest.mark.parametrize("delay", [-1.0, 86_401.0])
def test_a_cloudtrail_delay_out_of_range_is_refused_before_anything_starts(
    delay: float, tmp_path: Path
) -> None:
    with pytest.raises(
        SandboxError, match="the CloudTrail delivery delay must be between 0 and 86400 seconds"
    ):
        start_sandbox(tmp_path, cloudtrail_delay=delay)
    assert not list(tmp_path.iterdir()), "nothing was started or written"
