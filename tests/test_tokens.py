"""Token cost: counted with a real tokenizer (tiktoken's exact counts, offline), per case and per part, and
the compact tool specs the graph binds keep every argument and constraint of the contract."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from evals import cli
from evals.corpus import Case, load_corpus
from evals.settings import CASES_DIR
from evals.tokens import (
    GOAL_MAX_TOKENS,
    GOAL_MEAN_TOKENS,
    PARTS,
    InvestigationTokens,
    graph_rendering,
    investigation_tokens,
    parts,
    report,
    token_counter,
    within_budget,
)
from mcp_server.contract.common import TargetArguments
from mcp_server.contract.config import LambdaConfigResponse
from mcp_server.contract.iam import IAMStateResponse
from mcp_server.contract.published_schema import published_schema
from mcp_server.contract.registry import TOOL_NAMES, TOOLS
from supervisor.agent import prompt
from supervisor.faults.registry import FAULT_TYPES
from supervisor.schemas import DiagnosisSubmission
from supervisor.settings import SupervisorSettings

SETTINGS = SupervisorSettings()

# Counted with tiktoken 0.14.0 and OpenAI's published vocabulary files.
TIKTOKEN_COUNTS = {
    "o200k_base": [2, 17, 4, 12],
    "cl100k_base": [2, 22, 5, 14],
}
SAMPLES = [
    "hello world",
    "Le délai d'exécution de la fonction Lambda a expiré après 30 secondes.",
    "ReservedConcurrentExecutions",
    "    indented\n\tcode();  // 日本語のコメント",
]


@pytest.fixture(scope="module")
def corpus() -> list[Case]:
    return load_corpus(CASES_DIR)


@pytest.mark.parametrize("encoding", sorted(TIKTOKEN_COUNTS))
def test_counts_are_tiktokens_exact_counts(encoding: str) -> None:
    counter = token_counter(encoding)
    assert [counter.count(text) for text in SAMPLES] == TIKTOKEN_COUNTS[encoding]
    assert encoding in counter.label
    assert "proxy for Claude" in counter.label


def test_an_unknown_encoding_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown encoding 'gpt2'"):
        token_counter("gpt2")


def test_report_counts_each_case_by_part(corpus: list[Case]) -> None:
    counter = token_counter()
    text, largest = report(corpus, counter, SETTINGS)
    counted = [investigation_tokens(case, counter, SETTINGS) for case in corpus]
    assert largest == max(tokens.total for tokens in counted)
    for tokens in counted:
        assert sum(parts(tokens).values()) == tokens.total
        assert tokens.second_call > tokens.first_call > tokens.per_call > 0
        assert all(tokens.tool_results[tool] > 0 for tool in TOOL_NAMES)
        assert f"| {tokens.case_id} | {tokens.system} |" in text
    assert "counted with o200k_base (toktok" in text
    assert (
        f"max {largest} input tokens; budget: mean <= {GOAL_MEAN_TOKENS} met, max <= {GOAL_MAX_TOKENS} met"
        in text
    )
    assert all(f"  {part} " in text for part in PARTS)


def _investigation(total: int) -> InvestigationTokens:
    """An investigation of ``total`` input tokens, all of them the system prompt's (sent twice)."""
    assert total % 2 == 0
    return InvestigationTokens("case", total // 2, 0, 0, 0, 0, {})


@pytest.mark.parametrize(
    ("totals", "within"),
    [
        ([GOAL_MEAN_TOKENS, GOAL_MEAN_TOKENS], True),
        ([GOAL_MEAN_TOKENS - 4000, GOAL_MAX_TOKENS], True),
        ([GOAL_MEAN_TOKENS, GOAL_MEAN_TOKENS + 2], False),  # the mean is over by one
        ([GOAL_MEAN_TOKENS - 6000, GOAL_MAX_TOKENS + 2], False),  # the mean is within, one case is not
    ],
)
def test_the_budget_holds_the_mean_and_the_largest(totals: list[int], within: bool) -> None:
    assert within_budget([_investigation(total) for total in totals]) is within


def test_the_corpus_is_within_the_token_budget(corpus: list[Case]) -> None:
    """Counted, not timed: a longer prompt, spec or default answer that breaks the budget fails here."""
    counted = [investigation_tokens(case, token_counter(), SETTINGS) for case in corpus]
    assert within_budget(counted), "\n".join(report(corpus, token_counter(), SETTINGS)[0].splitlines()[-1:])


def test_the_graph_rendering_is_what_the_graph_sends(corpus: list[Case]) -> None:
    rendering = graph_rendering()
    assert rendering.system == prompt.SYSTEM_PROMPT
    assert prompt.SUBMIT_TOOL in rendering.submit_spec
    assert all(f'"name": "{tool}"' in rendering.tool_specs for tool in TOOL_NAMES)
    case = corpus[0]
    assert rendering.incident(case) == prompt.incident_message(
        case.incident_id, case.function_name, case.incident
    )


def test_tokens_command_prints_the_table_and_refuses_an_unknown_encoding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["tokens"]) == 0
    out = capsys.readouterr().out
    assert "| revoke-s3 |" in out
    assert "where the mean investigation's tokens go" in out
    assert cli.main(["tokens", "--encoding", "gpt2"]) == 2
    assert "unknown encoding 'gpt2'" in capsys.readouterr().err


