"""What a model's tokens cost: list prices by model family, in USD per million tokens, each overridable
per model string by the caller (the console uses the table as is; ``incident-eval --price`` overrides)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from supervisor.schemas import TokenUsage

LIST_PRICE_SOURCE: Final = (
    "Anthropic list prices in USD per million tokens (docs.anthropic.com/en/docs/about-claude/pricing); "
    "Bedrock bills the same models at these rates or more (regional endpoints, legacy models); OpenAI's "
    "from openai.com/api/pricing; a model served on this machine costs nothing but time"
)


# Prompt caching's prices against the input price (Anthropic's pricing page, which Bedrock follows for
# Claude): a token read from the cache costs a tenth, one written to it (five-minute lifetime) a quarter more.
CACHE_READ_FACTOR: Final = 0.1
CACHE_WRITE_FACTOR: Final = 1.25


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float
    source: str = "table"

    @property
    def label(self) -> str:
        return f"{self.input_per_million:g} in / {self.output_per_million:g} out per million ({self.source})"

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Every input token at the input price (nothing cached)."""
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000

    def cost_of(self, usage: TokenUsage) -> float:
        """What ``usage`` is billed: tokens read from the prompt cache and written to it at their prices."""
        cached = usage.cache_read_tokens * CACHE_READ_FACTOR + usage.cache_write_tokens * CACHE_WRITE_FACTOR
        fresh = usage.prompt_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        return self.cost(fresh, usage.completion_tokens) + cached * self.input_per_million / 1_000_000


# By model family: a Bedrock id (with or without an inference-profile prefix such as 'us.') and an
# Anthropic API id of the same model name the same family.
LIST_PRICES: Final[dict[str, Price]] = {
    "claude-3-haiku": Price(0.25, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.0),
    "claude-3-5-sonnet": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "gpt-4o": Price(2.5, 10.0),
    "gpt-4o-mini": Price(0.15, 0.6),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.4, 1.6),
    "gpt-4.1-nano": Price(0.1, 0.4),
}
FREE: Final = Price(0.0, 0.0, "runs locally")
_PROFILE = re.compile(r"^(?:us|eu|apac|ca|jp|au|global)\.")
_SUFFIXES = re.compile(r"(?:-\d{8})?(?:-v\d+(?::\d+)?)?(?:-latest)?$")


def family(model: str) -> str:
    """``bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0`` -> ``claude-3-5-haiku``."""
    model_id = model.partition(":")[2] if ":" in model and not model.startswith("claude") else model
    model_id = _PROFILE.sub("", model_id).removeprefix("anthropic.")
    return _SUFFIXES.sub("", model_id)


def price_of(model: str, overrides: dict[str, Price], server: str | None = None) -> Price | None:
    """The override for ``model``, else its list price (rules, or an ``openai:`` model whose ``server``
    URL is on loopback: free); None when unknown."""
    if model in overrides:
        return overrides[model]
    if model == "rules" or (model.startswith("openai:") and _on_loopback(server)):
        return FREE
    return LIST_PRICES.get(family(model))


def _on_loopback(url: str | None) -> bool:
    host = urlsplit(url).hostname if url else None
    return host is not None and (host == "localhost" or _is_loopback_address(host))


def _is_loopback_address(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
