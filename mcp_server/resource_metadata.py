"""RFC 9728 Protected Resource Metadata: where an MCP client learns which authorization server issues
tokens for this server, and which scopes to ask for. Served without authentication."""

from __future__ import annotations

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route

WELL_KNOWN = "/.well-known/oauth-protected-resource"
RESOURCE_NAME = "incident-response"


def metadata_url(resource: str) -> str:
    """The metadata's URL for ``resource`` (RFC 9728 §3.1: the well-known prefix before its path)."""
    return str(build_resource_metadata_url(AnyHttpUrl(resource)))


def metadata_routes(resource: str, issuer: str, scopes: tuple[str, ...]) -> list[Route]:
    """The document at ``/.well-known/oauth-protected-resource``, and at the RFC 9728 path for
    ``resource`` when that has a path of its own."""
    metadata = ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": [issuer],
            "scopes_supported": list(scopes) or None,
            "resource_name": RESOURCE_NAME,
        }
    )
    endpoint = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    paths = dict.fromkeys([WELL_KNOWN, metadata_path(resource)])
    return [Route(path, endpoint=endpoint, methods=["GET", "OPTIONS"]) for path in paths]


def metadata_path(resource: str) -> str:
    url = metadata_url(resource)
    return url[url.index(WELL_KNOWN) :]
