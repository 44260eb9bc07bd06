"""Recurring incidents in the drill: an incident fixed by the product's executor before the scenario's next
act (``Act.fixed_first``), and what a later diagnosis on the same function recalls of it
(``ExpectedIncident.recalls`` / ``decoy``).

The judge reads the stored diagnosis's ``precedents`` as dicts and compares them with what it knows from
its own side: the earlier incident's id as the drill read it back, and the calls of the plan stored for it
(incident-context's PLAN, what the executor applied). Nothing of the diagnosis's own recall is imported.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import boto3

from chaos.drill.checks import (
    FIXED_FIRST,
    NOT_RECALLED,
    RECALLED,
    Applier,
    Check,
    Incident,
    Stage,
    applied_fix,
)
from chaos.drill.scenarios import RECOVERS, Scenario
from chaos.sandbox.names import STATE_TABLE

HELD: Final = "held"
APPROVAL_WAIT_SECONDS: Final = 60.0  # for the plan of a final diagnosis to await approval
# For the function's alarms to leave ALARM once it recovered: a period of one minute, judged once complete,
# with no breaching datapoint (notBreaching) takes up to two.
ALARM_OK_SECONDS: Final = 150.0
POLL_SECONDS: Final = 1.0


def opened_by(scenario: Scenario, act: int) -> range:
    """The indices in ``scenario.expected`` of the incidents act number ``act`` opens (its ``opens``, after
    those of the acts before it)."""
    before = sum(a.opens for a in scenario.acts[:act])
    return range(before, before + scenario.acts[act].opens)


def matched(scenario: Scenario, incidents: Sequence[Incident]) -> dict[int, Incident]:
    """The incident each expected one (by index) is judged against: the n-th incident of a function with
    the n-th expected on it, as the runner pairs them."""
    mine: defaultdict[str, list[Incident]] = defaultdict(list)
    for incident in incidents:
        mine[incident.function].append(incident)
    seen: defaultdict[str, int] = defaultdict(int)
    pairs = {}
    for index, expected in enumerate(scenario.expected):
        n = seen[expected.function]
        seen[expected.function] += 1
        if n < len(mine[expected.function]):
            pairs[index] = mine[expected.function][n]
    return pairs


def problems(scenario: Scenario) -> list[str]:
    """What is wrong with the scenario's recurrence declarations (empty: nothing)."""
    found = []
    for number, act in enumerate(scenario.acts):
        if not act.fixed_first:
            continue
        if number == 0 or not scenario.acts[number - 1].opens:
            found.append(f"act {number} is fixed_first, but the act before it opens no incident")
            continue
        for index in opened_by(scenario, number - 1):
            if index >= len(scenario.expected):
                found.append(f"act {number - 1} opens incident {index}, which is not expected")
            elif not scenario.expected[index].command or scenario.expected[index].applies:
                found.append(f"incident {index} is fixed before act {number}: a command, and no applies")
    fixed = {i for n, a in enumerate(scenario.acts) if a.fixed_first for i in opened_by(scenario, n - 1)}
    for index, expected in enumerate(scenario.expected):
        earlier = [e for e in scenario.expected[:index] if e.function == expected.function]
        if expected.decoy and not earlier:
            found.append(f"incident {index} is a decoy, but no earlier incident is on {expected.function}")
        if expected.recalls is None:
            continue
        recalled = expected.recalls
        if not 0 <= recalled < index:
            found.append(f"incident {index} recalls {recalled}, which is not an earlier incident")
        elif scenario.expected[recalled].function != expected.function:
            found.append(f"incident {index} recalls {recalled}, an incident of another function")
        elif scenario.expected[recalled].fault_types != expected.fault_types:
            found.append(f"incident {index} recalls {recalled}, an incident of other fault types")
        elif recalled not in fixed:
            found.append(f"incident {index} recalls {recalled}, which no act fixes first (fixed_first)")
    return found


def _calls(fix: object) -> list[tuple[str, str, Any]]:
    """Calls as (service, operation, parameters), from a precedent's ``fix`` or a plan's calls."""
    calls = fix if isinstance(fix, list) else []
    return [
        (str(c.get("service")), str(c.get("operation")), c.get("parameters", c.get("params")))
        for c in calls
        if isinstance(c, dict)
    ]


