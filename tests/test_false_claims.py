"""The live eval's "false verified claims": what a stored diagnosis still claims that the judge does not
ground, or a fault the case did not inject; counted once per claim, per case, in the leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

from chaos.drill.checks import GROUNDED, Check, Incident
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.report import ScenarioResult
from evals import live_report
from evals.false_claims import false_claims, ungrounded_claims
from evals.live import LIVE_CASES, LiveModel, score

REVOKE_S3 = next(case for case in LIVE_CASES if case.name == "revoke-s3")  # expects permission_loss
IAM_DENY = next(case for case in LIVE_CASES if case.name == "iam-deny")  # expects permission_loss


def _incident(faults: list[str], grounding: Grounding | None, status: str = "DIAGNOSED") -> Incident:
    return Incident(
        "data-processor@1",
        "data-processor",
        status,
        diagnosis={"fault_types": faults, "evidence": []},
        grounding=grounding,
    )


def test_a_pointer_not_re_found_and_each_ungrounded_claim_count_once() -> None:
    grounding = Grounding(
        [Finding(0, True), Finding(1, False, "CodeSize holds another value")],
        [
            "fault throttling: pointer #2 (throttles = 0.0) does not show it: counts only above zero",
            "fault throttling: no re-found pointer supports it",  # the same claim again
            "remediation_plan.0.command: targets ['other-function'], not the incident's function",
            "trigger: 2026-11-21T09:50:00+00:00 lies before a success",
        ],
    )
    assert ungrounded_claims(grounding) == {
        "evidence.1",
        "fault_types.throttling",
        "remediation_plan.0.command",
        "trigger",
    }


def test_a_fault_the_case_did_not_inject_is_false_once_even_when_the_judge_also_says_so() -> None:
    grounding = Grounding([Finding(0, True)], ["fault throttling: no re-found pointer supports it"])
    incident = _incident(["permission_loss", "throttling"], grounding)
    assert false_claims(incident, {"permission_loss"}) == {"fault_types.throttling"}
    assert false_claims(_incident(["timeout"], Grounding([Finding(0, True)])), {"permission_loss"}) == {
        "fault_types.timeout"
    }


def test_unknown_an_honest_diagnosis_and_no_diagnosis_claim_nothing_false() -> None:
    grounded = Grounding([Finding(0, True)])
    assert false_claims(_incident(["unknown"], grounded), {"permission_loss"}) == set()
    assert false_claims(_incident(["permission_loss"], grounded), {"permission_loss"}) == set()
    assert false_claims(_incident([], None, status="ERROR"), {"permission_loss"}) == set()


def test_the_leaderboard_counts_them_per_case_and_per_model(tmp_path: Path) -> None:
    lying = _incident(
        ["permission_loss", "throttling"],
        Grounding([Finding(0, True), Finding(1, False, "gone")], ["fault throttling: no re-found pointer"]),
    )
    honest = _incident(["unknown"], Grounding([Finding(0, True)]))
    results = [
        ScenarioResult(REVOKE_S3, incidents=[lying, honest], checks=[Check(GROUNDED, False, "")]),
        ScenarioResult(IAM_DENY, incidents=[honest], checks=[Check(GROUNDED, True, "")]),
    ]
    cases = [score(result, None) for result in results]
    assert [case.false_claims for case in cases] == [2, 0]  # evidence.1 and fault_types.throttling
    model = LiveModel("adversarial", None, cases, 1.0, [])
    md, js = live_report.write([model], "now", tmp_path)
    board = json.loads(js.read_text())["models"][0]
    assert board["totals"]["false_verified_claims"] == 2
    assert {name: case["false_verified_claims"] for name, case in board["cases"].items()} == {
        "revoke-s3": 2,
        "iam-deny": 0,
    }
    text = md.read_text()
    assert "| false verified claims |" in text
    assert "- `false verified claims`: claims the stored diagnosis still makes" in text
