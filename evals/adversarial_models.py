"""The adversary (``evals.adversarial``) as a model: at the Bedrock Converse wire, served on loopback for a
live run (``incident-eval run --model adversarial``), so that the product's own ``bedrock:`` code path
talks to it; and as a LangChain chat model, for the graph in tests and the recorded corpus.

Either way it reads only what a model is sent: the incident and the tool answers, tagged as the graph
writes them, and what its earlier submissions were told.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from chaos.bedrock_fake import FakeConverse
from chaos.loopback import served_in_thread
from chaos.sandbox import names
from evals.adversarial import ADVERSARIAL, LIES, SUBMIT, Seen, next_calls
from supervisor.agent.prompt import read_tagged

# The model string the lanes' supervisors are given: an Anthropic model id, so that ChatBedrockConverse
# reads it as Claude's provider (its tool choice, its message format) rather than an unknown one.
BEDROCK_MODEL: Final = f"bedrock:anthropic.{ADVERSARIAL}"
# Bedrock clients reach the fake endpoint with throwaway keys, in the sandbox's region (the product has no
# region of its own); no named profile may take precedence.
_ENVIRONMENT: Final = {
    "AWS_PROFILE": None,
    "AWS_REGION": names.DEFAULT_REGION,
    "AWS_ACCESS_KEY_ID": "adversarial",
    "AWS_SECRET_ACCESS_KEY": "adversarial",
    "AWS_SESSION_TOKEN": "adversarial",
}


def _function(text: str) -> str:
    shown = read_tagged(text)
    if shown is None or shown[0] != "incident":
        raise ValueError("the first message is not the incident the graph writes")
    return str(shown[2]["function_name"])


def _answer(seen: dict[str, Any], text: str) -> None:
    shown = read_tagged(text)
    if shown is not None and shown[1] is not None:
        seen[shown[1]] = shown[2]


# --- at the Converse wire -------------------------------------------------------------------------------


def seen_in_converse(body: dict[str, Any]) -> Seen:
    """What a Converse request shows the model."""
    messages = body["messages"]
    first = next(block["text"] for block in messages[0]["content"] if "text" in block)
    answers: dict[str, Any] = {}
    submits: set[str] = set()
    asked = 0
    refusals: list[str] = []
    for message in messages:
        for block in message["content"]:
            use = block.get("toolUse")
            if use is not None:
                if use["name"] == SUBMIT:
                    submits.add(use["toolUseId"])
                else:
                    asked += 1
            result = block.get("toolResult")
            if result is None:
                continue
            texts = [part["text"] for part in result.get("content", []) if "text" in part]
            for text in texts:
                _answer(answers, text)
            if result.get("toolUseId") in submits and result.get("status") == "error":
                refusals += texts
    return Seen(_function(first), answers, asked, len(submits), tuple(refusals))


def converse_reply(model: str, body: dict[str, Any], lies: Sequence[str] = LIES) -> dict[str, Any]:
    """The adversary's Converse answer to ``body``."""
    seen = seen_in_converse(body)
    turn = seen.asked + seen.submitted
    uses = [
        {"toolUse": {"toolUseId": f"adv-{turn}-{n}", "name": name, "input": arguments}}
        for n, (name, arguments) in enumerate(next_calls(seen, lies))
    ]
    sent = len(json.dumps(body)) // 4  # about a token per four characters
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": "Here is what I found."}, *uses]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": sent, "outputTokens": 80, "totalTokens": sent + 80},
        "metrics": {"latencyMs": 1},
    }


@contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def serving_adversary() -> Iterator[str]:
    """The adversary behind a Converse endpoint on loopback, and this process's environment pointing
    Bedrock clients at it (the lanes' processes inherit it) while the block runs; yields the model string
    to give them. Nothing else changes endpoint."""
    fake = FakeConverse(reply=converse_reply)
    with (
        served_in_thread(fake.app()) as url,
        _environment({**_ENVIRONMENT, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url}),
    ):
        yield BEDROCK_MODEL


# --- as a LangChain chat model ------------------------------------------------------------------------


def seen_in_messages(messages: Sequence[BaseMessage]) -> Seen:
    """What a LangChain conversation shows the model."""
    first = next(m for m in messages if isinstance(m, HumanMessage))
    answers: dict[str, Any] = {}
    submits: set[str] = set()
    asked = 0
    refusals: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == SUBMIT:
                    submits.add(call["id"] or "")
                else:
                    asked += 1
        elif isinstance(message, ToolMessage) and isinstance(message.content, str):
            _answer(answers, message.content)
            if message.tool_call_id in submits and message.status == "error":
                refusals.append(message.content)
    return Seen(_function(str(first.content)), answers, asked, len(submits), tuple(refusals))


class AdversarialChatModel(BaseChatModel):
    """The adversary as a chat model; ``bind_tools`` returns it (it knows the tools it calls)."""

    lies: tuple[str, ...] = LIES

    @property
    def _llm_type(self) -> str:
        return ADVERSARIAL

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        seen = seen_in_messages(messages)
        turn = seen.asked + seen.submitted
        calls = [
            {"name": name, "args": arguments, "id": f"adv-{turn}-{n}", "type": "tool_call"}
            for n, (name, arguments) in enumerate(next_calls(seen, self.lies))
        ]
        message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])
