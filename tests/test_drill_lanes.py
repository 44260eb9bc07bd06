"""The drill's lanes: how scenarios are claimed, and a lane's report read back exactly as it was written."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from chaos.drill.checks import Check, Incident
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.lanes import _merged, claimer, slowest_first
from chaos.drill.report import DrillRun, ScenarioResult, dumps, load
from chaos.drill.runner import MINUTE_EDGE_SECONDS, clear_of_minute_end, quiet_wait
from chaos.drill.scenarios import SCENARIOS, SETTLED_SECONDS
from chaos.sandbox import names


def test_each_scenario_is_claimed_by_exactly_one_of_the_lanes_racing_for_it(tmp_path: Path) -> None:
    names = [s.name for s in SCENARIOS]
    taken: dict[int, list[str]] = {lane: [] for lane in range(4)}
    start = threading.Barrier(4)

    def lane(number: int) -> None:
        claim = claimer(tmp_path)  # each lane its own claimer over the one directory, as the processes are
        start.wait()
        taken[number] += [name for name in names if claim(name)]

    threads = [threading.Thread(target=lane, args=(n,)) for n in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(name for names_taken in taken.values() for name in names_taken) == sorted(names)
    assert not claimer(tmp_path)(names[0])  # claimed already: a late lane gets nothing


def test_a_lanes_report_reads_back_as_written() -> None:
    diagnosis = {
        "root_cause": "the role lost s3:GetObject",
        "fault_types": ["permission_loss"],
        "verification": {"pointers": [{"index": 0, "verified": True, "reason": ""}]},
        "remediation_plan": [],
    }
    run = DrillRun(
        [
            ScenarioResult(
                SCENARIOS[2],
                incidents=[
                    Incident(
                        "data-processor@2026-11-25T10:00:00.000Z",
                        "data-processor",
                        "DIAGNOSED",
                        diagnosis=diagnosis,
                        tools=["get_iam_state", "submit_diagnosis"],
                        failed_attempts=["ConnectError: refused"],
                        llm_calls=2,
                        input_tokens=100,
                        grounding=Grounding([Finding(0, True), Finding(1, False, "gone")], ["trigger: lost"]),
                        output_tokens=20,
                    ),
                    Incident("data-processor@2026-11-25T10:01:00.000Z", "data-processor", "ERROR", "mcp"),
                ],
                checks=[Check("fault types", True, "ok"), Check("world restored", False, "differs")],
                seconds=2.5,
                traffic={"data-processor": ["failed"]},
            ),
            ScenarioResult(SCENARIOS[0], checks=[Check("incidents", True, "none")], seconds=1.0),
        ],
        "rules",
        "2026-11-25T10:00:00+00:00",
        12.5,
        [Check("watchdog sweep", True, "examined 2, failed 0")],
        {"supervisor": ["dynamodb:GetItem"]},
    )

    again = load(dumps(run))

    assert dumps(again) == dumps(run)
    assert (again.passed, again.summary) == (run.passed, run.summary)
    assert [r.outcome for r in again.results] == ["permission_loss, ERROR/mcp", "no alarm"]


def _lane_report(directory: Path, results: list[ScenarioResult], actions: dict[str, list[str]]) -> None:
    directory.mkdir(parents=True)
    closing = [Check("watchdog sweep", True, "examined 1")]
    run = DrillRun(results, "rules", "t", 1.0, closing, actions)
    (directory / "drill-report.json").write_text(dumps(run))
    (directory / "supervisor.log").write_text(f"{directory.name}\n")


def test_lanes_merge_in_the_order_asked_for(tmp_path: Path) -> None:
    asked = list(SCENARIOS[:5])
    lanes = [[asked[0], asked[3], asked[4]], [asked[1], asked[2]]]  # as the lanes claimed them
    for number, lane in enumerate(lanes, start=1):
        passed = [ScenarioResult(s, checks=[Check("incidents", True, "")]) for s in lane]
        _lane_report(tmp_path / "lanes" / str(number), passed, {"supervisor": [f"action:{number}"]})

    run = _merged(asked, 2, [0, 0], tmp_path)

    assert [r.scenario.name for r in run.results] == [s.name for s in asked]
    assert [c.name for c in run.closing_checks] == ["lane 1: watchdog sweep", "lane 2: watchdog sweep"]
    assert run.aws_actions == {"supervisor": ["action:1", "action:2"]}
    assert (tmp_path / "supervisor.log").read_text() == "1\n2\n"
    assert run.passed


def test_a_lane_without_a_report_fails_the_drill(tmp_path: Path) -> None:
    asked = list(SCENARIOS[:2])
    _lane_report(tmp_path / "lanes" / "1", [ScenarioResult(asked[0], checks=[Check("x", True, "")])], {})

    run = _merged(asked, 2, [0, 2], tmp_path)

    assert [r.scenario.name for r in run.results] == [asked[0].name]
    assert not run.passed
    assert Check("lane 2", False, "incident-drill exited 2 without a report") in run.closing_checks


def test_the_lanes_claim_the_slowest_first_as_the_last_report_timed_them(tmp_path: Path) -> None:
    first, second, third, new = SCENARIOS[:4]
    report = tmp_path / "drill-report.json"
    timed = {first.name: 3.0, second.name: 20.0, third.name: 7.5, "a-scenario-since-removed": 99.0}
    report.write_text(json.dumps({"scenarios": [{"name": n, "seconds": s} for n, s in timed.items()]}))
    # one the report does not time (new since) counts as the slowest
    assert slowest_first([first, second, third, new], report) == [new, second, third, first]
    unreadable = tmp_path / "missing.json"
    assert slowest_first([first, second, third, new], unreadable) == [first, second, third, new]
    report.write_text("{not json")
    assert slowest_first([first, second], report) == [first, second]
    # Untimed, a scenario that fixes an incident between acts (minutes waiting for alarms to clear) first.
    recurring = next(s for s in SCENARIOS if any(act.fixed_first for act in s.acts))
    assert slowest_first([first, second, recurring], unreadable) == [recurring, first, second]


def test_a_scenario_in_which_nothing_changed_waits_until_the_last_restore_of_its_functions_is_settled() -> (
    None
):
    """A restore 3 s before node-bad-input's traffic would be a candidate trigger (IAM-like propagation
    allowance): it waits the rest of SETTLED_SECONDS; one restored long ago, or on another function, or a
    scenario that expects a change, does not wait."""
    nothing_changed = next(s for s in SCENARIOS if s.name == "node-bad-input")
    changed = next(s for s in SCENARIOS if s.name == "node-bad-deploy")
    intake = names.ORDER_INTAKE_FUNCTION
    assert quiet_wait(nothing_changed, {intake: 100.0}, 103.0) == SETTLED_SECONDS - 3.0
    assert quiet_wait(nothing_changed, {intake: 100.0}, 100.0 + SETTLED_SECONDS + 1) == 0.0
    assert quiet_wait(nothing_changed, {names.FUNCTION_NAME: 100.0}, 103.0) == 0.0
    assert quiet_wait(changed, {intake: 100.0}, 103.0) == 0.0


def test_mixed_event_traffic_waits_for_the_next_minute_only_near_a_minute_s_end() -> None:
    minute = 1_796_000_040.0  # a minute's start (divisible by 60)
    assert minute % 60 == 0
    assert clear_of_minute_end(minute + 10.0) == 0.0
    assert clear_of_minute_end(minute + 60 - MINUTE_EDGE_SECONDS) == 0.0  # just in time
    assert clear_of_minute_end(minute + 58.5) == 1.5  # to the next minute's start
