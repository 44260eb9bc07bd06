"""The model's second opinion on a plan (``supervisor.remediation.model_critic``): its objections refuse steps
the Critic in code passed, it is asked only about what the code passed, and an answer it cannot give
properly adds nothing. The model is langchain's scripted chat model, standing in for an LLM's replies."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.diagnosis.cli_commands import build_command
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.incident.lifecycle import PLAN_REVIEW
from supervisor.incident.store import IncidentStore
from supervisor.remediation.model_critic import OBJECTS, second_opinion
from supervisor.remediation.planning import PlanningLimits, Remediation, plan_incident, stored_plan
from supervisor.settings import SupervisorSettings
from tests.test_executor_run import TIMEOUT_9, UNTHROTTLE, _planned, throttled
from tests.test_remediation_plan import _diagnosis

__all__ = ["throttled"]  # the fixture, used by name
LIMITS = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
NONE = json.dumps({"objections": []})


def _plan(sandbox: Sandbox, incidents: IncidentStore, model: BaseChatModel, *calls: Any) -> dict[str, Any]:
    """The incident planned from a diagnosis naming ``calls``, ``model`` as the second critic; its item,
    with the review kept beside the plan."""
    commands = [build_command("lambda", *call, region=sandbox.region) for call in calls]
    item = plan_incident(
        incidents,
        _planned(sandbox, incidents, plan=False),
        _diagnosis(*commands),
        read=sandbox.session(names.SUPERVISOR).client,
        limits=LIMITS,
        opinion=functools.partial(second_opinion, model),
    )
    context = incidents.get_context(str(item["incident_id"])) or {}
    return dict(item) | {"review": json.loads(context[PLAN_REVIEW]["S"])}


OBJECTION = json.dumps(
    {"objections": [{"step": 1, "reason": "the reservation was set on purpose by the team"}]}
)


@pytest.mark.parametrize(
    "model",
    [
        FakeListChatModel(responses=[OBJECTION]),
        FakeMessagesListChatModel(responses=[AIMessage(content=[{"type": "text", "text": OBJECTION}])]),
    ],
    ids=["text", "content blocks"],
)
def test_an_objection_refuses_the_step_the_code_passed_and_nothing_reaches_a_person(
    sandbox: Sandbox, incidents: IncidentStore, throttled: dict[str, Any], model: BaseChatModel
) -> None:
    item = _plan(sandbox, incidents, model, UNTHROTTLE)
    reason = OBJECTS + "the reservation was set on purpose by the team"
    assert (item["status"], item["error_reason"]) == ("NO_PLAN", f"no safe plan: step 1 refused: {reason}")
    assert item["review"]["refused"] == [{"step": 1, "reason": reason}]


def test_the_model_is_asked_only_about_what_the_code_passed_and_cannot_pass_a_refused_step(
    sandbox: Sandbox, incidents: IncidentStore, throttled: dict[str, Any]
) -> None:
    """The timeout of 9 no change recorded is refused by the code in the first round, whatever the model
    would say; the model is asked once, about the second round's plan (the reservation only)."""
    model = FakeListChatModel(responses=[NONE, '{"objections": [{"step": 2, "reason": "asked twice"}]}'])
    item = _plan(sandbox, incidents, model, TIMEOUT_9, UNTHROTTLE)
    assert item["status"] == "AWAITING_APPROVAL"
    assert model.i == 1  # one answer read: the next scripted one was never asked for
    plan, _ = stored_plan(incidents, str(item["incident_id"])) or (None, "")
    assert plan is not None
    assert [step.call.operation for step in plan.steps] == ["DeleteFunctionConcurrency"]
    assert [r["step"] for r in item["review"]["refused"]] == [1]
    assert not item["review"]["refused"][0]["reason"].startswith(OBJECTS)


@pytest.mark.parametrize(
    ("answer", "unread"),
    [
        ("Looks good to me.", "the model critic's answer is not the JSON asked for"),
        ('```json\n{"objections": [{"step": 3, "reason": "x"}]}\n```', "steps the plan does not have: [3]"),
    ],
    ids=["prose", "a step it does not have"],
)
def test_an_answer_that_cannot_be_read_adds_nothing_and_says_why(
    sandbox: Sandbox, incidents: IncidentStore, throttled: dict[str, Any], answer: str, unread: str
) -> None:
    item = _plan(sandbox, incidents, FakeListChatModel(responses=[answer]), UNTHROTTLE)
    assert item["status"] == "AWAITING_APPROVAL"
    assert item["review"]["refused"] == []
    [note] = item["review"]["model_critic_unread"]
    assert unread in note


def test_the_second_critic_is_the_supervisors_model_never_the_rules_model(sandbox: Sandbox) -> None:
    store: Any = None
    session = sandbox.session(names.SUPERVISOR)
    logger = Logger(service="model-critic-test")
    rules = SupervisorSettings(supervisor_model="rules")
    assert Remediation.configured(store, session, rules, logger).opinion is None
    assert Remediation.configured(store, session, rules, logger, RulesChatModel()).opinion is None
    scripted = FakeListChatModel(responses=[NONE])
    assert Remediation.configured(store, session, rules, logger, scripted).opinion is not None
    off = rules.model_copy(update={"model_critic": False})
    assert Remediation.configured(store, session, off, logger, scripted).opinion is None
