"""OAuth 2.1 resource-server mode, assembled from the settings: who issues tokens, for which audience,
with which scopes, and the URL under which this server publishes its protected-resource metadata."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_server.access_tokens import JwtVerifier, TokenPolicy
from mcp_server.https_urls import checked_url
from mcp_server.jwks import JwksCache
from mcp_server.settings import LOOPBACK_HOSTS, ServerSettings


class OAuthConfigurationError(RuntimeError):
    """OAuth mode is asked for but cannot work as configured."""


@dataclass(frozen=True)
class OAuthMode:
    verifier: JwtVerifier
    resource: str  # this server's public URL (RFC 9728 `resource`)


def oauth_mode(settings: ServerSettings, *, host: str, port: int) -> OAuthMode | None:
    """None unless MCP_OAUTH_ISSUER is set; OAuthConfigurationError when the resource URL is unknown."""
    issuer, audience = settings.mcp_oauth_issuer, settings.mcp_oauth_audience
    if issuer is None or audience is None:
        return None
    resource = settings.mcp_oauth_resource
    if resource is None:
        if host not in LOOPBACK_HOSTS:
            raise OAuthConfigurationError(
                "MCP_OAUTH_RESOURCE (this server's public https URL, e.g. https://mcp.example.com) is "
                f"required with MCP_OAUTH_ISSUER when the server is bound to {host}"
            )
        resource = checked_url("the resource URL", f"http://{f'[{host}]' if ':' in host else host}:{port}")
    policy = TokenPolicy(issuer=issuer, audience=audience, required_scopes=settings.oauth_scopes())
    return OAuthMode(JwtVerifier(policy, JwksCache(issuer, settings.mcp_oauth_jwks_url)), resource)
