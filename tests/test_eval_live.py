"""Live benchmark runs: cases enacted on fresh sandbox worlds, any model free to call any tool with any
valid arguments, scored ITBench-style with the drill's independent judge for grounding."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.bedrock_fake import FakeConverse
from chaos.drill.checks import GROUNDED, TRIGGER, Check, Incident
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.report import DrillRun, ScenarioResult
from chaos.drill.scenarios import SCENARIOS
from evals import cli
from evals.live import LIVE_CASES, fault_score, score, slug
from supervisor.agent.prices import Price
from tests.conftest import serving_converse
from tests.eval_models import UNUSUAL_CHANGES, UNUSUAL_LOGS, unusual_arguments

SCRIPTED = "bedrock:anthropic.scripted-unusual-arguments"


@pytest.mark.parametrize(
    ("expected", "named", "points"),
    [
        ({"permission_loss"}, {"permission_loss"}, 1.0),
        ({"permission_loss"}, {"permission_loss", "throttling"}, 0.5),  # one right of two named
        ({"permission_loss", "throttling"}, {"permission_loss"}, 0.0),  # one injected fault missed: nothing
        ({"permission_loss"}, {"unknown"}, 0.0),
        ({"unknown"}, {"unknown"}, 1.0),
        ({"timeout"}, set(), 0.0),  # no diagnosis
    ],
)
def test_a_missed_fault_scores_0_else_the_precision_of_those_named(
    expected: set[str], named: set[str], points: float
) -> None:
    assert fault_score(expected, named) == points


def test_the_live_cases_are_every_drill_scenario_a_model_diagnoses() -> None:
    assert len(LIVE_CASES) >= 40
    diagnosed = {s.name for s in SCENARIOS if s.expected and s.infra is None}
    # planted-command investigates with the stage's credulous model whatever model is scored: not a case.
    assert {case.name for case in LIVE_CASES} == diagnosed - {"planted-command"}
    assert "planted-command" in diagnosed
    assert "healthy" not in {case.name for case in LIVE_CASES}  # no alarm: no model is asked


def test_columns_come_from_the_drill_checks_and_are_blank_where_the_case_has_none() -> None:
    case = next(c for c in LIVE_CASES if c.name == "revoke-s3")
    incident = Incident(
        "data-processor@1",
        "data-processor",
        "DIAGNOSED",
        diagnosis={"fault_types": ["permission_loss", "throttling"]},
        llm_calls=3,
        input_tokens=1000,
        output_tokens=100,
        seconds=2.5,
        grounding=Grounding([Finding(0, True), Finding(1, False, "gone")]),
    )
    result = ScenarioResult(
        case,
        incidents=[incident],
        checks=[Check(TRIGGER, True, ""), Check(GROUNDED, False, ""), Check("fault types", False, "")],
    )
    scored = score(result, Price(3.0, 15.0))
    assert scored.faults == 0.5
    assert scored.columns == {
        "trigger": True,
        "resources": None,
        "command": None,
        "applied": None,
        "grounded": False,
    }
    assert (scored.found, scored.pointers) == (1, 2)
    assert not scored.solved
    assert scored.failed == ["evidence grounded", "fault types"]
    assert scored.cost == pytest.approx((1000 * 3 + 100 * 15) / 1e6)


@pytest.fixture
def scripted_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConverse]:
    """The unusual-arguments model behind a local Converse endpoint the lanes' supervisors reach."""
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with serving_converse(FakeConverse(reply=unusual_arguments), monkeypatch) as fake:
        yield fake


def test_a_live_run_scores_rules_and_a_model_that_asks_unusual_arguments_gets_real_answers(
    scripted_model: FakeConverse, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    argv = ["run", "--model", "rules", "--model", SCRIPTED, "--case", "revoke-s3", "--jobs", "1"]
    assert cli.main([*argv, "--out", str(out), "--price", f"{SCRIPTED}=3,15"]) == 0
    assert "| `rules` | 1/1 |" in capsys.readouterr().out

    board = json.loads((out / "leaderboard.json").read_text())
    rules, scripted = board["models"]
    assert rules["model"] == "rules"
    revoked = rules["cases"]["revoke-s3"]
    assert revoked["solved"] is True
    assert revoked["faults"] == 1.0
    assert revoked["columns"] == {
        "trigger": True,
        "resources": True,
        "command": True,
        "applied": True,  # the policy put back as the operator: data-processor reads its input again
        "grounded": True,
    }
    assert revoked["pointers_found"] == revoked["pointers"] > 0

    guessed = scripted["cases"]["revoke-s3"]
    assert guessed["diagnosed"] == "unknown"
    assert guessed["faults"] == 0.0  # the revoked permission was missed
    assert guessed["solved"] is False
    assert guessed["columns"]["grounded"] is True  # what it cited, the server did send
    assert guessed["pointers_found"] == guessed["pointers"] == 1
    # Two model calls per investigation: one investigation, or two when the diagnosis was provisional and
    # its re-check (the drill's lanes run every incident to its final diagnosis) investigated again.
    assert guessed["llm_calls"] in (2, 4)
    assert guessed["cost_usd"] == pytest.approx(
        (guessed["input_tokens"] * 3 + guessed["output_tokens"] * 15) / 1e6
    )
    assert guessed["input_tokens"] > 0

    # The unusual arguments reached the live world's tools and got real answers: the filtered logs hold
    # the function's own AccessDenied line, which no recording holds for these arguments.
    log = out / "runs" / slug(SCRIPTED) / "mcp-answers.jsonl"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    by_tool = {call["tool"]: call for call in calls if call["incident_id"]}
    assert by_tool["get_recent_logs"]["arguments"] == {"lambda_name": "data-processor", **UNUSUAL_LOGS}
    assert by_tool["get_recent_changes"]["arguments"] == {"lambda_name": "data-processor", **UNUSUAL_CHANGES}
    events = by_tool["get_recent_logs"]["answer"]["events"]
    assert events
    assert all("ERROR" in event["message"] for event in events)
    assert any("AccessDenied" in event["message"] for event in events)
    assert "answer" in by_tool["get_recent_changes"]
    assert (out / "leaderboard.md").read_text().count("| revoke-s3 |") == 2


def test_a_case_whose_lane_left_no_report_fails_the_run_and_is_scored_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lane that ends without a report (its sandbox did not start) leaves its cases unrun: scored 0 and
    unsolved in the leaderboard, named on stderr, exit 1."""
    ran = next(c for c in LIVE_CASES if c.name == "revoke-s3")

    def one_lane_only(cases: list[Any], jobs: int, model: str, report_dir: Path, started_at: str) -> DrillRun:
        result = ScenarioResult(ran, checks=[Check(TRIGGER, True, "")])
        return DrillRun(
            [result], model, started_at, 1.0, [Check("lane 2", False, "exited 1 without a report")]
        )

    monkeypatch.setattr("evals.live.run_lanes", one_lane_only)
    argv = ["run", "--model", "rules", "--case", "revoke-s3", "--case", "timeout", "--out", str(tmp_path)]
    assert cli.main(argv) == 1
    assert "not run" in capsys.readouterr().err
    cases = json.loads((tmp_path / "leaderboard.json").read_text())["models"][0]["cases"]
    assert cases["timeout"]["solved"] is False
    assert cases["timeout"]["faults"] == 0.0
    assert cases["timeout"]["failed_checks"] == ["scenario ran"]
    assert cases["revoke-s3"]["failed_checks"] == []
