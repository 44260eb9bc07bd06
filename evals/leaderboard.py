"""The leaderboard: a row per model, a column per case, then the totals; as Markdown and as JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from evals.score import METRIC_TITLES, METRICS, CaseScore, ModelScore
from supervisor.agent.prices import LIST_PRICE_SOURCE, Price

PRICE_SOURCE: Final = f"{LIST_PRICE_SOURCE}: --price overrides"


@dataclass(frozen=True)
class Leaderboard:
    scores: list[ModelScore]
    case_ids: list[str]
    corpus: str
    generated_at: str


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def cost_cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def markdown_table(head: list[str], body: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(row) + " |" for row in [head, ["---"] * len(head), *body])


def price_json(price: Price | None) -> dict[str, float] | None:
    return None if price is None else {"input": price.input_per_million, "output": price.output_per_million}


def document(
    title: str,
    intro: str,
    table: str,
    legend: tuple[str, Mapping[str, str]],
    per_model: list[tuple[str, Price | None, str]],
) -> str:
    """A leaderboard page: the intro, the totals table, the legend of its columns (a heading and the
    columns' titles), then a section per model (its name, its price, its table)."""
    heading, titles = legend
    lines = "\n".join(f"- `{name}`: {text}" for name, text in titles.items())
    sections = [f"# {title}", intro, table, f"{heading}:\n\n{lines}"]
    sections.append(f"Cost: {PRICE_SOURCE}. n/a: no price known for the model.")
    for model, price, details in per_model:
        priced = price.label if price is not None else "no price"
        sections.append(f"## {model}\n\nPrice: {priced}.\n\n{details}")
    return "\n\n".join(sections) + "\n"


def _cell(case: CaseScore) -> str:
    if case.error and not case.fault_types:
        return "✗ error"
    return "✓" if case.passed else "✗ " + ",".join(case.failed)


def table(board: Leaderboard) -> str:
    """The main table (Markdown, readable as plain text too)."""
    head = [
        "model",
        *board.case_ids,
        "solved",
        *METRICS,
        "pointers verified",
        "LLM calls",
        "input tokens",
        "output tokens",
        "cost USD",
        "seconds",
    ]
    rows = []
    for score in board.scores:
        by_id = {case.case_id: case for case in score.cases}
        rows.append(
            [
                score.model,
                *(_cell(by_id[case_id]) if case_id in by_id else "-" for case_id in board.case_ids),
                f"{score.solved}/{len(score.cases)}",
                *(_percent(score.rate(metric)) for metric in METRICS),
                f"{_percent(score.evidence_rate)} "
                f"({sum(c.pointers_verified for c in score.cases)}/{sum(c.pointers for c in score.cases)})",
                str(score.llm_calls),
                str(score.input_tokens),
                str(score.output_tokens),
                cost_cell(score.cost),
                f"{score.seconds:.2f}",
            ]
        )
    return markdown_table(head, rows)


def _details(score: ModelScore) -> str:
    head = [
        "case",
        "answered",
        *METRICS,
        "pointers",
        "LLM calls",
        "in",
        "out",
        "cost USD",
        "seconds",
        "error",
    ]
    rows = []
    for case in score.cases:
        rows.append(
            [
                case.case_id,
                "+".join(case.fault_types) or "-",
                *("✓" if case.metrics[metric] else "✗" for metric in METRICS),
                f"{case.pointers_verified}/{case.pointers}",
                str(case.llm_calls),
                str(case.input_tokens),
                str(case.output_tokens),
                cost_cell(case.cost),
                f"{case.seconds:.2f}",
                (case.error or "").replace("|", "/")[:160],
            ]
        )
    return markdown_table(head, rows)


def markdown(board: Leaderboard) -> str:
    return document(
        "incident-eval leaderboard",
        f"{len(board.case_ids)} cases from `{board.corpus}`, run {board.generated_at}. A case cell is ✓ when "
        "every metric passed, else the metrics that failed. Rates are over the cases; pointers verified is "
        "over every evidence pointer of every diagnosis.",
        table(board),
        ("Metrics", METRIC_TITLES),
        [(score.model, score.price, _details(score)) for score in board.scores],
    )


def _case_json(case: CaseScore) -> dict[str, Any]:
    return {
        "passed": case.passed,
        "metrics": case.metrics,
        "fault_types": case.fault_types,
        "pointers_verified": case.pointers_verified,
        "pointers": case.pointers,
        "llm_calls": case.llm_calls,
        "input_tokens": case.input_tokens,
        "output_tokens": case.output_tokens,
        "cost_usd": case.cost,
        "seconds": round(case.seconds, 3),
        "error": case.error,
    }


def as_json(board: Leaderboard) -> dict[str, Any]:
    return {
        "generated_at": board.generated_at,
        "corpus": board.corpus,
        "cases": board.case_ids,
        "metrics": METRIC_TITLES,
        "price_source": PRICE_SOURCE,
        "models": [
            {
                "model": score.model,
                "price_per_million": price_json(score.price),
                "totals": {
                    "solved": score.solved,
                    "cases": len(score.cases),
                    "rates": {metric: score.rate(metric) for metric in METRICS},
                    "evidence_rate": score.evidence_rate,
                    "llm_calls": score.llm_calls,
                    "input_tokens": score.input_tokens,
                    "output_tokens": score.output_tokens,
                    "cost_usd": score.cost,
                    "seconds": round(score.seconds, 3),
                },
                "cases": {case.case_id: _case_json(case) for case in score.cases},
            }
            for score in board.scores
        ],
    }


def write(board: Leaderboard, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / "leaderboard.md", directory / "leaderboard.json"
    md.write_text(markdown(board))
    js.write_text(json.dumps(as_json(board), indent=2, ensure_ascii=False) + "\n")
    return md, js
