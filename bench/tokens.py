"""Token cost of an investigation: input tokens, per corpus case, of a model that calls each tool once (two
model calls), as the supervisor's graph writes the conversation, against a plain MCP host's rendering of
the same conversation measured in the same run, and the budget (mean <= 12,000, max <= 16,000).

    .venv/bin/python -m bench.tokens [--cases DIR] [--encoding o200k_base|cl100k_base] [--json]

The plain host sends what the MCP server publishes and returns: each tool's published input schema, and
each answer as the server writes its text (compact JSON); the submit_diagnosis spec is pydantic's
whole schema, and all the guidance (the system prompt and what a diagnosis must hold) is its system
prompt, sent with every call. Both share the incident message and the cut at ``tool_response_max_bytes``,
so the ratio measures the rendering alone. Counted with a real tokenizer
(``evals.tokens``): exact for GPT-4o-class models, a proxy for Claude.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.utils.json_schema import dereference_refs

from evals.corpus import Case, load_corpus
from evals.settings import EvalSettings
from evals.tokens import (
    ENCODINGS,
    GOAL_MAX_TOKENS,
    GOAL_MEAN_TOKENS,
    InvestigationTokens,
    Rendering,
    TokenCounter,
    breakdown,
    graph_rendering,
    investigation_tokens,
    summary,
    token_counter,
)
from mcp_server.contract.published_schema import published_schema
from mcp_server.contract.registry import TOOL_NAMES, TOOLS
from mcp_server.registration import answer_text
from supervisor.agent import prompt
from supervisor.agent.prices import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR
from supervisor.schemas import DiagnosisSubmission
from supervisor.settings import SupervisorSettings

# Issue 44's goal: the mean investigation billed at <= 40% of the 11,890 input tokens measured before caching.
CACHE_GOAL = 0.40
CACHE_GOAL_BASE = 11_890


def plain_host_rendering() -> Rendering:
    """What a plain MCP host sends for the same investigation (see the module docstring)."""
    tools = [
        {
            "name": name,
            "description": TOOLS[name].description,
            "input_schema": published_schema(TOOLS[name].arguments),
        }
        for name in TOOL_NAMES
    ]
    submit = dereference_refs(DiagnosisSubmission.model_json_schema())
    submit.pop("$defs", None)
    submit_spec = {
        "name": prompt.SUBMIT_TOOL,
        "description": "Submit the final diagnosis.",
        "input_schema": submit,
    }

    def answer(tool: str, payload: dict[str, Any]) -> str:
        return answer_text(TOOLS[tool].response.model_validate(payload))

    return Rendering(
        "plain MCP host",
        # The same guidance, all in the system prompt, sent with every call: the graph sends what a
        # diagnosis must hold with submit_diagnosis only, on the turns that can submit.
        f"{prompt.SYSTEM_PROMPT}\n\n{prompt.SUBMIT_GUIDE}",
        json.dumps(tools, indent=2, ensure_ascii=False),
        json.dumps(submit_spec, indent=2, ensure_ascii=False),
        graph_rendering().incident,
        answer,
    )


@dataclass(frozen=True)
class Row:
    case: str
    baseline: int  # the plain host's investigation
    graph: int  # the graph's investigation

    @property
    def ratio(self) -> float:
        return self.graph / self.baseline


@dataclass(frozen=True)
class Report:
    encoding: str
    rows: list[Row]
    graph: list[InvestigationTokens]

    def as_json(self) -> dict[str, Any]:
        totals = [tokens.total for tokens in self.graph]
        return {
            "encoding": self.encoding,
            "goal": {"mean": GOAL_MEAN_TOKENS, "max": GOAL_MAX_TOKENS},
            "cases": [asdict(row) | {"ratio": round(row.ratio, 3)} for row in self.rows],
            "graph": {"min": min(totals), "mean": round(statistics.mean(totals)), "max": max(totals)},
            "per_call": self.graph[0].per_call,
            "billed_with_cache": {name: round(value) for name, value in cached(self.graph).items()},
        }


def run(cases: list[Case], counter: TokenCounter, settings: SupervisorSettings) -> Report:
    graph, plain = graph_rendering(), plain_host_rendering()
    counted = [investigation_tokens(case, counter, settings, graph) for case in cases]
    baseline = [investigation_tokens(case, counter, settings, plain).total for case in cases]
    rows = [Row(tokens.case_id, base, tokens.total) for tokens, base in zip(counted, baseline, strict=True)]
    return Report(counter.encoding, rows, counted)


def render(report: Report, counter: TokenCounter) -> str:
    base = [row.baseline for row in report.rows]
    graph = [row.graph for row in report.rows]
    lines = [
        "Input tokens of an investigation that calls each tool once (2 model calls), counted with "
        + counter.label,
        "",
        "| case | plain MCP host (baseline) | graph | graph / baseline |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {row.case} | {row.baseline} | {row.graph} | {row.ratio:.2f}x |" for row in report.rows),
        f"| mean | {statistics.mean(base):.0f} | {statistics.mean(graph):.0f} | "
        f"{statistics.mean(graph) / statistics.mean(base):.2f}x |",
        f"| max | {max(base)} | {max(graph)} | {max(graph) / max(base):.2f}x |",
        "",
        "where the graph's mean investigation goes (per-call parts counted twice):",
        *breakdown(report.graph),
        f"sent with every call: {report.graph[0].per_call} (system prompt and specs)",
        "",
        "graph " + summary(report.graph),
        "",
        *cached_lines(report.graph),
    ]
    return "\n".join(lines)


def cached(counted: list[InvestigationTokens]) -> dict[str, float]:
    """The mean investigation's input as billed (in input-price tokens): nothing cached, its prefixes
    written to Bedrock's prompt cache (the first investigation in five minutes), and read from it."""
    return {
        "uncached": statistics.mean(tokens.total for tokens in counted),
        "written": statistics.mean(tokens.billed(CACHE_WRITE_FACTOR) for tokens in counted),
        "read": statistics.mean(tokens.billed(CACHE_READ_FACTOR) for tokens in counted),
    }


def cached_lines(counted: list[InvestigationTokens]) -> list[str]:
    billed = cached(counted)
    base = billed["uncached"]
    prefixes = " and ".join(str(n) for n in counted[0].cached_prefixes)
    return [
        f"with Bedrock's prompt cache (the two calls' prefixes, {prefixes} tokens, cached after the system "
        f"prompt; a token read costs {CACHE_READ_FACTOR:g}, written {CACHE_WRITE_FACTOR:g} of an input "
        "token, Claude's prices):",
        f"  mean investigation billed as {billed['read']:.0f} input tokens when an earlier one cached its "
        f"prefixes ({billed['read'] / base:.0%} of {base:.0f}), {billed['written']:.0f} when it writes them "
        f"({billed['written'] / base:.0%}); goal <= {CACHE_GOAL:.0%} of {CACHE_GOAL_BASE:,}: "
        f"{'met' if billed['read'] <= CACHE_GOAL * CACHE_GOAL_BASE else 'NOT met'}",
    ]


def main(argv: list[str] | None = None) -> int:
    settings = EvalSettings()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=Path, default=settings.cases_dir, help="the corpus directory")
    parser.add_argument("--encoding", default=settings.encoding, help=" or ".join(ENCODINGS))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        counter = token_counter(args.encoding)
    except ValueError as error:
        parser.error(str(error))
    report = run(load_corpus(args.cases), counter, SupervisorSettings())
    print(json.dumps(report.as_json(), indent=2) if args.json else render(report, counter))
    return 0


if __name__ == "__main__":
    sys.exit(main())
