"""The live leaderboard: a row per model (totals), then each model's per-case table; Markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.leaderboard import PRICE_SOURCE
from evals.live import COLUMN_TITLES, COLUMNS, LiveCase, LiveModel


def _rows(rows: list[list[str]]) -> str:
    head, *body = rows
    return "\n".join("| " + " | ".join(row) + " |" for row in [head, ["---"] * len(head), *body])


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else "✓" if ok else "✗"


def _cost(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def totals_table(models: list[LiveModel]) -> str:
    head = ["model", "solved", "faults", *COLUMNS, "pointers re-found", "LLM calls", "input tokens"]
    head += ["output tokens", "cost USD", "seconds"]
    rows = [head]
    for model in models:
        cases = len(model.cases)
        columns = [f"{passed}/{applies}" for passed, applies in map(model.column, COLUMNS)]
        rows.append(
            [
                f"`{model.model}`",
                f"{model.solved}/{cases}",
                f"{model.fault_score:.2f}",
                *columns,
                f"{model.total('found'):.0f}/{model.total('pointers'):.0f}",
                f"{model.total('llm_calls'):.0f}",
                f"{model.total('input_tokens'):.0f}",
                f"{model.total('output_tokens'):.0f}",
                _cost(model.cost),
                f"{model.total('seconds'):.1f}",
            ]
        )
    return _rows(rows)


def case_table(model: LiveModel) -> str:
    head = ["case", "expected", "diagnosed", "faults", *COLUMNS, "pointers", "LLM calls", "tokens in/out"]
    head += ["cost USD", "seconds", "solved"]
    rows = [head]
    for case in model.cases:
        rows.append(
            [
                case.name,
                case.expected,
                case.named.replace("|", "/"),
                f"{case.faults:.2f}",
                *(_mark(case.columns[column]) for column in COLUMNS),
                f"{case.found}/{case.pointers}",
                str(case.llm_calls),
                f"{case.input_tokens}/{case.output_tokens}",
                _cost(case.cost),
                f"{case.seconds:.1f}",
                "✓" if case.solved else "✗ " + ", ".join(case.failed),
            ]
        )
    return _rows(rows)


def markdown(models: list[LiveModel], generated_at: str) -> str:
    legend = "\n".join(f"- `{name}`: {title}" for name, title in COLUMN_TITLES.items())
    sections = [
        "# incident-eval live leaderboard",
        f"{len(models[0].cases) if models else 0} live cases, run {generated_at}: each enacted on a fresh "
        "sandbox world, the model free to call any tool with any valid arguments. Column cells: ✓ passed, "
        "✗ failed, - not scored for the case. A case is solved when every drill check passed.",
        totals_table(models),
        "Columns:\n\n" + legend,
        f"Cost: {PRICE_SOURCE}. n/a: no price known for the model.",
    ]
    for model in models:
        priced = model.price.label if model.price is not None else "no price"
        sections.append(f"## {model.model}\n\nPrice: {priced}.\n\n{case_table(model)}")
    return "\n\n".join(sections) + "\n"


def _case_json(case: LiveCase) -> dict[str, Any]:
    return {
        "expected": case.expected,
        "diagnosed": case.named,
        "faults": case.faults,
        "columns": case.columns,
        "pointers_found": case.found,
        "pointers": case.pointers,
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
        "columns": {"faults": COLUMN_TITLES["faults"], **{name: COLUMN_TITLES[name] for name in COLUMNS}},
        "price_source": PRICE_SOURCE,
        "models": [
            {
                "model": model.model,
                "price_per_million": None
                if model.price is None
                else {"input": model.price.input_per_million, "output": model.price.output_per_million},
                "totals": {
                    "cases": len(model.cases),
                    "solved": model.solved,
                    "faults": round(model.fault_score, 4),
                    "columns": {name: list(model.column(name)) for name in COLUMNS},
                    "pointers_found": int(model.total("found")),
                    "pointers": int(model.total("pointers")),
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
