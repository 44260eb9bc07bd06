"""The MCP client: one initialised session to the server, and what a failure to reach it (or Bedrock, in
the same run) is called (``classify``). Shared by the agent's runs, the pipeline's checks before one and
the executor's recovery check; it imports no model stack."""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Literal

import httpx2
from botocore.exceptions import ClientError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from supervisor.agent.mcp_settings import McpClientSettings
from supervisor.agent.providers import SchemaCachingSession
from supervisor.schemas import AgentError

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
