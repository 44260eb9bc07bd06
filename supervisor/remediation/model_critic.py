"""A model's second opinion on a plan the Critic in code passed: the supervisor's chat model reads the plan
beside the diagnosis and may object to steps. An objection refuses its step as the Critic's own refusals
do (back to the Resolver, else NO_PLAN); the model cannot pass what the code refused, set a risk or change
a call, since only objections are read from its answer. An answer that cannot be read, or a model that
fails, adds none: the review records why. The offline rules model has no opinion and is never asked."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from supervisor.remediation.critic import Refusal
from supervisor.remediation.plan import Plan
from supervisor.schemas import Diagnosis

OBJECTS: Final[str] = "the model critic objects: "
PROMPT: Final[str] = (
    "You review a remediation plan for a failing AWS Lambda function before a person sees it. Code has "
    "already checked that each call is allowlisted, touches only the incident's own resources, can be "
    "undone exactly, and puts back a state recorded before the trigger. Object to a step only when the "
    "diagnosis shows it would not fix the failure or would break something else. Answer with JSON only: "
    '{"objections": [{"step": <step number>, "reason": "<one sentence>"}]}, an empty list when you have none.'
)
_FENCE = re.compile(r"\A\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*\Z", re.DOTALL)


class _Objection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: int = Field(ge=1)
    reason: str = Field(min_length=1, max_length=300)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    objections: list[_Objection] = Field(max_length=20)


@dataclass
class SecondOpinion:
    refusals: list[Refusal] = field(default_factory=list)
    unread: str | None = None  # why the answer added nothing, when it could not be read
    tokens: int = 0  # what the call cost, as the model reported it (prompt and answer)


def second_opinion(model: BaseChatModel, plan: Plan, diagnosis: Diagnosis) -> SecondOpinion:
    """The model's objections to ``plan``'s steps, each a refusal of its step (numbered as in the plan)."""
    messages = [SystemMessage(PROMPT), HumanMessage(_described(plan, diagnosis))]
    try:
        reply = model.invoke(messages)
    except Exception as error:  # a model that fails removes nothing: the code's review stands
        return SecondOpinion(unread=f"the model critic failed: {type(error).__name__}: {str(error)[:200]}")
    usage = reply.usage_metadata if isinstance(reply, AIMessage) else None
    tokens = usage["total_tokens"] if usage else 0
    content = reply.content  # a string, or content blocks (Bedrock's Converse): their text
    text = content if isinstance(content, str) else "".join(_block_text(block) for block in content)
    fenced = _FENCE.match(text)
    try:
        answer = _Answer.model_validate_json(fenced.group("body") if fenced else text)
    except ValidationError as error:
        what = error.errors()[0]["msg"]
        why = f"the model critic's answer is not the JSON asked for ({what}): {text[:120]!r}"
        return SecondOpinion(unread=why, tokens=tokens)
    outside = [o.step for o in answer.objections if o.step > len(plan.steps)]
    if outside:
        why = f"the model critic objected to steps the plan does not have: {outside}"
        return SecondOpinion(unread=why, tokens=tokens)
    return SecondOpinion([Refusal(o.step, OBJECTS + o.reason) for o in answer.objections], tokens=tokens)


def _block_text(block: object) -> str:
    return str(block.get("text", "")) if isinstance(block, dict) else str(block)


def _described(plan: Plan, diagnosis: Diagnosis) -> str:
    steps = [
        {
            "step": number,
            "action": step.action,
            "call": step.call.model_dump(),
            "found": step.precondition,
            "undo": step.inverse.model_dump(),
            "risk": step.risk,
        }
        for number, step in enumerate(plan.steps, start=1)
    ]
    facts = {
        "function": plan.function,
        "root_cause": diagnosis.root_cause,
        "fault_types": diagnosis.fault_types,
        "recovered_when": plan.recovery.model_dump(),
        "steps": steps,
    }
    return json.dumps(facts, indent=1, default=str)
