"""The fake Converse endpoint's prompt cache, as Bedrock documents it: a prefix is cached only from the
model's minimum of tokens, read while it lives, forgotten five minutes after its last use; at most four
cache points; the tools come first, then the system prompt, then the messages."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.bedrock_fake import CACHE_TTL_SECONDS, PromptCache, estimated_tokens

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU_4_5 = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
POINT = {"cachePoint": {"type": "default"}}


def _request(system_words: int, question: str, points: int = 1) -> dict[str, Any]:
    system = [{"text": "word " * system_words}, *[POINT] * points]
    return {
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_lambda_config", "inputSchema": {"json": {}}}}]},
        "system": system,
        "messages": [{"role": "user", "content": [{"text": question}]}],
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_prefix_is_written_then_read_and_the_rest_is_plain_input() -> None:
    cache = PromptCache()
    request = _request(2000, "why does data-processor fail?")
    tools, system = request["toolConfig"]["tools"], request["system"][:1]
    prefix = sum(estimated_tokens(block) for block in [*tools, *system])
    rest = estimated_tokens(request["messages"][0]["content"][0])

    assert cache.usage(SONNET, request) == {
        "inputTokens": rest,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": prefix,
    }
    assert cache.usage(SONNET, _request(2000, "and order-worker?")) == {
        "inputTokens": estimated_tokens({"text": "and order-worker?"}),
        "cacheReadInputTokens": prefix,
        "cacheWriteInputTokens": 0,
    }


def test_a_changed_tool_list_or_system_prompt_misses_the_cache() -> None:
    cache = PromptCache()
    cache.usage(SONNET, _request(2000, "q"))
    changed = _request(2000, "q")
    changed["toolConfig"]["tools"][0]["toolSpec"]["name"] = "get_iam_state"
    assert cache.usage(SONNET, changed)["cacheReadInputTokens"] == 0  # type: ignore[index]
    assert cache.usage(SONNET, _request(2001, "q"))["cacheReadInputTokens"] == 0  # type: ignore[index]


def test_a_prefix_below_the_model_s_minimum_is_not_cached() -> None:
    cache = PromptCache()
    request = _request(2500, "q")  # about 3,100 tokens: enough for Sonnet (1,024), not for Haiku 4.5 (4,096)
    blocks = [*request["toolConfig"]["tools"], request["system"][0], {"text": "q"}]
    assert cache.usage(HAIKU_4_5, request) == {
        "inputTokens": sum(estimated_tokens(block) for block in blocks),
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 0,
    }
    assert cache.usage(HAIKU_4_5, request)["cacheReadInputTokens"] == 0  # type: ignore[index]
    assert cache.usage(SONNET, request)["cacheWriteInputTokens"] > 1024  # type: ignore[index]


def test_an_entry_lives_five_minutes_after_its_last_use() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    cache.usage(SONNET, _request(2000, "q"))
    clock.now += CACHE_TTL_SECONDS - 1
    assert cache.usage(SONNET, _request(2000, "q"))["cacheReadInputTokens"] > 0  # type: ignore[index]
    clock.now += CACHE_TTL_SECONDS - 1  # five minutes after the first use, not after the last
    assert cache.usage(SONNET, _request(2000, "q"))["cacheReadInputTokens"] > 0  # type: ignore[index]
    clock.now += CACHE_TTL_SECONDS + 1
    assert cache.usage(SONNET, _request(2000, "q"))["cacheReadInputTokens"] == 0  # type: ignore[index]


def test_no_cache_point_or_a_model_without_caching_is_billed_as_written_and_five_points_are_refused() -> None:
    cache = PromptCache()
    assert cache.usage(SONNET, _request(2000, "q", points=0)) is None
    assert cache.usage("anthropic.claude-3-haiku-20240307-v1:0", _request(2000, "q")) is None
    with pytest.raises(ValueError, match="maximum of 4 cachePoint"):
        cache.usage(SONNET, _request(2000, "q", points=5))
