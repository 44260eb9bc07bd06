"""incident-eval: the committed corpus, the scorer against deliberate mistakes, the CLI's exit statuses and
files, and recording a case on the session sandbox that replays to its expected answer."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from evals import cli, leaderboard
from evals.corpus import Case, load_corpus, read_case
from evals.definitions import DEFINITIONS, select
from evals.record import Recorder, secrets
from evals.replay import CaseToolProvider, replay_case
from evals.runner import run_models
from evals.score import METRICS, CaseScore, score_case
from evals.settings import CASES_DIR, EvalSettings
from mcp_server.contract.registry import TOOL_NAMES
from supervisor.agent.prices import FREE, Price, price_of
from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.agent.providers import ToolCallFailed
from supervisor.diagnosis.rules.conversation import Conversation, read
from supervisor.diagnosis.rules.diagnose import diagnose
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.faults.registry import FAULT_TYPES
from supervisor.schemas import TokenUsage
from supervisor.settings import SupervisorSettings

SETTINGS = SupervisorSettings()
Mistake = Callable[[dict[str, Any], Conversation], dict[str, Any]]
USAGE = {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100}


@pytest.fixture(scope="module")
def corpus() -> dict[str, Case]:
    return {case.id: case for case in load_corpus(CASES_DIR)}


# --- a model that makes one given mistake ------------------------------------------------------------


def _wrong_fault(args: dict[str, Any], _: Conversation) -> dict[str, Any]:
    """Reports a fault the evidence does not show."""
    ruled_out = [entry for entry in args["ruled_out"] if entry["fault_type"] != "code_error"]
    return args | {"fault_types": ["code_error"], "ruled_out": ruled_out}


def _fabricated_pointer(args: dict[str, Any], _: Conversation) -> dict[str, Any]:
    """Cites a value no tool returned."""
    made_up = {
        "tool": "get_lambda_config",
        "field": "Timeout",
        "value": "900",
        "interpretation": "The timeout is 15 minutes.",
        "supports": None,
    }
    return args | {"evidence": [*args["evidence"], made_up]}


def _logs_alone(args: dict[str, Any], c: Conversation) -> dict[str, Any]:
    """The same fault, backed only by the log line that describes it: nothing else supports it."""
    events = c.logs["events"]
    index = next(n for n, event in enumerate(events) if event["kind"] == "error_record")
    line = {
        "tool": "get_recent_logs",
        "field": f"events.{index}.message",
        "value": events[index]["message"],
        "interpretation": "The function says it was denied.",
        "supports": args["fault_types"][0],
    }
    context = [p | {"supports": None} for p in args["evidence"]]
    return args | {"evidence": [*context, line]}


def _wrong_trigger(args: dict[str, Any], c: Conversation) -> dict[str, Any]:
    """Blames a real change, but not the one that started it."""
    events = c.changes["events"]
    index, event = next(
        (n, e) for n, e in enumerate(events) if e["event_name"] != args["trigger"]["event_name"]
    )
    pointer = {
        "tool": "get_recent_changes",
        "field": f"events.{index}.event_name",
        "value": event["event_name"],
        "interpretation": "The change that broke it.",
        "supports": None,
    }
    trigger = {
        "event_name": event["event_name"],
        "identity": event["identity_arn"],
        "time": event["time"],
        "evidence": [len(args["evidence"])],
    }
    return args | {"evidence": [*args["evidence"], pointer], "trigger": trigger}


MISTAKES: dict[str, Mistake] = {
    "wrong-fault": _wrong_fault,
    "fabricated-pointer": _fabricated_pointer,
    "logs-alone": _logs_alone,
    "wrong-trigger": _wrong_trigger,
}


class MistakenChatModel(BaseChatModel):
    """Scripted like tests/agent_support.py's ScriptedChatModel (``bind_tools`` returns the model itself),
    with replies computed from the conversation: every tool in the first turn, then the diagnosis the rules
    would submit with ``mistake`` applied, on every submission. Each reply reports USAGE tokens."""

    mistake: str

    @property
    def _llm_type(self) -> str:
        return "mistaken"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        conversation = read(messages)
        calls: list[tuple[str, dict[str, Any]]]
        if not any(isinstance(m, ToolMessage) for m in messages):
            calls = [(tool, {"lambda_name": conversation.function_name}) for tool in TOOL_NAMES]
        else:
            calls = [(SUBMIT_TOOL, MISTAKES[self.mistake](diagnose(conversation), conversation))]
        turn = sum(isinstance(m, AIMessage) for m in messages)
        message = AIMessage(
            content="",
            tool_calls=[
                {"name": name, "args": args, "id": f"m-{turn}-{n}", "type": "tool_call"}
                for n, (name, args) in enumerate(calls)
            ],
            usage_metadata=USAGE,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


async def _score(case: Case, model: BaseChatModel) -> CaseScore:
    return score_case(await replay_case(case, model, SETTINGS), Price(3.0, 15.0))


# --- the corpus and the rules model ------------------------------------------------------------------


def test_the_corpus_covers_every_fault_class_and_holds_no_credentials(corpus: dict[str, Case]) -> None:
    expected = {fault for case in corpus.values() for fault in case.expected.faults}
    assert expected == set(FAULT_TYPES)
    assert set(corpus) == {definition.name for definition in DEFINITIONS}
    for path in CASES_DIR.glob("*.json"):
        text = path.read_text()
        assert not re.search(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", text), path
        assert "Bearer " not in text, path


async def test_rules_scores_every_metric_on_every_case(corpus: dict[str, Case]) -> None:
    [score] = await run_models({"rules": RulesChatModel()}, list(corpus.values()), SETTINGS)
    failed = {case.case_id: case.failed for case in score.cases if not case.passed}
    assert not failed
    assert score.solved == len(corpus)
    assert score.evidence_rate == 1.0
    assert score.cost == 0.0
    assert all(case.llm_calls == 2 for case in score.cases)


# --- each mistake is caught where it should be -------------------------------------------------------


@pytest.mark.parametrize(
    ("mistake", "case_id", "failed"),
    [
        ("wrong-fault", "throttle-0", ["faults", "corroboration"]),
        ("fabricated-pointer", "revoke-s3", ["evidence"]),
        ("logs-alone", "revoke-s3", ["faults", "corroboration"]),  # the unsupported fault is taken out
        ("wrong-trigger", "throttle-0", ["trigger"]),
    ],
)
async def test_the_scorer_catches_each_mistake_exactly_where_it_is(
    corpus: dict[str, Case], mistake: str, case_id: str, failed: list[str]
) -> None:
    scored = await _score(corpus[case_id], MistakenChatModel(mistake=mistake))
    assert scored.error is None
    assert scored.failed == failed
    if mistake == "fabricated-pointer":
        assert scored.pointers_verified == scored.pointers - 1
    # Each refused submission costs one more turn: 2 turns, or 3 after a refinement.
    assert scored.llm_calls in (2, 3)
    assert scored.input_tokens == 1000 * scored.llm_calls
    assert scored.cost == pytest.approx(scored.llm_calls * (1000 * 3 + 100 * 15) / 1_000_000)


async def test_a_call_that_was_not_recorded_is_a_tool_error_that_says_what_was(
    corpus: dict[str, Case],
) -> None:
    provider = CaseToolProvider(corpus["revoke-s3"])
    explicit = {"lambda_name": "data-processor", "minutes": 30, "limit": 50}  # the defaults, spelled out
    assert json.loads(await provider.call_tool("get_recent_logs", explicit))["events"]
    with pytest.raises(ToolCallFailed, match=r"recorded get_recent_logs only with arguments .*minutes.*60"):
        await provider.call_tool("get_recent_logs", {"lambda_name": "data-processor", "minutes": 7})


# --- the CLI ---------------------------------------------------------------------------------------------


def test_run_writes_a_leaderboard_with_a_row_per_model_and_a_column_per_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        cli.main(["run", "--recorded", "--model", "rules", "--out", str(tmp_path), "--price", "rules=1,2"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "| rules |" in printed
    board = json.loads((tmp_path / "recorded" / "leaderboard.json").read_text())
    assert [row["model"] for row in board["models"]] == ["rules"]
    assert set(board["models"][0]["cases"]) == set(board["cases"]) == {d.name for d in DEFINITIONS}
    assert board["models"][0]["price_per_million"] == {"input": 1.0, "output": 2.0}
    assert "| model | " + " | ".join(board["cases"]) in (tmp_path / "recorded" / "leaderboard.md").read_text()


async def test_the_leaderboard_has_a_row_per_model(corpus: dict[str, Case], tmp_path: Path) -> None:
    cases = [corpus["revoke-s3"], corpus["throttle-0"]]
    models = {"rules": RulesChatModel(), "mistaken": MistakenChatModel(mistake="wrong-trigger")}
    scores = await run_models(models, cases, SETTINGS, {"mistaken": Price(3.0, 15.0)})
    board = leaderboard.Leaderboard(scores, [c.id for c in cases], "corpus", "now")
    md, js = leaderboard.write(board, tmp_path)
    rows = [line for line in md.read_text().splitlines() if line.startswith(("| rules |", "| mistaken |"))]
    assert rows[0].startswith("| rules | ✓ | ✓ | 2/2 |")
    assert rows[1].startswith("| mistaken | ✗ trigger | ✗ trigger | 0/2 | 100% | 100% | 100% | 0% |")
    totals = json.loads(js.read_text())["models"][1]["totals"]
    assert totals["input_tokens"] > 0
    assert totals["cost_usd"] == pytest.approx(
        (totals["input_tokens"] * 3 + totals["output_tokens"] * 15) / 1e6
    )


@pytest.mark.parametrize("field", ["expected", "tool_results"])
def test_a_broken_case_file_exits_1_naming_the_file_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(CASES_DIR, cases)
    path = cases / "throttle-0.json"
    data = json.loads(path.read_text())
    if field == "expected":
        data["expected"]["faults"] = ["meltdown"]
        where = "expected.faults.0"
    else:
        index = next(
            n for n, call in enumerate(data["tool_results"]) if call["tool"] == "get_function_metrics"
        )
        data["tool_results"][index]["result"]["throttles"] = "many"
        where = f"tool_results.{index}.result.throttles"
    path.write_text(json.dumps(data))
    out = str(tmp_path / "out")
    assert cli.main(["run", "--recorded", "--model", "rules", "--cases", str(cases), "--out", out]) == 1
    error = capsys.readouterr().err
    assert str(path) in error
    assert where in error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "gpt-nonsense"], "--model must be 'rules' or 'provider:model'"),
        (["--model", "nosuchprovider:some-model"], "cannot be built"),
        (["--model", "rules", "--price", "rules=cheap,1"], "IN and OUT must be numbers"),
        (["--model", "rules", "--jobs", "9"], "--jobs must be between 1 and 8"),
        (["--model", "rules", "--case", "meltdown"], "unknown case(s) ['meltdown']"),
        (
            ["--model", "rules", "--cases", "elsewhere"],
            "--cases names a recorded corpus: use it with --recorded",
        ),
        (["--recorded", "--model", "nosuchprovider:x"], "cannot be built"),
    ],
)
def test_bad_usage_exits_2_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli.main(["run", *args, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing run, nothing written


def test_prices_by_model_family_and_overrides() -> None:
    assert price_of("bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0", {}) == Price(3.0, 15.0)
    assert price_of("bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0", {}) == Price(0.8, 4.0)
    assert price_of("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", {}) == Price(3.0, 15.0)
    assert price_of("bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0", {}) == Price(3.0, 15.0)
    assert price_of("anthropic:claude-sonnet-4-5", {}) == Price(3.0, 15.0)
    assert price_of("ollama:llama3", {}) is None
    assert price_of("openai:gpt-4.1", {}) == Price(2.0, 8.0)
    for local in ("http://127.0.0.1:8099/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1"):
        assert price_of("openai:gemma3", {}, local) == FREE
    assert price_of("openai:gemma3", {}, "https://gpu-box.example.com/v1") is None  # its owner prices it
    assert price_of("openai:gemma3", {}) is None
    model, price = cli.parse_override("ollama:llama3=0.1,0.2")
    assert price_of(model, {model: price}) == price


def test_cached_input_is_billed_at_the_cache_s_prices() -> None:
    """Claude Sonnet, $3 in and $15 out a million: 10,000 input tokens, 8,000 of them read from the cache
    ($0.30 a million) and 1,000 written to it ($3.75), and 1,000 out."""
    sonnet = price_of("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", {})
    assert sonnet is not None
    usage = TokenUsage(
        prompt_tokens=10_000,
        completion_tokens=1_000,
        total_tokens=11_000,
        cache_read_tokens=8_000,
        cache_write_tokens=1_000,
    )
    assert sonnet.cost_of(usage) == pytest.approx((1_000 * 3 + 8_000 * 0.3 + 1_000 * 3.75 + 1_000 * 15) / 1e6)
    assert sonnet.cost(10_000, 1_000) == pytest.approx((10_000 * 3 + 1_000 * 15) / 1e6)


# --- recording on the sandbox ------------------------------------------------------------------------


def test_record_captures_a_case_that_replays_to_its_expected_answer(sandbox: Sandbox, tmp_path: Path) -> None:
    [definition] = select(["throttle-0"])
    notes: list[str] = []
    recorder = Recorder(sandbox, EvalSettings(), say=notes.append)
    path = recorder.write(recorder.record(definition), tmp_path)
    assert any(note.startswith("  restored") for note in notes), notes
    assert not any("note:" in note for note in notes), notes
    text = path.read_text()
    known = secrets(sandbox)
    assert len(known) > len(names.PROFILES)  # the MCP key, and each identity's key id and secret
    assert not any(secret in text for secret in known)
    case = read_case(path)
    assert case.invocations == {"throttled": 2}
    assert case.incident["error_type"] == "Throttles"
    assert case.expected.trigger is not None
    assert case.expected.trigger.event_name.startswith("PutFunctionConcurrency")
    assert {call.tool for call in case.tool_results} == set(TOOL_NAMES)
    scored = score_case(asyncio.run(replay_case(case, RulesChatModel(), SETTINGS)), None)
    assert scored.passed, scored.failed
    assert set(METRICS) == set(scored.metrics)


async def test_rules_replays_fully_when_the_logs_answer_is_cut(corpus: dict[str, Case]) -> None:
    """Its narrower second look at the logs is recorded in every case with a failure."""
    case = corpus["revoke-s3-flood"]
    run = await replay_case(case, RulesChatModel(), SupervisorSettings(tool_response_max_bytes=8_000))
    assert run.tools_asked == len(TOOL_NAMES) + 1
    assert run.diagnosis is not None
    assert score_case(run, None).passed
