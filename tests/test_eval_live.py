"""Live benchmark runs: cases enacted on fresh sandbox worlds, any model free to call any tool with any
valid arguments, scored ITBench-style with the drill's independent judge for grounding."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import remediation as bench_remediation
from chaos.bedrock_fake import FakeConverse
from chaos.drill.checks import (
    APPLIED,
    FIXED_FIRST,
    GROUNDED,
    NOT_RECALLED,
    RECALLED,
    TRIGGER,
    Check,
    Incident,
)
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.remediation import APPLIED as BY_EXECUTOR
from chaos.drill.remediation import FOUND_IN_PLACE, WORLD_AS_BEFORE, remediated, since_alarm
from chaos.drill.report import DrillRun, ScenarioResult
from chaos.drill.scenarios import SCENARIOS
from docgen.outputs import Marker, _per_case
from evals import cli, live_report
from evals.live import AS_THE_OPERATOR, LIVE_CASES, LiveModel, fault_score, recovery, score, slug
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
        "recalled": None,  # not a case run twice
        "recovered": None,
    }
    assert scored.to_recover is None
    assert (scored.found, scored.pointers) == (1, 2)
    assert not scored.solved
    assert scored.failed == ["evidence grounded", "fault types"]
    assert scored.cost == pytest.approx((1000 * 3 + 100 * 15) / 1e6)


@pytest.mark.parametrize(
    ("recalled", "decoy", "column"),
    [(True, True, True), (False, True, False), (True, False, False)],
)
def test_a_case_run_twice_scores_the_recall_of_its_first_incident_and_the_decoys_silence(
    recalled: bool, decoy: bool, column: bool
) -> None:
    case = next(c for c in LIVE_CASES if c.name == "recurring-throttle")  # the same fault, fixed, again
    checks = [Check(RECALLED, recalled, ""), Check(NOT_RECALLED, decoy, "")]
    assert score(ScenarioResult(case, checks=checks), None).columns["recalled"] is column


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
        "applied": True,  # the policy put back: data-processor reads its input again
        "grounded": True,
        "recalled": None,  # run once
        "recovered": True,  # by the executor, once the drill's person approved its plan
    }
    assert revoked["seconds_to_recover"] > 0
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


# What the drill's APPLIED check reads (chaos.drill.checks._applied), ``how`` being what the applier said:
# DrillRemediation.fix's "{how}, {by}, {since_alarm}" for the executor, the runner's for the operator.
APPROVED = "approved with incident-remediate"


def _by_executor(incident_id: str, seconds: float, by: str = BY_EXECUTOR) -> str:
    how = f"{APPROVED}, {by}, {since_alarm(seconds)}"
    return f"{incident_id}: iam PutRolePolicy {how}; function-succeeds: 5 calls, the last succeeded"


def _case(name: str, *applied: Check) -> ScenarioResult:
    case = next(c for c in LIVE_CASES if c.name == name)
    return ScenarioResult(case, checks=[Check(TRIGGER, True, ""), *applied])


def test_the_drill_phrase_for_remediated_is_read_back_once_for_the_eval_and_the_bench() -> None:
    detail = _by_executor("data-processor@1", 41.26)
    assert remediated(detail) == (BY_EXECUTOR, 41.3)  # as the drill rounds it
    assert remediated(_by_executor("data-processor@2", 3.0, FOUND_IN_PLACE)) == (FOUND_IN_PLACE, 3.0)
    assert remediated(f"data-processor@1: iam PutRolePolicy {AS_THE_OPERATOR}; function-succeeds: ok") is None
    report = {
        "passed": True,
        "scenarios": [
            {
                "name": "revoke-s3",
                "checks": [
                    {"name": "remediation command", "ok": True, "detail": ""},
                    {"name": APPLIED, "ok": True, "detail": detail},
                ],
                "incidents": [{"incident_id": "data-processor@1", "seconds": 20.0}],
            }
        ],
    }
    figures = bench_remediation.cost(report)
    assert (figures.remediated, figures.approved, figures.diagnosed) == (1, [("revoke-s3", 41.3)], [20.0])


def test_the_bench_counts_a_recurrence_fixed_before_its_next_act_as_remediated() -> None:
    first, again = _by_executor("data-processor@1", 6.0), _by_executor("data-processor@2", 7.5)
    unfixed = "data-processor@3: its plan is NO_PLAN, not awaiting approval"
    checks = [
        *({"name": "remediation command", "ok": True, "detail": ""} for _ in range(3)),
        {"name": FIXED_FIRST, "ok": True, "detail": f"{first}; its alarms out of ALARM after 70 s"},
        {"name": APPLIED, "ok": True, "detail": again},
        {"name": FIXED_FIRST, "ok": False, "detail": unfixed},
    ]
    incidents = [{"incident_id": f"data-processor@{n}", "seconds": 2.0} for n in (1, 2, 3)]
    report = {
        "passed": True,
        "scenarios": [{"name": "recurring-throttle", "checks": checks, "incidents": incidents}],
    }
    figures = bench_remediation.cost(report)
    assert (figures.with_command, figures.remediated) == (3, 2)
    assert figures.approved == [("recurring-throttle", 6.0), ("recurring-throttle", 7.5)]


def test_a_case_recovers_when_the_executor_brought_each_fix_to_remediated_its_last_one_timing_it() -> None:
    one = _case("revoke-s3", Check(APPLIED, True, _by_executor("data-processor@1", 12.5)))
    assert recovery(one) == (True, 12.5)
    scored = score(one, None)
    assert (scored.columns["recovered"], scored.to_recover) == (True, 12.5)
    assert scored.columns["applied"] is True
    two = _case(
        "api-throttled",
        Check(APPLIED, True, _by_executor("orders-api@1", 8.0)),
        Check(APPLIED, True, _by_executor("orders-api@2", 9.5, FOUND_IN_PLACE)),  # the first one's fix
    )
    assert recovery(two) == (True, 9.5)


def test_a_fix_that_failed_or_never_came_is_not_recovered_and_has_no_time() -> None:
    refused = Check(APPLIED, False, "data-processor@1: PutRolePolicy not applied: the plan is NO_PLAN: None")
    assert recovery(_case("revoke-s3", refused)) == (False, None)
    # The executor said REMEDIATED, but the stage's own predicate did not see the function recover.
    unseen = _by_executor("data-processor@1", 7.0).replace("the last succeeded", "none succeeded")
    scored = score(_case("revoke-s3", Check(APPLIED, False, unseen)), None)
    assert (scored.columns["recovered"], scored.to_recover) == (False, None)
    # Two fixes expected, one incident never diagnosed (no APPLIED check of its own).
    assert recovery(_case("api-throttled", Check(APPLIED, True, _by_executor("orders-api@1", 8.0)))) == (
        False,
        None,
    )


def test_a_fix_the_operator_applied_or_a_twist_keeps_out_is_not_scored_for_recovery() -> None:
    operator = f"data-processor@1: iam PutRolePolicy {AS_THE_OPERATOR}; function-succeeds: 5 calls"
    assert recovery(_case("revoke-s3", Check(APPLIED, True, operator))) == (None, None)
    kept_out = (
        f"report-builder@1: lambda UpdateFunctionConfiguration {APPROVED}; NOT_REMEDIATED: the fix did not "
        f"help; {WORLD_AS_BEFORE}"
    )
    assert recovery(_case("fix-does-not-help", Check(APPLIED, True, kept_out))) == (None, None)
    # A twist whose executor did what it must not: the check fails, still not a recovery to score.
    wrong = Check(APPLIED, False, "orders-api@1: UpdateAlias not applied: REMEDIATED (applied)")
    assert recovery(_case("executor-killed", wrong)) == (None, None)
    assert recovery(_case("revoke-s3")) == (None, None)  # not diagnosed: nothing applied


def test_a_model_recovers_a_share_of_its_cases_in_a_median_time(tmp_path: Path) -> None:
    results = [
        _case("revoke-s3", Check(APPLIED, True, _by_executor("data-processor@1", 10.0))),
        _case("iam-deny", Check(APPLIED, True, _by_executor("data-processor@1", 50.0))),
        _case("iam-narrow", Check(APPLIED, True, _by_executor("data-processor@1", 30.5))),
        _case("network-sg", Check(APPLIED, False, "data-processor@1: not applied: another operation")),
        _case("fix-does-not-help"),  # not scored
    ]
    model = LiveModel("rules", None, [score(result, None) for result in results], 1.0, [])
    assert model.column("recovered") == (3, 4)
    assert model.to_recover == 30.5
    assert LiveModel("none", None, [score(results[3], None)], 1.0, []).to_recover is None

    md, js = live_report.write([model], "now", tmp_path)
    board = json.loads(js.read_text())
    totals, cases = board["models"][0]["totals"], board["models"][0]["cases"]
    assert (totals["columns"]["recovered"], totals["median_seconds_to_recover"]) == ([3, 4], 30.5)
    assert [cases[name]["columns"]["recovered"] for name in cases] == [True, True, True, False, None]
    assert [cases[name]["seconds_to_recover"] for name in cases] == [10.0, 50.0, 30.5, None, None]
    assert list(board["columns"])[-1] == "recovered"  # the totals' columns, as docgen reads them
    assert board["seconds_to_recover"].startswith("seconds from the alarm to REMEDIATED")
    text = md.read_text()
    assert "| recovered | median time to recover |" in text
    assert "| 3/4 | 30.5 s |" in text
    lines = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    head = next(line for line in lines if line[0] == "case")
    shown = {line[0]: dict(zip(head, line, strict=True)) for line in lines if line[0] in cases}
    assert [(shown[name]["recovered"], shown[name]["time to recover"]) for name in cases] == [
        ("✓", "10.0 s"),
        ("✓", "50.0 s"),
        ("✓", "30.5 s"),
        ("✗", "-"),
        ("-", "-"),
    ]
    assert "- `recovered`: the harness approved the plan as a person with incident-remediate" in text
    assert "- `time to recover`: seconds from the alarm to REMEDIATED" in text
    # The README's leaderboard, as docgen renders it from the same JSON.
    rendered = _per_case(Marker.parse(f"incident-eval run --model rules --out {tmp_path}"), "")
    readme = [line.strip("| ").split(" | ") for line in rendered.splitlines() if line.startswith("| ")]
    totals_row = dict(zip(readme[0], readme[2], strict=True))
    assert (totals_row["recovered"], totals_row["median time to recover"]) == ("3/4", "30.5 s")
    case_head = next(line for line in readme if line[0] == "case")
    first = next(line for line in readme if line[0] == "revoke-s3")
    assert dict(zip(case_head, first, strict=True))["time to recover"] == "10.0 s"
