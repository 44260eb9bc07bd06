"""The drill's lanes: how scenarios are dealt, and a lane's report read back exactly as it was written."""

from __future__ import annotations

from pathlib import Path

from chaos.drill.checks import Check, Incident
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.lanes import _merged, partition
from chaos.drill.report import DrillRun, dumps, load
from chaos.drill.runner import ScenarioResult
from chaos.drill.scenarios import SCENARIOS


def test_scenarios_are_dealt_in_turn_and_no_lane_is_empty() -> None:
    six = list(SCENARIOS[:6])
    assert [[s.name for s in lane] for lane in partition(six, 2)] == [
        [six[0].name, six[2].name, six[4].name],
        [six[1].name, six[3].name, six[5].name],
    ]
    assert [len(lane) for lane in partition(six[:2], 8)] == [1, 1]
    assert partition(six, 1) == [six]


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
    lanes = partition(asked, 2)
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
