"""The live leaderboard: a row per model (totals), then each model's per-case table; Markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.leaderboard import PRICE_SOURCE, cost_cell, document, markdown_table, price_json
from evals.live import COLUMN_TITLES, FALSE_CLAIMS_TITLE, SCORED, TIME_TO_RECOVER, LiveCase, LiveModel

FALSE_CLAIMS = "false verified claims"
MEDIAN_TO_RECOVER = f"median {TIME_TO_RECOVER}"


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else "✓" if ok else "✗"


def _seconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f} s"


def totals_table(models: list[LiveModel]) -> str:
    head = ["model", "solved", "faults", *SCORED, MEDIAN_TO_RECOVER, "pointers re-found", FALSE_CLAIMS]
    head += ["LLM calls", "input tokens", "output tokens", "cost USD", "seconds"]
    rows: list[list[str]] = []
    for model in models:
        cases = len(model.cases)
        columns = [f"{passed}/{applies}" for passed, applies in map(model.column, SCORED)]
        rows.append(
            [
                f"`{model.model}`",
                f"{model.solved}/{cases}",
                f"{model.fault_score:.2f}",
                *columns,
                _seconds(model.to_recover),
                f"{model.total('found'):.0f}/{model.total('pointers'):.0f}",
                f"{model.total('false_claims'):.0f}",
                f"{model.total('llm_calls'):.0f}",
                f"{model.total('input_tokens'):.0f}",
                f"{model.total('output_tokens'):.0f}",
                cost_cell(model.cost),
                f"{model.total('seconds'):.1f}",
            ]
        )
    return markdown_table(head, rows)


def case_table(model: LiveModel) -> str:
    head = ["case", "expected", "diagnosed", "faults", *SCORED, TIME_TO_RECOVER, "pointers", FALSE_CLAIMS]
    head += ["LLM calls", "tokens in/out", "cost USD", "seconds", "solved"]
    rows: list[list[str]] = []
    for case in model.cases:
        rows.append(
            [
                case.name,
                case.expected,
                case.named.replace("|", "/"),
                f"{case.faults:.2f}",
                *(_mark(case.columns[column]) for column in SCORED),
                _seconds(case.to_recover),
                f"{case.found}/{case.pointers}",
                str(case.false_claims),
                str(case.llm_calls),
                f"{case.input_tokens}/{case.output_tokens}",
                cost_cell(case.cost),
                f"{case.seconds:.1f}",
                "✓" if case.solved else "✗ " + ", ".join(case.failed),
            ]
        )
    return markdown_table(head, rows)


def markdown(models: list[LiveModel], generated_at: str) -> str:
    return document(
        "incident-eval live leaderboard",
        f"{len(models[0].cases) if models else 0} live cases, run {generated_at}: each enacted on a fresh "
        "sandbox world, the model free to call any tool with any valid arguments. Column cells: ✓ passed, "
        "✗ failed, - not scored for the case. A case is solved when every drill check passed.",
        totals_table(models),
        ("Columns", {**COLUMN_TITLES, FALSE_CLAIMS: FALSE_CLAIMS_TITLE}),
        [(model.model, model.price, case_table(model)) for model in models],
    )


def _case_json(case: LiveCase) -> dict[str, Any]:
    return {
        "expected": case.expected,
        "diagnosed": case.named,
        "faults": case.faults,
        "columns": case.columns,
        "seconds_to_recover": case.to_recover,
        "pointers_found": case.found,
        "pointers": case.pointers,
        "false_verified_claims": case.false_claims,
        "solved": case.solved,
        "failed_checks": case.failed,
        "llm_calls": case.llm_calls,
        "input_tokens": case.input_tokens,
        "output_tokens": case.output_tokens,
        "cost_usd": case.cost,
        "seconds": round(case.seconds, 2),
    }


def as_json(models: list[LiveModel], generated_at: str) -> dict[str, Any]:
    return {
        "generated_at": generated_at,
        "mode": "live",
        "columns": {"faults": COLUMN_TITLES["faults"], **{name: COLUMN_TITLES[name] for name in SCORED}},
        "seconds_to_recover": COLUMN_TITLES[TIME_TO_RECOVER],
        "price_source": PRICE_SOURCE,
        "models": [
            {
                "model": model.model,
                "price_per_million": price_json(model.price),
                "totals": {
                    "cases": len(model.cases),
                    "solved": model.solved,
                    "faults": round(model.fault_score, 4),
                    "columns": {name: list(model.column(name)) for name in SCORED},
                    "median_seconds_to_recover": model.to_recover,
                    "pointers_found": int(model.total("found")),
                    "pointers": int(model.total("pointers")),
                    "false_verified_claims": int(model.total("false_claims")),
                    "llm_calls": int(model.total("llm_calls")),
                    "input_tokens": int(model.total("input_tokens")),
                    "output_tokens": int(model.total("output_tokens")),
                    "cost_usd": model.cost,
                    "seconds": round(model.total("seconds"), 2),
                    "run_seconds": round(model.seconds, 1),
                },
                "cases": {case.name: _case_json(case) for case in model.cases},
            }
            for model in models
        ],
    }


def write(models: list[LiveModel], generated_at: str, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / "leaderboard.md", directory / "leaderboard.json"
    md.write_text(markdown(models, generated_at))
    js.write_text(json.dumps(as_json(models, generated_at), indent=2, ensure_ascii=False) + "\n")
    return md, js
