"""Replies a real model once sent, served again at OpenAI's chat-completions wire: the agent's real
OpenAI client reads them exactly as it read them from the server that first answered
(tests/data/gemma3_replies.json, recorded from the server of evals/local_model.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chaos.loopback import served_in_thread

RECORDED = Path(__file__).parent / "data" / "gemma3_replies.json"


def recorded(name: str) -> dict[str, Any]:
    """The chat-completions response recorded under ``name``."""
    replies: dict[str, Any] = json.loads(RECORDED.read_text())["replies"]
    return dict(replies[name]["response"])


@dataclass
class ChatReplay:
    """Each POST /v1/chat/completions takes the next reply; the requests are kept."""

    replies: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def _chat(self, request: Request) -> Response:
        self.requests.append(json.loads(await request.body()))
        if not self.replies:
            return JSONResponse({"error": {"message": "no recorded reply left"}}, status_code=500)
        return JSONResponse(self.replies.pop(0))


@contextmanager
def replaying(replies: list[dict[str, Any]]) -> Iterator[tuple[str, ChatReplay]]:
    """The base URL of a server answering with ``replies`` in turn, and the replay."""
    replay = ChatReplay(list(replies))

    async def healthz(_: Request) -> Response:
        return JSONResponse({"ok": True})

    app = Starlette(
        routes=[Route("/healthz", healthz), Route("/v1/chat/completions", replay._chat, methods=["POST"])]
    )
    with served_in_thread(app) as url:
        yield f"{url}/v1", replay