# --- the specs the graph binds -------------------------------------------------------------------------


def _leaves(schema: Any, path: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], Any]:
    """Every scalar (or empty container) of a JSON schema, by its path."""
    if isinstance(schema, dict) and schema:
        return {leaf: v for key, item in schema.items() for leaf, v in _leaves(item, (*path, key)).items()}
    if isinstance(schema, list) and schema:
        return {leaf: v for n, item in enumerate(schema) for leaf, v in _leaves(item, (*path, n)).items()}
    return {path: schema}


def _left_out_for_the_model(path: tuple[str | int, ...], value: Any) -> bool:
    """What the compact spec may leave out of the published schema: regex patterns, the argument model's
    docstring, ``additionalProperties`` (an unknown argument is refused by name), a null default, the
    description of a list's items or of a nullable object's member (the property has its own), and the
    descriptions of the arguments every tool takes (the system prompt gives them once)."""
    return (
        path[-1] in ("pattern", "additionalProperties")
        or (
            path[:1] == ("properties",)
            and path[1] in TargetArguments.model_fields
            and path[2:] == ("description",)
        )
        or path == ("description",)
        or (path[-1] == "default" and value is None)
        or path[-2:] == ("items", "description")
        or (len(path) >= 3 and path[-3] == "anyOf" and path[-1] == "description")
    )


def _full(model: type[BaseModel]) -> dict[str, Any]:
    return published_schema(model)


@pytest.mark.parametrize("name", [*TOOL_NAMES, prompt.SUBMIT_TOOL])
def test_specs_keep_every_argument_and_constraint_of_the_contract(name: str) -> None:
    specs = {spec["function"]["name"]: spec["function"] for spec in prompt.tool_specs()}
    model = DiagnosisSubmission if name == prompt.SUBMIT_TOOL else TOOLS[name].arguments
    full, compact = _leaves(_full(model)), _leaves(specs[name]["parameters"])
    assert compact.items() <= full.items()
    assert all(_left_out_for_the_model(path, full[path]) for path in full.keys() - compact.keys())
    assert any("required" in path for path in compact)
    descriptions = {name: tool.description for name, tool in TOOLS.items()}
    assert specs[name]["description"] == descriptions.get(name, specs[name]["description"])


def test_the_prompt_and_the_submit_guide_still_name_every_fault_type_and_tool() -> None:
    """The system prompt (every call) names the tools and the data tags; what a diagnosis must hold (every
    fault type, its corroboration) travels in submit_diagnosis's description, with the turns that can
    submit."""
    assert all(tool in prompt.SYSTEM_PROMPT for tool in [*TOOL_NAMES, prompt.SUBMIT_TOOL])
    assert "<tool_result" in prompt.SYSTEM_PROMPT
    assert "<incident>" in prompt.SYSTEM_PROMPT
    for name, field in TargetArguments.model_fields.items():
        assert f"- {name}" in prompt.SYSTEM_PROMPT
        assert str(field.description) in prompt.SYSTEM_PROMPT
    guide = prompt.submit_spec()["function"]["description"]
    assert all(f"- {fault}: " in guide for fault in FAULT_TYPES)
    assert "CORROBORATION" in guide
    assert all(f"- {fault}: " not in prompt.SYSTEM_PROMPT for fault in FAULT_TYPES)


def test_the_fault_type_enum_is_spelled_out_once_and_still_enforced_everywhere() -> None:
    spec = json.dumps(prompt.submit_spec()["function"]["parameters"])
    assert spec.count(json.dumps(list(FAULT_TYPES))) == 1  # fault_types' own
    evidence = [{"tool": "get_iam_state", "field": "role_name", "value": "r", "interpretation": "i"}]
    base: dict[str, Any] = {
        "root_cause": "r",
        "fault_types": ["timeout"],
        "affected_resources": [],
        "severity": "low",
        "evidence": evidence,
        "remediation_plan": [],
        "confidence": 0.5,
    }
    wrong: list[dict[str, Any]] = [
        {"evidence": [evidence[0] | {"supports": "slowness"}]},
        {"ruled_out": [{"fault_type": "slowness", "reason": "r", "evidence": [0]}]},
    ]
    for extra in wrong:
        with pytest.raises(ValidationError, match="'permission_loss', 'throttling'"):
            DiagnosisSubmission.model_validate(base | extra)


def test_a_null_that_says_nothing_is_left_out_and_a_null_that_is_a_finding_stays() -> None:
    answer = LambdaConfigResponse(FunctionName="f").model_dump(mode="json")
    assert "ReservedConcurrentExecutions" in answer  # null: no reserved concurrency
    assert not {"error", "StateReason", "KMSKeyArn", "OnFailureDestination"} & answer.keys()
    assert LambdaConfigResponse(FunctionName="f", error="boom").model_dump(mode="json")["error"] == "boom"
    assert (
        "permissions_boundary"
        in IAMStateResponse(role_name="r", inline_policies={}, attached_policies=[]).model_dump()
    )
