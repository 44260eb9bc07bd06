"""``run_agent``: one diagnosis over an MCP session, with timeouts, retries and categorised errors."""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
from botocore.exceptions import ClientError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import AgentState, StopReason, build_graph, initial_state, run_graph
from supervisor.agent.mcp_settings import McpClientSettings
from supervisor.agent.models import build_model
from supervisor.agent.providers import McpToolProvider, SchemaCachingSession
from supervisor.schemas import (
    AgentError,
    Diagnosis,
    LlmCallRecord,
    TokenUsage,
    ToolCallRecord,
    ToolResult,
)
from supervisor.settings import SupervisorSettings

logger = logging.getLogger(__name__)

BEDROCK_AUTH_CODES = frozenset(
    {"AccessDeniedException", "UnauthorizedException", "UnrecognizedClientException", "ExpiredTokenException"}
)
BEDROCK_TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
        "InternalServerException",
        "ModelNotReadyException",
        "TooManyRequestsException",
    }
)
RETRYABLE = frozenset({"mcp_connection", "mcp_init", "bedrock_transient"})


@dataclass
class AgentResult:
    diagnosis: Diagnosis | None
    stop_reason: StopReason
    messages: list[AnyMessage]
    token_usage: list[TokenUsage]
    llm_calls: list[LlmCallRecord]
    tool_calls: list[ToolCallRecord]
    tool_results: list[ToolResult] = field(default_factory=list)
    failed_attempts: list[AgentError] = field(default_factory=list)
    wall_seconds: float = 0.0

    @classmethod
    def from_run(
        cls,
        final: AgentState,
        reason: StopReason,
        accounting: Accounting,
        started: float,
        failures: list[AgentError] | None = None,
    ) -> AgentResult:
        """The result of a graph run that ended in ``final`` (``started`` is its time.monotonic())."""
        return cls(
            diagnosis=final["diagnosis"],
            stop_reason=reason,
            messages=list(final["messages"]),
            token_usage=list(final["token_usage"]),
            llm_calls=accounting.llm_calls,
            tool_calls=accounting.tool_calls,
            tool_results=list(final["tool_results"]),
            failed_attempts=failures or [],
            wall_seconds=time.monotonic() - started,
        )

    @property
    def total_tokens(self) -> int:
        return sum(usage.total_tokens for usage in self.token_usage)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside nested exception groups (anyio task groups wrap what they raise), each
    followed by its causes (libraries re-raise SDK errors as their own)."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
        return
    cause: BaseException | None = error
    while cause is not None:
        yield cause
        cause = cause.__cause__


def classify(error: BaseException, stage: Literal["connect", "initialize", "run"]) -> AgentError:
    """The AgentError for an exception raised while connecting, initialising, or running the graph."""
    for leaf in _leaves(error):
        if isinstance(leaf, AgentError):
            return leaf
        if isinstance(leaf, httpx2.HTTPStatusError) and leaf.response.status_code in (401, 403):
            return AgentError(
                "mcp_connection",
                f"the MCP server refused the key ({leaf.response.status_code}): check MCP_API_KEY",
                permanent=True,
            )
        if isinstance(leaf, httpx2.HTTPError):  # only the MCP client speaks httpx2; Bedrock goes via botocore
            return AgentError("mcp_connection", f"{type(leaf).__name__}: {leaf}")
        if isinstance(leaf, ClientError):
            code = leaf.response.get("Error", {}).get("Code", "")
            if code in BEDROCK_AUTH_CODES:
                return AgentError("bedrock_auth", f"{code}: {leaf}")
            if code in BEDROCK_TRANSIENT_CODES:
                return AgentError("bedrock_transient", f"{code}: {leaf}")
            return AgentError("unknown", f"{code}: {leaf}")
        if isinstance(leaf, NoCredentialsError):
            return AgentError("bedrock_auth", f"no AWS credentials for Bedrock: {leaf}")
        if isinstance(leaf, (BotoConnectionError, ReadTimeoutError)):
            return AgentError("bedrock_transient", f"Bedrock unreachable: {leaf}")
        if stage != "run" and isinstance(leaf, (TimeoutError, OSError)):
            described = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
            return AgentError("mcp_connection" if stage == "connect" else "mcp_init", described)
    first = next(_leaves(error))
    if stage == "initialize":
        return AgentError("mcp_init", f"{type(first).__name__}: {first}")
    return AgentError("unknown", f"{type(first).__name__}: {first}")


