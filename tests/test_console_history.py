"""The console's history: beside an incident, its function's other incidents, the most like it first, and
their patterns; the fleet page, every function's incidents of 90 days as a weekly chart by fault class
and a row per function with what the fixes did. Written by the store as the pipeline and the executor
write them, read by the console's own queries."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest

from chaos.sandbox.sandbox import Sandbox
from mcp_server.contract.history import FIX, FIX_VERDICT, RECOVERED_AT
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore
from tests.test_console import console
from tests.test_incident_history import NOW, _incident

FN, OTHER = "report-builder", "data-processor"
RAISE = json.dumps(
    [{"service": "lambda", "operation": "UpdateFunctionConfiguration", "params": {"Timeout": 30}}]
)


def _fixed(days: float, seconds: int) -> dict[str, object]:
    recovered = NOW - timedelta(days=days) + timedelta(seconds=seconds)
    return {FIX: RAISE, FIX_VERDICT: "held", RECOVERED_AT: stamp(recovered)}


def _rows(html: str, row_class: str) -> list[list[str]]:
    rows = re.findall(rf'<tr class="{row_class}">(.*?)</tr>', html, re.S)
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        for row in rows
    ]


@pytest.fixture
def history(incidents: IncidentStore) -> dict[str, Any]:
    return {
        "same": _incident(
            incidents, FN, 3, ["timeout"], "REMEDIATED", "UpdateFunctionConfiguration", _fixed(3, 60)
        ),
        "fault only": _incident(
            incidents, FN, 9, ["timeout"], "REMEDIATED", "PutFunctionConcurrency", _fixed(9, 120)
        ),
        "unlike": _incident(incidents, FN, 20, ["permission_loss"], "DIAGNOSED", "PutRolePolicy"),
        "other function": _incident(incidents, OTHER, 2, ["timeout"], "DIAGNOSED"),
        "now": _incident(incidents, FN, 0, ["timeout"], "DIAGNOSED", "UpdateFunctionConfiguration"),
    }


def test_beside_an_incident_its_functions_other_incidents_the_most_like_it_first(
    sandbox: Sandbox, incidents: IncidentStore, history: dict[str, Any]
) -> None:
    page = console(sandbox, incidents).get(f"/incidents/{quote(history['now'], safe='')}").text
    rows = _rows(page, "history-row")
    assert [row[0] for row in rows] == [
        history["same"],
        history["fault only"],
        history["unlike"],
    ]  # not itself
    assert rows[0][1:] == [
        "REMEDIATED",
        "timeout",
        "UpdateFunctionConfiguration",
        "lambda UpdateFunctionConfiguration",
        "held",
        "60 s",
        "fault class, trigger kind, resource",
    ]
    assert rows[2][5:] == ["-", "-", "resource"]  # no fix; like it only in the role its diagnosis named
    assert (
        "<strong>timeout</strong> after UpdateFunctionConfiguration: 1 incident(s), 1 in 30 days; 1 of 1"
        in page
    )


def test_the_fleet_page_charts_each_weeks_incidents_by_fault_class_and_lists_what_the_fixes_did(
    sandbox: Sandbox, incidents: IncidentStore, history: dict[str, Any]
) -> None:
    page = console(sandbox, incidents).get("/fleet").text
    titles = re.findall(r"<title>(.*?)</title>", page)[1:]  # after the page's own
    counted: dict[str, int] = {}
    for title in titles:
        count, fault = re.fullmatch(r"week of [\d-]+: (\d+) (\w+)", title).groups()  # type: ignore[union-attr]
        counted[fault] = counted.get(fault, 0) + int(count)
    assert counted == {"timeout": 4, "permission_loss": 1}  # every incident, once, in its week
    assert _rows(page, "fleet-row") == [
        [FN, "4", "timeout (3), permission_loss (1)", "2", "2", "90 s"],
        [OTHER, "1", "timeout (1)", "0", "0", "-"],
    ]
