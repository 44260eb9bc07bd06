"""The chat model of ``bedrock:`` models: Converse, the prompt's fixed prefix marked for Bedrock's prompt
cache. Imported only when such a model is built (langchain-aws is heavy to import)."""

from __future__ import annotations

from typing import Any

from langchain_aws import ChatBedrockConverse
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult

CACHE_POINT: dict[str, Any] = {"cachePoint": {"type": "default"}}


def with_cache_point(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with a cache point after the system prompt: Bedrock caches the prompt up to it (the tool
    specifications, then the system prompt), the same in every turn of a phase and every investigation, and
    bills its tokens at the cache's price when a later request starts with it. What the model reads does not
    change."""
    return [
        SystemMessage([{"type": "text", "text": message.content}, CACHE_POINT])
        if isinstance(message, SystemMessage) and isinstance(message.content, str)
        else message
        for message in messages
    ]


class PromptCachingConverse(ChatBedrockConverse):
    """ChatBedrockConverse whose every request sends the cache point of :func:`with_cache_point`."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return super()._generate(with_cache_point(messages), stop, run_manager, **kwargs)
