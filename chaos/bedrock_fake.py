"""A local stand-in for the Bedrock Runtime Converse API, at the HTTP wire: scripted replies in order, and
Bedrock's prompt cache accounted on each.

The drill uses it for its bad-Bedrock-auth scenario; the tests script whole conversations with it."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def tool_use(name: str, arguments: dict[str, Any], use_id: str, tokens: int = 100) -> dict[str, Any]:
    """A Converse reply in which the model asks for one tool."""
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": f"Calling {name}."},
                    {"toolUse": {"toolUseId": use_id, "name": name, "input": arguments}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": tokens - 20, "outputTokens": 20, "totalTokens": tokens},
        "metrics": {"latencyMs": 5},
    }


def text_reply(text: str, tokens: int = 100) -> dict[str, Any]:
    """A Converse reply in which the model only writes ``text``."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": tokens - 20, "outputTokens": 20, "totalTokens": tokens},
        "metrics": {"latencyMs": 5},
    }


def aws_error(status: int, code: str, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return status, {"message": message}, {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/"}


# Bedrock's prompt cache (docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html): the prompt is the
# tools, then the system prompt, then the messages; a prefix ending at a cachePoint is cached when it holds at
# least the model's minimum of tokens (a shorter one is not, and the request still succeeds); at most four
# cachePoints a request; an entry lives five minutes after its last use.
MINIMUM_CACHED_TOKENS: dict[str, int] = {  # by model family, longest first where one names another
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-7-sonnet": 1024,
    "claude-sonnet-4": 1024,
    "claude-opus-4": 1024,
}
MAX_CACHE_POINTS = 4
CACHE_TTL_SECONDS = 300.0


def estimated_tokens(block: Any) -> int:
    """The fake's count of a block's tokens: about one for every four characters of its JSON."""
    return max(1, len(json.dumps(block, sort_keys=True)) // 4)


def minimum_cached_tokens(model_id: str) -> int | None:
    """The smallest prefix the model caches; None for a model without prompt caching."""
    return next((least for family, least in MINIMUM_CACHED_TOKENS.items() if family in model_id), None)


@dataclass
class PromptCache:
    """The cache of one account: each cached prefix's digest and when it expires."""

    entries: dict[str, float] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    def usage(self, model_id: str, body: dict[str, Any]) -> dict[str, int] | None:
        """inputTokens (neither read nor written), cacheReadInputTokens and cacheWriteInputTokens of the
        request; None when it asks for no caching (or its model has none); ValueError for too many points."""
        least = minimum_cached_tokens(model_id)
        points, total = _cache_points(body)
        if len(points) > MAX_CACHE_POINTS:
            raise ValueError(f"A maximum of {MAX_CACHE_POINTS} cachePoint blocks are allowed per request")
        if least is None or not points:
            return None
        now = self.clock()
        valid = [(digest, tokens) for digest, tokens in points if tokens >= least]
        read = max((tokens for digest, tokens in valid if self.entries.get(digest, 0.0) > now), default=0)
        written = max((tokens for _, tokens in valid), default=0) - read  # up to the last point beyond
        for digest, _ in valid:
            self.entries[digest] = now + CACHE_TTL_SECONDS
        return {
            "inputTokens": total - read - written,
            "cacheReadInputTokens": read,
            "cacheWriteInputTokens": written,
        }


def _cache_points(body: dict[str, Any]) -> tuple[list[tuple[str, int]], int]:
    """(digest of the prompt up to it, its tokens) of each cachePoint in prompt order, and the prompt's
    tokens."""
    prompt: list[Any] = [*body.get("toolConfig", {}).get("tools", []), *body.get("system", [])]
    for message in body.get("messages", []):
        prompt += [{"role": message.get("role")}, *message.get("content", [])]
    running, tokens, points = hashlib.sha256(), 0, []
    for block in prompt:
        if isinstance(block, dict) and "cachePoint" in block:
            points.append((running.hexdigest(), tokens))
            continue
        running.update(json.dumps(block, sort_keys=True).encode())
        tokens += estimated_tokens(block) if "role" not in block else 0
    return points, tokens


@dataclass
class FakeConverse:
    """Each POST /model/{id}/converse takes the next scripted reply: a Converse body, or an AWS error; with
    ``reply``, every request is answered by ``reply(model id, request body)`` instead (a model that reads
    the conversation, e.g. the tool answers, and decides)."""

    script: list[dict[str, Any] | tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    cache: PromptCache = field(default_factory=PromptCache)

    async def _converse(self, request: Request) -> Response:
        body = json.loads(await request.body())
        model = request.path_params["model"]
        self.requests.append({"model": model, **body})
        if self.reply is not None:
            reply: Any = self.reply(model, body)
        elif self.script:
            reply = self.script.pop(0)
        else:
            return JSONResponse({"message": "script exhausted"}, status_code=500)
        if not isinstance(reply, tuple):
            try:
                reply = self._cached(model, body, reply)
            except ValueError as error:  # what Bedrock validates before it answers
                reply = aws_error(400, "ValidationException", str(error))
        if isinstance(reply, tuple):
            status, payload, headers = reply
            return JSONResponse(payload, status_code=status, headers=headers)
        return JSONResponse(reply)

    def _cached(self, model: str, body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` with its input tokens as Bedrock bills a request that asks for caching: counted from the
        request, split into what was read from the cache, written to it, and neither."""
        usage = self.cache.usage(model, body)
        if usage is None:
            return reply
        output = reply.get("usage", {}).get("outputTokens", 0)
        total = sum(usage.values()) + output
        return {**reply, "usage": {**usage, "outputTokens": output, "totalTokens": total}}

    def app(self) -> Starlette:
        async def healthz(_: Request) -> Response:
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[
                Route("/healthz", healthz),
                Route("/model/{model:path}/converse", self._converse, methods=["POST"]),
            ]
        )
