"""Live cases: the drill's scenarios, each a recipe (the world, the fault, the traffic, the right answer)
enacted on a fresh sandbox world for every model, which may call any tool with any valid arguments and gets
the live world's answers. The drill's lanes do the enacting (warm worlds reused between scenarios, each
restored and checked); this module picks the cases and scores them.

Scoring follows ITBench's strict rule for the faults: a case scores 0 when any injected fault is missed,
otherwise the precision of the faults named. The trigger, the resources, the remediation command (the
expected operation with every parameter the case states), that command applied to the world (the function
must recover) and the grounding (every pointer re-found by the drill's independent judge in the answers the
MCP server sent) are columns of their own, as OpenRCA 2.0 keeps right answers apart from grounded ones; so
are whether the product's executor brought the fix a person approved to REMEDIATED, and how long from the
alarm that took. A case is solved when every check of the drill passed.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from chaos.drill.checks import (
    APPLIED,
    COMMAND,
    GROUNDED,
    NAMED_GAP,
    NOT_RECALLED,
    RECALLED,
    RESOURCES,
    TRIGGER,
    Check,
)
from chaos.drill.lanes import run_lanes
from chaos.drill.remediation import WORLD_AS_BEFORE, remediated
from chaos.drill.report import ScenarioResult
from chaos.drill.scenarios import SCENARIOS, UNRECOVERED, Scenario
from chaos.selection import select_by_name
from evals.false_claims import false_claims
from supervisor.agent.prices import Price, price_of
from supervisor.schemas import TokenUsage
from supervisor.settings import SupervisorSettings

# The drill scenarios that are diagnosis cases: an alarm opens an incident a model must diagnose (not the
# healthy control, where no model is asked, nor the infrastructure scenarios, which test the pipeline, nor
# one that investigates with a model of its own, which tests the guards after the diagnosis).
LIVE_CASES: Final = tuple(
    scenario
    for scenario in SCENARIOS
    if scenario.expected and scenario.infra is None and scenario.model is None
)

COLUMNS: Final[Mapping[str, tuple[str, ...]]] = {
    "trigger": (TRIGGER,),
    "resources": (RESOURCES,),
    "command": (COMMAND, NAMED_GAP),
    "applied": (APPLIED,),
    "grounded": (GROUNDED,),
    "recalled": (RECALLED, NOT_RECALLED),
}
RECOVERED: Final = "recovered"
TIME_TO_RECOVER: Final = "time to recover"
# The columns a case passes, fails or is not scored for: the drill's checks', then the executor's recovery.
SCORED: Final = (*COLUMNS, RECOVERED)
# How the drill's check reads where the operator applied the fix (chaos.drill.runner, _OperatorApplier).
AS_THE_OPERATOR: Final = "applied as the operator"
COLUMN_TITLES: Final[Mapping[str, str]] = {
    "faults": "ITBench's strict fault score: 0 if an injected fault is missed, else the precision of the "
    "faults named",
    "trigger": "the change named as the trigger is the one the scenario made (or none, where none can show)",
    "resources": "the affected resources named exactly",
    "command": "the first remediation command, read by the stage's parser from botocore's models, is the "
    "expected AWS CLI operation with every parameter the case states, compared by value (or, where no "
    "command can fix it, none and a gap naming why)",
    "applied": "that command, only if it is the expected fix, applied to the live world as the operator, "
    "lets the function recover by the stage's own measure",
    "grounded": "every evidence pointer re-found by the drill's judge in the answers the MCP server sent, "
    "and every claim resting only on re-found pointers",
    "recalled": "a case run twice in one world (the same fault again after the executor fixed it, another "
    "fault on the function between): the second diagnosis cites the first incident by id with its fix, "
    "held, and its plan reuses that fix; the decoy's cites neither",
    RECOVERED: "the harness approved the plan as a person with incident-remediate, the product's executor "
    "applied it and brought the incident to REMEDIATED, and the stage's own predicate saw the function "
    "recover, for every incident of the case (not scored where the case's fix is applied as the operator "
    "or a twist expects the executor to leave it NOT_REMEDIATED)",
    TIME_TO_RECOVER: "seconds from the alarm to REMEDIATED, as the incident item records both (a case's: "
    "its last incident's; a model's: the median over its recovered cases)",
}
FALSE_CLAIMS_TITLE: Final = (
    "claims the stored diagnosis still makes (its refused ones aside) that are false: a pointer the judge "
    "does not re-find, a claim it finds ungrounded, a fault the case did not inject (unknown aside)"
)


def select_cases(requested: list[str] | None) -> list[Scenario]:
    """The live cases named (all by default); ValueError names the unknown ones."""
    return select_by_name(LIVE_CASES, requested, "case", "`incident-eval cases` lists them")


def fault_score(expected: set[str], named: set[str]) -> float:
    if not named or not expected <= named:
        return 0.0
    return len(expected & named) / len(named)


def _column(checks: Iterable[Check], names: tuple[str, ...]) -> bool | None:
    """Whether every check of these names passed; None when the case has none (nothing to score)."""
    mine = [check.ok for check in checks if check.name in names]
    return all(mine) if mine else None


def _executor_fixes(scenario: Scenario) -> int:
    """The case's incidents whose fix the executor must bring to REMEDIATED: a plan a person approves (not
    one the allowlist leaves unplanned, applied as the operator), no twist that keeps the fix out."""
    return sum(
        1
        for incident in scenario.expected
        if incident.applies is not None
        and incident.applies.executor
        and not incident.unplanned
        and incident.applies.twist not in UNRECOVERED
    )


def recovery(result: ScenarioResult) -> tuple[bool | None, float | None]:
    """Whether the executor brought every fix of the case to REMEDIATED and the function recovered (each
    APPLIED check passed, its detail the drill's phrase for it), and when the last did, in seconds from its
    alarm; (None, None) where there is nothing to score: no APPLIED check (no incident got that far), a
    fix applied as the operator, or a twist that expects the fix kept out (UNRECOVERED). A case with fewer
    APPLIED checks than fixes expected (an incident never diagnosed) did not recover."""
    applied = [check for check in result.checks if check.name == APPLIED]
    expected = _executor_fixes(result.scenario)
    if not applied or not expected:
        return None, None
    if any(AS_THE_OPERATOR in check.detail or WORLD_AS_BEFORE in check.detail for check in applied):
        return None, None
    read = [remediated(check.detail) if check.ok else None for check in applied]
    seconds = [found[1] for found in read if found is not None]
    if len(seconds) < max(expected, len(applied)):
        return False, None
    return True, max(seconds)


@dataclass(frozen=True)
class LiveCase:
    name: str
    expected: str
    named: str
    faults: float
    columns: dict[str, bool | None]
    found: int  # pointers the judge re-found
    pointers: int
    solved: bool
    failed: list[str]  # the drill checks that failed
    to_recover: float | None  # from the alarm to REMEDIATED (its last incident's), where it recovered
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    seconds: float  # the supervisor's time on the case's incidents
    false_claims: int = 0  # false claims that stand in the stored diagnoses (evals.false_claims)


def score(result: ScenarioResult, price: Price | None) -> LiveCase:
    diagnosed = [incident for incident in result.incidents if incident.status == "DIAGNOSED"]
    expected = {fault for incident in result.scenario.expected for fault in incident.fault_types}
    named = {fault for incident in diagnosed for fault in incident.fault_types}
    judged = [incident.grounding for incident in result.incidents if incident.grounding is not None]
    input_tokens = sum(incident.input_tokens for incident in result.incidents)
    output_tokens = sum(incident.output_tokens for incident in result.incidents)
    usage = TokenUsage(
        prompt_tokens=input_tokens,
        completion_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        cache_read_tokens=sum(incident.cache_read_tokens for incident in result.incidents),
        cache_write_tokens=sum(incident.cache_write_tokens for incident in result.incidents),
    )
    recovered, to_recover = recovery(result)
    return LiveCase(
        name=result.scenario.name,
        expected="+".join(sorted(expected)),
        named=result.outcome,
        faults=fault_score(expected, named),
        columns={column: _column(result.checks, names) for column, names in COLUMNS.items()}
        | {RECOVERED: recovered},
        found=sum(grounding.found for grounding in judged),
        pointers=sum(len(grounding.findings) for grounding in judged),
        solved=result.passed,
        failed=sorted({check.name for check in result.checks if not check.ok}),
        to_recover=to_recover,
        llm_calls=sum(incident.llm_calls for incident in result.incidents),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=None if price is None else price.cost_of(usage),
        seconds=sum(incident.seconds for incident in result.incidents),
        false_claims=sum(len(false_claims(incident, expected)) for incident in diagnosed),
    )


@dataclass(frozen=True)
class LiveModel:
    model: str
    price: Price | None
    cases: list[LiveCase]
    seconds: float  # the whole run, worlds included
    unrun: list[str]  # cases whose lane ended without a report (its sandbox did not start, or it crashed)

    @property
    def solved(self) -> int:
        return sum(case.solved for case in self.cases)

    @property
    def fault_score(self) -> float:
        return sum(case.faults for case in self.cases) / len(self.cases)

    def column(self, name: str) -> tuple[int, int]:
        """(cases that passed the column, cases it applies to)."""
        scored = [case.columns[name] for case in self.cases if case.columns[name] is not None]
        return sum(bool(ok) for ok in scored), len(scored)

    @property
    def to_recover(self) -> float | None:
        """The median seconds from the alarm to REMEDIATED over the recovered cases; None when none."""
        seconds = [case.to_recover for case in self.cases if case.to_recover is not None]
        return statistics.median(seconds) if seconds else None

    @property
    def cost(self) -> float | None:
        costs = [case.cost for case in self.cases]
        return None if any(cost is None for cost in costs) else sum(c for c in costs if c is not None)

    def total(self, field: str) -> float:
        return float(sum(getattr(case, field) for case in self.cases))


def _unrun(case: Scenario) -> ScenarioResult:
    return ScenarioResult(case, checks=[Check("scenario ran", False, "its lane ended without a report")])


def slug(model: str) -> str:
    """A directory name for a model string (``bedrock:us.anthropic...:0`` has colons)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model)


def run_live(
    models: list[str],
    cases: list[Scenario],
    out: Path,
    jobs: int,
    prices: Mapping[str, Price] | None = None,
    served: Mapping[str, Callable[[], AbstractContextManager[str]]] | None = None,
) -> list[LiveModel]:
    """Every case for every model, each model on fresh sandbox worlds (the drill's lanes, shown as they
    run); the drill's own reports are kept under ``out/runs/<model>/``. A model in ``served`` (a scripted
    one the stage serves, e.g. ``adversarial``) runs inside its context, whose value is the model string
    the lanes are given."""
    scored = []
    for model in models:
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        serving = (served or {}).get(model)
        with serving() if serving is not None else nullcontext(model) as lane_model:
            run = run_lanes(cases, jobs, lane_model, out / "runs" / slug(model), started_at)
        price = price_of(model, dict(prices or {}), SupervisorSettings().openai_base_url)
        by_name = {result.scenario.name: result for result in run.results}
        unrun = [case.name for case in cases if case.name not in by_name]
        results = [by_name.get(case.name) or _unrun(case) for case in cases]
        scored.append(LiveModel(model, price, [score(r, price) for r in results], run.seconds, unrun))
    return scored
