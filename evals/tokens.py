"""Input tokens of an investigation that calls each tool once, per case, counted with a real tokenizer
when one is available offline, else estimated (and labelled so).

The investigation is the shortest the graph allows: call 1 sends the system prompt, the tool specs and
the incident; the model asks for the six tools; call 2 sends all of that again with the six answers (as
the graph shows them, cut at ``tool_response_max_bytes``) and the model submits. What is counted is the
text sent: prompt, specs as JSON, message contents and tool calls; a provider's own framing adds a few
tokens per message.

Tokenizers: ``tiktoken`` reads its encodings from a cache directory and otherwise downloads them. PyPI's
``litellm`` ships the cl100k_base and o200k_base files under the names tiktoken caches them by, so with
tiktoken installed and that directory (or a copy) as ``EVAL_TIKTOKEN_CACHE_DIR``, or litellm installed,
counts are exact for those OpenAI encodings. No Claude 3+ tokenizer is published: for Claude models the
figure is an estimate either way.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from evals.corpus import Case, canonical_arguments
from evals.settings import EvalSettings
from mcp_server.contract import TOOL_NAMES, TOOL_RESPONSE_MODELS
from supervisor.agent import prompt
from supervisor.settings import SupervisorSettings

GOAL_TOKENS: Final = 12_000
BYTES_PER_TOKEN: Final = 4


@dataclass(frozen=True)
class TokenCounter:
    label: str
    exact: bool
    count: Callable[[str], int]


def byte_estimate(reason: str) -> TokenCounter:
    return TokenCounter(
        f"ESTIMATE, not a tokenizer: UTF-8 bytes / {BYTES_PER_TOKEN} ({reason})",
        False,
        lambda text: math.ceil(len(text.encode()) / BYTES_PER_TOKEN),
    )


def _bundled_vocabulary() -> Path | None:
    """The tiktoken cache files litellm ships, when litellm is installed (found without importing it)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    directory = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return directory if directory.is_dir() else None


@contextmanager
def _cache_dir(directory: Path | None) -> Iterator[None]:
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    if directory is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    try:
        yield
    finally:
        if directory is not None:
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def token_counter(settings: EvalSettings) -> TokenCounter:
    """tiktoken with ``settings.encoding`` if its vocabulary loads offline, else the labelled estimate."""
    try:
        tiktoken = importlib.import_module("tiktoken")  # optional: see the module docstring
    except ImportError:
        return byte_estimate("tiktoken is not installed")
    directory = settings.tiktoken_cache_dir or (
        None if os.environ.get("TIKTOKEN_CACHE_DIR") else _bundled_vocabulary()
    )
    try:
        with _cache_dir(directory):
            encoding = tiktoken.get_encoding(settings.encoding)
    except Exception as error:  # no cached vocabulary, and no network to fetch it
        return byte_estimate(
            f"the {settings.encoding} vocabulary did not load offline: {type(error).__name__}"
        )
    where = directory or os.environ.get("TIKTOKEN_CACHE_DIR") or "tiktoken's cache"
    return TokenCounter(
        f"tiktoken {settings.encoding} (vocabulary from {where})",
        True,
        lambda text: len(encoding.encode(text, disallowed_special=())),
    )


@dataclass(frozen=True)
class InvestigationTokens:
    case_id: str
    system: int  # the system prompt
    specs: int  # the seven tool specs, as JSON
    incident: int  # the incident message
    tool_calls: int  # the model's six tool calls
    tool_results: dict[str, int]  # each tool's default answer as shown to the model

    @property
    def first_call(self) -> int:
        return self.system + self.specs + self.incident

    @property
    def second_call(self) -> int:
        return self.first_call + self.tool_calls + sum(self.tool_results.values())

    @property
    def total(self) -> int:
        return self.first_call + self.second_call


def _shown(case: Case, tool: str, settings: SupervisorSettings) -> str:
    """The tool's default answer as the graph shows it to the model."""
    key = (tool, canonical_arguments(tool, {"lambda_name": case.function_name}))
    call = case.calls_by_key()[key]
    if call.error is not None:
        return f"(tool failed: {call.error})"
    payload = TOOL_RESPONSE_MODELS[tool].model_validate(call.result).model_dump(mode="json")
    return prompt.truncate(prompt.tool_result(tool, payload), settings.tool_response_max_bytes)


def investigation_tokens(
    case: Case, counter: TokenCounter, settings: SupervisorSettings
) -> InvestigationTokens:
    count = counter.count
    calls = [
        {"name": tool, "args": {"lambda_name": case.function_name}, "id": f"call-{n}"}
        for n, tool in enumerate(TOOL_NAMES)
    ]
    return InvestigationTokens(
        case.id,
        system=count(prompt.SYSTEM_PROMPT),
        specs=count(json.dumps(prompt.tool_specs(), ensure_ascii=False)),
        incident=count(prompt.incident_message(case.incident_id, case.function_name, case.incident)),
        tool_calls=count(json.dumps(calls)),
        tool_results={tool: count(_shown(case, tool, settings)) for tool in TOOL_NAMES},
    )


def report(cases: list[Case], counter: TokenCounter, settings: SupervisorSettings) -> tuple[str, int]:
    """The per-case table and the largest investigation's input tokens."""
    counted = [investigation_tokens(case, counter, settings) for case in cases]
    head = ["case", "system", "specs", "incident", "call 1", *TOOL_NAMES, "call 2", "investigation"]
    rows = [head, ["---"] * len(head)]
    for tokens in counted:
        rows.append(
            [
                tokens.case_id,
                str(tokens.system),
                str(tokens.specs),
                str(tokens.incident),
                str(tokens.first_call),
                *(str(tokens.tool_results[tool]) for tool in TOOL_NAMES),
                str(tokens.second_call),
                str(tokens.total),
            ]
        )
    largest = max(tokens.total for tokens in counted)
    mean = sum(tokens.total for tokens in counted) / len(counted)
    verdict = "within" if largest <= GOAL_TOKENS else "OVER"
    lines = [
        "Input tokens of an investigation that calls each tool once (2 model calls), counted with: "
        + counter.label,
        "",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"largest investigation: {largest} input tokens (mean {mean:.0f}); goal <= {GOAL_TOKENS}: {verdict}",
    ]
    return "\n".join(lines), largest
