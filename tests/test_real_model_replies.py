"""The real graph fed replies a real model sent (tests/data/gemma3_replies.json), read by the agent's real
OpenAI client from a loopback server: each honesty guard holds against what a small model emits, and
each test fails when its guard is removed."""

from __future__ import annotations

import asyncio
from typing import Any

from evals.local_model import ALIAS
from supervisor.agent.models import build_model
from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.settings import SupervisorSettings
from tests.agent_support import RESPONSES, GraphRun, diagnose_with
from tests.openai_replay import ChatReplay, recorded, replaying

MODEL = f"openai:{ALIAS}"


async def _run(names: list[str], **settings: Any) -> tuple[GraphRun, ChatReplay]:
    with replaying([recorded(name) for name in names]) as (url, replay):
        model = build_model(MODEL, SupervisorSettings(openai_base_url=url))
        run = await diagnose_with(model, RESPONSES, **settings)
    return run, replay


async def test_made_up_arguments_go_back_to_the_model_as_an_error_and_never_reach_a_tool() -> None:
    run, replay = await _run(
        ["turn-1-invented-arguments", "forced-submission-cut"], max_tokens_per_incident=1_000
    )
    assert run.provider.calls == []
    (reply,) = run.replies("get_event_sources")
    assert reply.status == "error"
    assert "invalid arguments" in str(reply.content)
    assert "region" in str(reply.content)  # it says which argument is wrong
    assert next(r.status for r in run.accounting.tool_calls) == "invalid_args"
    # The recorded first turn spent the whole budget (its usage, as the server counted it): the second
    # request offered submit_diagnosis alone, forced.
    assert [t["function"]["name"] for t in replay.requests[1]["tools"]] == [SUBMIT_TOOL]
    assert replay.requests[1]["tool_choice"]["function"]["name"] == SUBMIT_TOOL


async def test_a_model_that_repeats_a_bad_call_and_never_submits_ends_without_a_diagnosis() -> None:
    names = ["turn-1-invented-arguments", "turn-2-same-call-again", "turn-3-same-call-again"]
    run, replay = await _run([*names, "forced-submission-cut"], max_tokens_per_incident=7_000)
    assert run.stop_reason == "no_submission"
    assert run.state["diagnosis"] is None
    assert run.provider.calls == []
    assert len(replay.requests) == 4
    assert not replay.replies
    assert len(run.accounting.llm_calls) == 4
    # Every call it made was answered with an error the model could read, the cut submission too.
    statuses = [r.status for r in run.accounting.tool_calls]
    assert statuses == ["invalid_args"] * 4
    assert all(m.status == "error" for m in run.replies())


async def test_a_submission_that_cites_tools_never_answered_is_refused_and_nothing_is_stored() -> None:
    run, _ = await _run(
        ["turn-1-invented-arguments", "submission-cites-unread-tools"], max_tokens_per_incident=1_000
    )
    assert run.stop_reason == "no_submission"
    assert run.state["diagnosis"] is None
    (refused,) = run.replies(SUBMIT_TOOL)
    assert refused.status == "error"


def test_a_model_built_for_one_run_works_in_the_next_run_s_event_loop() -> None:
    """Each run (a Lambda invocation, a drill incident) has its own event loop; an HTTP connection kept from
    the last one would fail the next with "Event loop is closed"."""
    reply = recorded("turn-1-invented-arguments")
    with replaying([reply, reply]) as (url, replay):
        for _ in range(2):
            model = build_model(MODEL, SupervisorSettings(openai_base_url=url))
            answer = asyncio.run(model.ainvoke("which tool?"))
            assert answer.tool_calls[0]["name"] == "get_event_sources"
    assert len(replay.requests) == 2