def _precedents(diagnosis: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    listed = (diagnosis or {}).get("precedents") or []
    return [p for p in listed if isinstance(p, dict)]


def recalled(
    diagnosis: Mapping[str, Any] | None,
    earlier: str,
    plan: Sequence[Mapping[str, Any]],
    reused: Sequence[str],
    prefix: str = "",
) -> Check:
    """The diagnosis's precedents cite ``earlier`` by id, its fix held, with the calls of ``plan`` (the
    earlier incident's stored plan: service, operation, params), and the incident's own plan cites
    ``earlier`` among those where its same calls held (``reused``, its stored plan's precedents)."""
    cited = [p for p in _precedents(diagnosis) if p.get("incident_id") == earlier]
    named = [str(p.get("incident_id")) for p in _precedents(diagnosis)]
    if not cited:
        return Check(RECALLED, False, f"{prefix}its precedents {named or 'none'} do not cite {earlier}")
    precedent, wanted = cited[0], _calls(list(plan))
    problems = []
    if precedent.get("fix_verdict") != HELD:
        problems.append(f"its fix_verdict is {precedent.get('fix_verdict')!r}, not {HELD!r}")
    if not wanted:
        problems.append("the drill read no stored plan for it")
    elif _calls(precedent.get("fix")) != wanted:
        problems.append(f"its fix {_calls(precedent.get('fix'))} is not the plan applied {wanted}")
    if earlier not in reused:
        problems.append(f"its plan does not reuse that fix (it cites {list(reused) or 'none'})")
    if problems:
        return Check(
            RECALLED, False, f"{prefix}cites {earlier} ({precedent.get('field')}), but " + "; ".join(problems)
        )
    shown = ", ".join(f"{service} {operation}" for service, operation, _ in wanted)
    where = f"{earlier} ({precedent.get('field')})"
    return Check(RECALLED, True, f"{prefix}cites {where}, its fix held and reused: {shown}")


def recalls_none(diagnosis: Mapping[str, Any] | None, earlier: Sequence[str], prefix: str = "") -> Check:
    """The diagnosis's precedents cite none of ``earlier`` (the scenario's incidents before it)."""
    named = [str(p.get("incident_id")) for p in _precedents(diagnosis)]
    cited = [i for i in named if i in earlier]
    detail = (
        f"cites {cited}" if cited else f"cites none of {list(earlier)} (its precedents: {named or 'none'})"
    )
    return Check(NOT_RECALLED, not cited, prefix + detail)


def recall_checks(scenario: Scenario, incidents: Sequence[Incident]) -> list[Check]:
    """The recall of each expected incident that ``recalls`` an earlier one, or is a ``decoy``."""
    pairs = matched(scenario, incidents)
    checks = []
    for index, expected in enumerate(scenario.expected):
        if expected.recalls is None and not expected.decoy:
            continue
        incident = pairs.get(index)
        if incident is None or incident.diagnosis is None:
            name = RECALLED if expected.recalls is not None else NOT_RECALLED
            checks.append(Check(name, False, f"expected incident {index}: no diagnosis to read"))
            continue
        prefix = f"{incident.incident_id}: "
        if expected.decoy:
            earlier = [pairs[i].incident_id for i in range(index) if i in pairs]
            checks.append(recalls_none(incident.diagnosis, earlier, prefix))
            continue
        assert expected.recalls is not None
        first = pairs.get(expected.recalls)
        if first is None:
            checks.append(Check(RECALLED, False, f"{prefix}incident {expected.recalls} was never opened"))
            continue
        checks.append(recalled(incident.diagnosis, first.incident_id, first.plan, incident.reused, prefix))
    return checks


def _status(operator: boto3.Session, incident_id: str) -> str:
    key = {"incident_id": {"S": incident_id}}
    item = operator.client("dynamodb").get_item(TableName=STATE_TABLE, Key=key, ConsistentRead=True)
    return str(item.get("Item", {}).get("status", {}).get("S"))


def _await_plan(operator: boto3.Session, incident_id: str, wait: float) -> str:
    """The incident's status once its plan awaits approval, or when ``wait`` is over."""
    deadline = time.monotonic() + wait
    while (status := _status(operator, incident_id)) in ("DIAGNOSED", "PLANNING"):
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    return status


def _alarms_ok(operator: boto3.Session, function: str, wait: float) -> tuple[bool, str]:
    """Whether every alarm of ``function`` left ALARM within ``wait``, and how long it took."""
    cloudwatch, started = operator.client("cloudwatch"), time.monotonic()
    while True:
        alarms = cloudwatch.describe_alarms(StateValue="ALARM")["MetricAlarms"]
        firing = [a["AlarmName"] for a in alarms if str(a["AlarmName"]).startswith(f"{function}-")]
        waited = time.monotonic() - started
        if not firing or waited >= wait:
            break
        time.sleep(POLL_SECONDS)
    if firing:
        return False, f"{firing} still in ALARM after {waited:.0f} s"
    return True, f"its alarms out of ALARM after {waited:.0f} s"


def fix_first(
    scenario: Scenario,
    act: int,
    incidents: Sequence[Incident],
    stage: Stage,
    applier: Applier,
    operator: boto3.Session,
    say: Callable[[str], None],
    planned: bool = True,
) -> list[Check]:
    """Before act number ``act``: each incident the act before it opened has its expected fix applied as at
    judge time (by the product's executor once a person approves its plan, which it waits for where
    ``planned``), the function must recover, and then its alarms leave ALARM, so that the same fault can
    raise them again."""
    pairs, checks = matched(scenario, incidents), []
    for index in opened_by(scenario, act - 1):
        expected, incident = scenario.expected[index], pairs.get(index)
        if incident is None or incident.diagnosis is None or expected.command is None:
            checks.append(Check(FIXED_FIRST, False, f"expected incident {index}: no diagnosis to fix"))
            continue
        prefix = f"{incident.incident_id}: "
        if planned:
            say(f"fix first: {incident.incident_id}'s plan, awaiting approval")
            status = _await_plan(operator, incident.incident_id, APPROVAL_WAIT_SECONDS)
            if status != "AWAITING_APPROVAL":
                checks.append(
                    Check(FIXED_FIRST, False, f"{prefix}its plan is {status}, not awaiting approval")
                )
                continue
        applied = applied_fix(incident, expected.command, RECOVERS, stage, applier, prefix)
        if not applied.ok:
            checks.append(Check(FIXED_FIRST, False, applied.detail))
            continue
        say(f"fix first: wait for {expected.function}'s alarms to leave ALARM")
        ok, seen = _alarms_ok(operator, expected.function, ALARM_OK_SECONDS)
        checks.append(Check(FIXED_FIRST, ok, f"{applied.detail}; {seen}"))
    return checks