def _retryable(error: BaseException) -> bool:
    return isinstance(error, AgentError) and error.category in RETRYABLE and not error.permanent


def _retrying(settings: SupervisorSettings) -> AsyncRetrying:
    """Up to ``settings.attempts`` runs; retry n (from 0) waits ``backoff_base**n`` seconds; the last
    failure is raised as it is."""
    return AsyncRetrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential(exp_base=settings.backoff_base),
        retry=retry_if_exception(_retryable),
        sleep=asyncio.sleep,
        reraise=True,
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every MCP session of the process: a new client would load the CA bundle again
    (about 20 ms of CPU per investigation)."""
    return httpx2.create_ssl_context()


def _mcp_http_client(headers: dict[str, str]) -> httpx2.AsyncClient:
    """The MCP SDK's client (``create_mcp_http_client``: its timeouts, redirects left to the transport)
    with the shared TLS context."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, verify=_tls_context())


@asynccontextmanager
async def mcp_session(settings: McpClientSettings, api_key: str | None) -> AsyncIterator[ClientSession]:
    """An initialised MCP session to ``settings.mcp_server_url``; failures become AgentErrors."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = settings.mcp_server_url
    async with AsyncExitStack() as stack:
        try:
            async with asyncio.timeout(settings.mcp_connect_timeout):
                if settings.mcp_transport == "sse":
                    streams = await stack.enter_async_context(
                        sse_client(url, headers=headers, timeout=settings.mcp_connect_timeout)
                    )
                else:
                    http = await stack.enter_async_context(_mcp_http_client(headers))
                    streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        except TimeoutError:
            raise AgentError(
                "mcp_connection", f"no answer from {url} within {settings.mcp_connect_timeout:g} s"
            ) from None
        except Exception as error:
            raise classify(error, "connect") from error
        session = await stack.enter_async_context(SchemaCachingSession(streams[0], streams[1]))
        try:
            async with asyncio.timeout(settings.mcp_init_timeout):
                await session.initialize()
        except TimeoutError:
            raise AgentError(
                "mcp_init", f"{url} did not complete the MCP handshake within {settings.mcp_init_timeout:g} s"
            ) from None
        except Exception as error:
            raise classify(error, "initialize") from error
        yield session


async def _attempt(
    model: BaseChatModel,
    settings: SupervisorSettings,
    api_key: str | None,
    state: AgentState,
    accounting: Accounting,
) -> tuple[AgentState, StopReason]:
    async with mcp_session(settings, api_key) as session:
        # The server answers a little before the graph's own tool timeout, so its gaps arrive in time.
        provider = McpToolProvider(
            session, deadline_seconds=max(1.0, settings.tool_timeout - 2), incident_id=state["incident_id"]
        )
        graph = build_graph(model, provider, settings, accounting)
        try:
            return await run_graph(graph, state, settings.recursion_limit)
        except Exception as error:
            raise classify(error, "run") from error


async def run_agent(
    incident: dict[str, Any],
    incident_id: str,
    function_name: str,
    *,
    settings: SupervisorSettings,
    api_key: str | None,
    model: BaseChatModel | None = None,
    deadline: float | None = None,
    on_record: Callable[[LlmCallRecord | ToolCallRecord], None] | None = None,
) -> AgentResult:
    """Diagnose ``function_name``; raises AgentError when no attempt could run the graph to its end.

    ``deadline`` is the time.time() by which the answer is needed (a Lambda's remaining time); by default
    ``settings.time_budget_seconds`` from now."""
    started = time.monotonic()
    model = model if model is not None else build_model(settings.supervisor_model, settings)
    deadline = deadline if deadline is not None else time.time() + settings.time_budget_seconds
    accounting = Accounting(on_record=on_record)
    failures: list[AgentError] = []

    async def attempt() -> tuple[AgentState, StopReason]:
        state = initial_state(incident, incident_id, function_name, deadline)
        try:
            return await _attempt(model, settings, api_key, state, accounting)
        except Exception as raised:  # anyio task groups may wrap an AgentError in an exception group
            error = raised if isinstance(raised, AgentError) else classify(raised, "run")
            failures.append(error)
            logger.warning("attempt %d of %d failed: %s", len(failures), settings.attempts, error)
            raise error from None

    try:
        outcome: tuple[AgentState, StopReason] = await _retrying(settings)(attempt)
    except AgentError as error:
        error.add_note(f"after {len(failures)} attempt(s)")
        raise error from None
    return AgentResult.from_run(*outcome, accounting, started, failures)
