"""Recurring incidents in the drill: the scenarios that fix an incident before the next act and expect a
later diagnosis to recall it are declared consistently, and the judge's recall checks pass and fail on the
stored diagnosis's precedents as they should."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.drill.checks import NOT_RECALLED, RECALLED, Incident
from chaos.drill.grounding import judge
from chaos.drill.recurrence import matched, opened_by, problems, recall_checks, recalled, recalls_none
from chaos.drill.scenarios import (
    RECOVERS,
    SCENARIOS,
    THROTTLE_0,
    Act,
    ExpectedIncident,
    Scenario,
    _concurrency_deleted,
)
from chaos.drill.sent_answers import HISTORY, SentAnswer
from chaos.sandbox import names

FIRST = "report-builder@2026-12-01T10:00:00.000Z"
DECOY = "report-builder@2026-12-01T10:05:00.000Z"
SECOND = "report-builder@2026-12-01T10:10:00.000Z"
PLAN = [
    {
        "service": "lambda",
        "operation": "UpdateFunctionConfiguration",
        "params": {"FunctionName": names.REPORT_FUNCTION, "MemorySize": 1024},
    }
]


def _precedent(incident_id: str = FIRST, verdict: str | None = "held", **changes: Any) -> dict[str, Any]:
    fix = [{"service": c["service"], "operation": c["operation"], "parameters": c["params"]} for c in PLAN]
    precedent = {
        "incident_id": incident_id,
        "field": "incidents.0",
        "observed_at": "2026-12-01T10:00:00.000Z",
        "status": "REMEDIATED" if verdict == "held" else "NOT_REMEDIATED",
        "fix": fix,
        "fix_verdict": verdict,
        "seconds_to_recover": 42.0,
    }
    return precedent | changes


def _diagnosis(*precedents: dict[str, Any]) -> dict[str, Any]:
    return {"fault_types": ["out_of_memory"], "precedents": list(precedents)}


def test_every_scenario_declares_its_recurrence_consistently() -> None:
    assert {name: problems(s) for s in SCENARIOS if (name := s.name) and problems(s)} == {}
    recurring = [s for s in SCENARIOS if any(e.recalls is not None for e in s.expected)]
    assert len(recurring) >= 3
    for scenario in recurring:  # the shape: a recall, and a decoy on the same function
        assert any(e.decoy for e in scenario.expected), scenario.name


def _scenario(*expected: ExpectedIncident, fixed: bool = True) -> Scenario:
    acts = (
        Act(names.REPORT_FUNCTION, (THROTTLE_0,), opens=1),
        Act(names.REPORT_FUNCTION, (THROTTLE_0,), fixed_first=fixed),
    )
    return Scenario("s", "t", acts, expected)


FIXED = ExpectedIncident(
    names.REPORT_FUNCTION, frozenset({"throttling"}), command=_concurrency_deleted(names.REPORT_FUNCTION)
)


@pytest.mark.parametrize(
    ("expected", "fixed", "problem"),
    [
        (
            (FIXED, ExpectedIncident(names.REPORT_FUNCTION, frozenset({"throttling"}), recalls=1)),
            True,
            "recalls 1",
        ),
        (
            (FIXED, ExpectedIncident(names.REPORT_FUNCTION, frozenset({"timeout"}), recalls=0)),
            True,
            "other fault",
        ),
        (
            (FIXED, ExpectedIncident(names.ORDERS_FUNCTION, frozenset({"throttling"}), recalls=0)),
            True,
            "another",
        ),
        (
            (FIXED, ExpectedIncident(names.REPORT_FUNCTION, frozenset({"throttling"}), recalls=0)),
            False,
            "no act",
        ),
        ((ExpectedIncident(names.REPORT_FUNCTION, frozenset({"throttling"}), decoy=True),), False, "decoy"),
        (
            (
                ExpectedIncident(
                    names.REPORT_FUNCTION,
                    frozenset({"throttling"}),
                    command=_concurrency_deleted(names.REPORT_FUNCTION),
                    applies=RECOVERS,
                ),
            ),
            True,
            "no applies",
        ),
    ],
)
def test_a_recurrence_declaration_that_cannot_hold_is_refused(
    expected: tuple[ExpectedIncident, ...], fixed: bool, problem: str
) -> None:
    found = problems(_scenario(*expected, fixed=fixed))
    assert any(problem in p for p in found), found


def test_a_consistent_declaration_has_no_problem() -> None:
    second = ExpectedIncident(names.REPORT_FUNCTION, frozenset({"throttling"}), recalls=0)
    scenario = _scenario(FIXED, second)
    assert problems(scenario) == []
    assert list(opened_by(scenario, 0)) == [0]
    assert list(opened_by(scenario, 1)) == []


def test_recalls_and_decoy_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        ExpectedIncident(names.REPORT_FUNCTION, frozenset({"timeout"}), recalls=0, decoy=True)


def test_the_earlier_incident_cited_with_its_held_fix_passes() -> None:
    check = recalled(_diagnosis(_precedent()), FIRST, PLAN, [FIRST])
    assert check.name == RECALLED
    assert check.ok, check.detail
    assert "UpdateFunctionConfiguration" in check.detail


@pytest.mark.parametrize("reused", [[], ["report-builder@2026-11-30T10:00:00.000Z"]])
def test_a_recall_whose_plan_does_not_reuse_the_fix_fails(reused: list[str]) -> None:
    check = recalled(_diagnosis(_precedent()), FIRST, PLAN, reused)
    assert not check.ok
    assert "its plan does not reuse that fix" in check.detail


@pytest.mark.parametrize(
    ("diagnosis", "why"),
    [
        (_diagnosis(), "precedents none do not cite"),
        (_diagnosis(_precedent("report-builder@2026-11-30T10:00:00.000Z")), "do not cite"),
        (_diagnosis(_precedent(verdict="did_not_help")), "'did_not_help', not 'held'"),
        (_diagnosis(_precedent(verdict=None)), "None, not 'held'"),
        (_diagnosis(_precedent(fix=[])), "is not the plan applied"),
        (
            _diagnosis(
                _precedent(
                    fix=[{"service": "lambda", "operation": "UpdateFunctionConfiguration", "parameters": {}}]
                )
            ),
            "is not the plan applied",
        ),
        ({"fault_types": ["out_of_memory"]}, "do not cite"),
    ],
)
def test_a_wrong_recall_fails(diagnosis: dict[str, Any], why: str) -> None:
    check = recalled(diagnosis, FIRST, PLAN, [FIRST])
    assert not check.ok
    assert why in check.detail


def test_no_stored_plan_to_compare_fails() -> None:
    check = recalled(_diagnosis(_precedent()), FIRST, [], [FIRST])
    assert not check.ok
    assert "no stored plan" in check.detail


def test_a_decoy_that_cites_an_earlier_incident_fails() -> None:
    check = recalls_none(_diagnosis(_precedent()), [FIRST])
    assert check.name == NOT_RECALLED
    assert not check.ok
    assert FIRST in check.detail


def test_a_decoy_citing_only_incidents_outside_the_scenario_passes() -> None:
    other = _precedent("report-builder@2026-11-30T10:00:00.000Z")
    assert recalls_none(_diagnosis(other), [FIRST]).ok
    assert recalls_none(_diagnosis(), [FIRST]).ok


def _read(
    incident_id: str,
    diagnosis: dict[str, Any] | None,
    plan: list[dict[str, Any]],
    reused: list[str] | None = None,
) -> Incident:
    return Incident(
        incident_id, names.REPORT_FUNCTION, "DIAGNOSED", diagnosis=diagnosis, plan=plan, reused=reused or []
    )


def test_recall_checks_pair_the_expected_incidents_with_those_opened() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "recurring-oom")
    incidents = [
        _read(FIRST, {"precedents": []}, PLAN),
        _read(DECOY, {"precedents": [_precedent("report-builder@2026-11-01T10:00:00.000Z")]}, []),
        _read(SECOND, _diagnosis(_precedent()), [], [FIRST]),
    ]
    assert matched(scenario, incidents) == dict(enumerate(incidents))
    checks = recall_checks(scenario, incidents)
    assert [(c.name, c.ok) for c in checks] == [(NOT_RECALLED, True), (RECALLED, True)]
    incidents[1] = _read(DECOY, {"precedents": [_precedent()]}, [])  # the decoy cites the first: wrong
    incidents[2] = _read(SECOND, _diagnosis(_precedent(verdict="not_applied")), [])
    assert [(c.name, c.ok) for c in recall_checks(scenario, incidents)] == [
        (NOT_RECALLED, False),
        (RECALLED, False),
    ]
    assert [c.ok for c in recall_checks(scenario, incidents[:2])] == [False, False]  # the second never opened


def test_the_judge_re_finds_each_precedent_in_the_history_answer_sent() -> None:
    answer = {"function_name": names.REPORT_FUNCTION, "incidents": [{"incident_id": FIRST}], "patterns": []}
    sent = [SentAnswer(HISTORY, {"lambda_name": names.REPORT_FUNCTION}, answer)]
    assert not [u for u in judge(_diagnosis(_precedent()), sent).ungrounded if "precedents" in u]
    moved = _diagnosis(_precedent(field="incidents.1"))
    assert [u for u in judge(moved, sent).ungrounded if u.startswith("precedents.0")]
    assert [u for u in judge(_diagnosis(_precedent()), []).ungrounded if u.startswith("precedents.0")]
    recurrence = {"fault_type": "out_of_memory", "field": "patterns.0"}
    assert [u for u in judge({"recurrence": recurrence}, sent).ungrounded if u.startswith("recurrence")]


def test_every_scenario_of_the_drill_declares_its_recurrence_consistently() -> None:
    assert {s.name: problems(s) for s in SCENARIOS if problems(s)} == {}
    recurring = [s.name for s in SCENARIOS if any(act.fixed_first for act in s.acts)]
    assert len(recurring) >= 3  # the three: each the same fault again after its fix, with a decoy
