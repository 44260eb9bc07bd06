"""A local stand-in for the Bedrock Runtime Converse API, at the HTTP wire: scripted replies in order.

The drill uses it for its bad-Bedrock-auth scenario; the tests script whole conversations with it."""

from __future__ import annotations

import json
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


def aws_error(status: int, code: str, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return status, {"message": message}, {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/"}


@dataclass
class FakeConverse:
    """Each POST /model/{id}/converse takes the next scripted reply: a Converse body, or an AWS error; with
    ``reply``, every request is answered by ``reply(model id, request body)`` instead (a model that reads
    the conversation, e.g. the tool answers, and decides)."""

    script: list[dict[str, Any] | tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None

    async def _converse(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append({"model": request.path_params["model"], **body})
        if self.reply is not None:
            return JSONResponse(self.reply(request.path_params["model"], body))
        if not self.script:
            return JSONResponse({"message": "script exhausted"}, status_code=500)
        reply = self.script.pop(0)
        if isinstance(reply, tuple):
            status, payload, headers = reply
            return JSONResponse(payload, status_code=status, headers=headers)
        return JSONResponse(reply)

    def app(self) -> Starlette:
        async def healthz(_: Request) -> Response:
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[
                Route("/healthz", healthz),
                Route("/model/{model:path}/converse", self._converse, methods=["POST"]),
            ]
        )
