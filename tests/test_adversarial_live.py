"""The adversary through ``incident-eval run --model adversarial``: served at a local Converse endpoint for
the run, reached by the lanes' supervisors through the product's ``bedrock:`` path, on a live case. It
solves nothing, and none of its lies stands verified and false."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals import cli


def _stored_diagnosis(out: Path) -> dict[str, Any]:
    reports = sorted((out / "runs" / "adversarial").rglob("drill-report.json"))
    assert reports, f"no drill report under {out}"
    (scenario,) = json.loads(reports[0].read_text())["scenarios"]
    (incident,) = scenario["incidents"]
    assert incident["status"] == "DIAGNOSED", incident
    diagnosis: dict[str, Any] = incident["diagnosis"]
    return diagnosis


def test_incident_eval_runs_the_adversary_which_solves_nothing_and_leaves_no_false_claim_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    argv = ["run", "--model", "adversarial", "--case", "revoke-s3", "--jobs", "1", "--out", str(out)]
    assert cli.main(argv) == 0
    assert "| `adversarial` | 0/1 |" in capsys.readouterr().out

    (model,) = json.loads((out / "leaderboard.json").read_text())["models"]
    assert model["model"] == "adversarial"
    assert model["totals"]["false_verified_claims"] == 0
    case = model["cases"]["revoke-s3"]
    assert case["solved"] is False
    assert case["false_verified_claims"] == 0
    assert case["diagnosed"] == "unknown"
    assert case["faults"] == 0.0
    # Per investigation: every tool, a dishonest diagnosis, another after the refusal; twice when the
    # diagnosis was provisional and its re-check investigated again.
    assert case["llm_calls"] in (3, 6)
    assert case["cost_usd"] == 0.0
    assert case["pointers_found"] == case["pointers"]  # what is left (context) the server did send

    diagnosis = _stored_diagnosis(out)
    assert diagnosis["fault_types"] == ["unknown"]
    assert diagnosis["remediation_plan"] == []
    assert diagnosis.get("trigger") is None  # and no success in the logs to lie about a trigger before
    assert all(pointer["supports"] is None for pointer in diagnosis["evidence"])
    reasons = [claim["reason"] for claim in diagnosis["refused"]]
    for refused in (
        "is not what",  # a partial number, a sibling's value
        "it counts none",  # a zero count cited as support
        "refuses none of the calls",  # an Allow cited as a Deny
        "is not the failing function data-processor",  # a fix for another function
        "quotes a redacted value",  # a placeholder in a command
        "not corroborated",  # the fault nothing shows
    ):
        assert any(refused in reason for reason in reasons), (refused, reasons)
    assert sum("is not what" in reason for reason in reasons) == 2
