"""OpenAI's chat API as the agent speaks it to OpenAI and to the servers that copy it (Ollama, vLLM,
llama.cpp's server, LM Studio): their requests differ from OpenAI's own in two places, both harmless to
OpenAI."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI


def unshared_client() -> httpx.AsyncClient:
    """An HTTP client for one model that keeps no connection open: langchain-openai's default client is
    shared by every model of the process, and a connection it keeps belongs to the event loop of the run
    that opened it, closed by the time the next run (a new ``asyncio.run``, Lambda's next invocation) reuses
    it ("Event loop is closed")."""
    return httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))


class CompatibleChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose requests a compatible server reads as OpenAI does.

    - An assistant turn that only called tools carries ``""`` as its content, never ``null``: OpenAI takes
      either, llama-cpp-python's server refuses ``null`` (HTTP 500).
    - Against a server other than OpenAI (``classic_max_tokens``), the reply's length is capped with
      ``max_tokens``, the name those servers read; OpenAI's newer ``max_completion_tokens`` is ignored by
      some (llama-cpp-python's), which then let a small model write until its context is full.
    """

    classic_max_tokens: bool = False

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        for message in payload.get("messages", []):
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
        if self.classic_max_tokens and "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload
