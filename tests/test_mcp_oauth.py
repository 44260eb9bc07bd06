"""OAuth 2.1 resource-server mode: JWT access tokens from a real identity provider (the sandbox's Cognito
user pools, through the shipped CLI) and from a local issuer with its own JWKS (expiry, rotation,
scopes), RFC 9728 metadata, and static keys beside tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from pydantic import ValidationError

from chaos.loopback import served_in_thread
from chaos.mcp_process import server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.access_tokens import JwtVerifier, TokenPolicy
from mcp_server.app import build_app
from mcp_server.aws import AwsClients
from mcp_server.jwks import JwksCache
from mcp_server.oauth import OAuthMode
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from tests.mcp_support import TRANSPORTS, Transport, mcp_session
from tests.oauth_issuer import LocalIssuer, SigningKey

AUDIENCE = "https://mcp.example.com"
SCOPE = "incident:read"
STATIC_KEY = "static-key-0123456789"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)


def _post_mcp(base: str, token: str | None) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{base}/mcp", headers={**HEADERS, **auth}, content=INITIALIZE, timeout=10)


def _segment(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _claims(token: str) -> dict[str, object]:
    claims: dict[str, object] = jwt.decode(token, options={"verify_signature": False})
    return claims


def _tampered(token: str, **changes: object) -> str:
    """The token's claims changed, its header and signature kept."""
    header, _, signature = token.split(".")
    return f"{header}.{_segment(_claims(token) | changes)}.{signature}"


def _unsigned(token: str) -> str:
    return f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{_segment(_claims(token))}."


def _refusal(response: httpx.Response) -> tuple[str, str]:
    """(WWW-Authenticate, error_description) of a refused request."""
    return response.headers["www-authenticate"], response.json()["error_description"]


# --- Cognito user pools in the sandbox, through the CLI as shipped ---------------------------------------


@dataclass
class CognitoWorld:
    issuer: str
    jwks_url: str
    client_id: str
    access_token: str
    id_token: str
    other_client_token: str  # same pool, another app client: another audience
    other_pool_token: str  # another pool: another issuer (moto signs every pool with the same key)


def _login(cognito: object, pool: str, client: str) -> dict[str, str]:
    auth = cognito.initiate_auth(  # type: ignore[attr-defined]
        ClientId=client,
        AuthFlow="USER_PASSWORD_AUTH",
        AuthParameters={"USERNAME": "alice", "PASSWORD": "Passw0rd-Alice!"},
    )
    result: dict[str, str] = auth["AuthenticationResult"]
    return result


def _pool_with_user(cognito: object, name: str) -> tuple[str, str, str]:
    pool: str = cognito.create_user_pool(PoolName=name)["UserPool"]["Id"]  # type: ignore[attr-defined]
    flows = ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
    clients = [
        cognito.create_user_pool_client(  # type: ignore[attr-defined]
            UserPoolId=pool, ClientName=client, ExplicitAuthFlows=flows
        )["UserPoolClient"]["ClientId"]
        for client in ("mcp-server", "another-app")
    ]
    cognito.admin_create_user(  # type: ignore[attr-defined]
        UserPoolId=pool, Username="alice", TemporaryPassword="Temp-Passw0rd!", MessageAction="SUPPRESS"
    )
    cognito.admin_set_user_password(  # type: ignore[attr-defined]
        UserPoolId=pool, Username="alice", Password="Passw0rd-Alice!", Permanent=True
    )
    return pool, clients[0], clients[1]


@pytest.fixture(scope="module")
def cognito(sandbox: Sandbox) -> Iterator[CognitoWorld]:
    client = sandbox.session(names.OPERATOR).client("cognito-idp")
    pool, mcp_client, other_client = _pool_with_user(client, "incident-response-users")
    other_pool, other_pool_client, _ = _pool_with_user(client, "another-organisation")
    try:
        tokens = _login(client, pool, mcp_client)
        yield CognitoWorld(
            issuer=f"https://cognito-idp.{sandbox.region}.amazonaws.com/{pool}",
            jwks_url=f"{sandbox.endpoint_url}/{pool}/.well-known/jwks.json",
            client_id=mcp_client,
            access_token=tokens["AccessToken"],
            id_token=tokens["IdToken"],
            other_client_token=_login(client, pool, other_client)["AccessToken"],
            other_pool_token=_login(client, other_pool, other_pool_client)["AccessToken"],
        )
    finally:
        for user_pool in (pool, other_pool):
            client.delete_user_pool(UserPoolId=user_pool)


@pytest.fixture(scope="module")
def cognito_server(
    sandbox: Sandbox, cognito: CognitoWorld, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``incident-mcp-server`` configured by environment for the pool; no MCP_API_KEY, so tokens only."""
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {
        "AWS_PROFILE": names.MCP_SERVER,
        "MCP_OAUTH_ISSUER": cognito.issuer,
        "MCP_OAUTH_AUDIENCE": cognito.client_id,
        "MCP_OAUTH_JWKS_URL": cognito.jwks_url,
        "MCP_AUTH_FAILURES_PER_MINUTE": "1000",  # the refusals below come from one client
    }
    with server_process(env, tmp_path_factory.mktemp("oauth") / "server.log") as server:
        yield server.url


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_cognito_access_token_opens_a_session(
    cognito_server: str, cognito: CognitoWorld, transport: Transport
) -> None:
    async with mcp_session(transport, cognito_server, cognito.access_token) as session:
        assert len((await session.list_tools()).tools) >= 4
        result = await session.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error


COGNITO_REFUSALS = {
    "id token": ("id_token", "not an access token"),
    "another app client": ("other_client_token", "issued for another audience"),
    "another pool": ("other_pool_token", "was not issued by"),
}


@pytest.mark.parametrize("case", list(COGNITO_REFUSALS))
def test_cognito_tokens_for_someone_else_are_refused(
    cognito_server: str, cognito: CognitoWorld, case: str
) -> None:
    attribute, reason = COGNITO_REFUSALS[case]
    response = _post_mcp(cognito_server, getattr(cognito, attribute))
    assert response.status_code == 401
    challenge, description = _refusal(response)
    assert 'error="invalid_token"' in challenge
    assert reason in description


def test_forged_cognito_tokens_are_refused(cognito_server: str, cognito: CognitoWorld) -> None:
    forged = {
        "tampered": (_tampered(cognito.access_token, username="admin"), "signature does not verify"),
        "unsigned": (_unsigned(cognito.access_token), "unsigned tokens are not accepted"),
        "not a JWT": ("opaque-token-value", "neither a known key nor a JWT"),
    }
    for token, reason in forged.values():
        response = _post_mcp(cognito_server, token)
        assert response.status_code == 401
        assert reason in _refusal(response)[1]


def test_the_shipped_key_is_not_accepted_in_tokens_only_mode(cognito_server: str, sandbox: Sandbox) -> None:
    assert _post_mcp(cognito_server, sandbox.world.mcp_api_key).status_code == 401


def test_401_points_at_rfc9728_metadata(cognito_server: str, cognito: CognitoWorld) -> None:
    response = _post_mcp(cognito_server, None)
    assert response.status_code == 401
    challenge, _ = _refusal(response)
    metadata_url = f"{cognito_server}/.well-known/oauth-protected-resource"
    assert f'resource_metadata="{metadata_url}"' in challenge
    assert "error=" not in challenge  # no credential was presented (RFC 6750 §3.1)
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == cognito_server
    assert metadata["authorization_servers"] == [cognito.issuer]
    assert metadata["bearer_methods_supported"] == ["header"]


# --- A local issuer: expiry, rotation, scopes, discovery, static keys beside tokens -----------------------


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    local = LocalIssuer()
    with served_in_thread(local.app()) as url:
        local.issuer = url
        yield local


def _oauth_app_url(sandbox: Sandbox, issuer: LocalIssuer, *, keys: list[str]) -> Iterator[str]:
    settings = ServerSettings(mcp_auth_failures_per_minute=1000)  # the refusals below come from one client
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    policy = TokenPolicy(issuer=issuer.issuer, audience=AUDIENCE, required_scopes=(SCOPE,))
    oauth = OAuthMode(JwtVerifier(policy, JwksCache(issuer.issuer)), resource=AUDIENCE)  # JWKS discovered
    with served_in_thread(build_app(server, settings, host="127.0.0.1", keys=keys, oauth=oauth)) as url:
        yield url


@pytest.fixture(scope="module")
def both_modes(sandbox: Sandbox, issuer: LocalIssuer) -> Iterator[str]:
    yield from _oauth_app_url(sandbox, issuer, keys=[STATIC_KEY])


@pytest.fixture
def fresh_server(sandbox: Sandbox, issuer: LocalIssuer) -> Iterator[str]:
    """A server whose key cache is empty (for counting JWKS fetches)."""
    yield from _oauth_app_url(sandbox, issuer, keys=[])


def _valid(issuer: LocalIssuer, **claims: object) -> str:
    return issuer.mint({"aud": AUDIENCE, "scope": f"openid {SCOPE}", "client_id": "agent"} | claims)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("credential", ["access token", "static key"])
async def test_tokens_and_static_keys_work_side_by_side(
    both_modes: str, issuer: LocalIssuer, transport: Transport, credential: str
) -> None:
    secret = _valid(issuer) if credential == "access token" else STATIC_KEY
    async with mcp_session(transport, both_modes, secret) as session:
        assert len((await session.list_tools()).tools) >= 4


def _hs256_with_public_key(issuer: LocalIssuer) -> str:
    """The algorithm-confusion attack: HMAC keyed with the issuer's public key."""
    public = issuer.current.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _segment({"alg": "HS256", "typ": "JWT", "kid": issuer.current.kid})
    payload = _segment(_claims(_valid(issuer)))
    mac = hmac.new(public, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


LOCAL_REFUSALS: dict[str, tuple[Callable[[LocalIssuer], str], str]] = {
    "expired": (lambda i: i.mint({"aud": AUDIENCE, "scope": SCOPE}, lifetime=-120), "has expired"),
    "wrong audience": (lambda i: _valid(i, aud="https://other.example.com"), "issued for another audience"),
    "no audience": (lambda i: i.mint({"scope": SCOPE}), "issued for another audience"),
    "wrong issuer": (lambda i: _valid(i, iss="https://evil.example.com"), "was not issued by"),
    "unsigned": (lambda i: _unsigned(_valid(i)), "unsigned tokens are not accepted"),
    "tampered": (lambda i: _tampered(_valid(i), sub="admin"), "signature does not verify"),
    "hs256 with the public key": (_hs256_with_public_key, "HS256 are not accepted"),
    "unpublished key": (
        lambda i: i.mint({"aud": AUDIENCE, "scope": SCOPE}, key=SigningKey.generate()),
        "not among the issuer's published keys",
    ),
}


@pytest.mark.parametrize("case", list(LOCAL_REFUSALS))
def test_bad_tokens_are_refused(both_modes: str, issuer: LocalIssuer, case: str) -> None:
    make, reason = LOCAL_REFUSALS[case]
    response = _post_mcp(both_modes, make(issuer))
    assert response.status_code == 401
    challenge, description = _refusal(response)
    assert challenge.startswith('Bearer realm="incident-response", error="invalid_token"')
    assert f'resource_metadata="{AUDIENCE}/.well-known/oauth-protected-resource"' in challenge
    assert reason in description


def test_a_token_without_the_required_scope_gets_403(both_modes: str, issuer: LocalIssuer) -> None:
    response = _post_mcp(both_modes, _valid(issuer, scope="openid profile"))
    assert response.status_code == 403
    challenge, description = _refusal(response)
    assert 'error="insufficient_scope"' in challenge
    assert f'scope="{SCOPE}"' in challenge
    assert SCOPE in description
    assert response.json()["error"] == "insufficient_scope"


def test_scopes_may_come_as_a_scp_list(both_modes: str, issuer: LocalIssuer) -> None:
    token = issuer.mint({"aud": [AUDIENCE, "other"], "scp": [SCOPE]})
    assert _post_mcp(both_modes, token).status_code == 200


def test_keys_are_cached_and_refetched_when_the_issuer_rotates(
    fresh_server: str, issuer: LocalIssuer
) -> None:
    before = issuer.jwks_requests
    old = _valid(issuer)
    for _ in range(3):
        assert _post_mcp(fresh_server, old).status_code == 200
    assert issuer.jwks_requests == before + 1  # fetched once, then cached

    issuer.rotate()  # the old key is retired, tokens are signed with a new one
    assert _post_mcp(fresh_server, _valid(issuer)).status_code == 200
    assert issuer.jwks_requests == before + 2  # unknown key id: fetched again

    retired = _post_mcp(fresh_server, old)
    assert retired.status_code == 401
    assert "not among the issuer's published keys" in _refusal(retired)[1]
    assert issuer.jwks_requests == before + 2  # within the cool-down: no fetch per unknown key id


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_unknown_key_ids_refetch_at_most_once_per_cooldown(issuer: LocalIssuer) -> None:
    clock = FakeClock()
    cache = JwksCache(issuer.issuer, f"{issuer.issuer}/jwks.json", unknown_kid_cooldown=30, clock=clock)
    assert await cache.key(issuer.current.kid) is not None
    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        assert await cache.key(kid) is None
    assert cache.fetches == 2  # the first read, and one refetch for all the made-up ids
    clock.now += 31
    assert await cache.key("made-up-4") is None
    assert cache.fetches == 3
    clock.now += 3601
    assert await cache.key(issuer.current.kid) is not None
    assert cache.fetches == 4  # expired after max_age


# --- Configuration is checked before anything starts -----------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mcp_oauth_issuer": "https://idp.example.com"}, "MCP_OAUTH_AUDIENCE is required"),
        ({"mcp_oauth_issuer": "http://idp.example.com", "mcp_oauth_audience": "a"}, "must use https"),
        ({"mcp_oauth_issuer": "https://idp.example.com?x=1", "mcp_oauth_audience": "a"}, "query string"),
        ({"mcp_oauth_issuer": "idp.example.com", "mcp_oauth_audience": "a"}, "absolute https:// URL"),
        (
            {
                "mcp_oauth_issuer": "https://idp.example.com",
                "mcp_oauth_audience": "a",
                "mcp_oauth_jwks_url": "http://keys.example.com/jwks",
            },
            "MCP_OAUTH_JWKS_URL must use https",
        ),
        ({"mcp_oauth_audience": "a", "mcp_oauth_scopes": "x"}, "only apply with MCP_OAUTH_ISSUER"),
        (
            {
                "mcp_oauth_issuer": "https://idp.example.com",
                "mcp_oauth_audience": "a",
                "mcp_oauth_scopes": 'a "b',
            },
            "are not scopes",
        ),
        (
            {"mcp_oauth_issuer": 'https://idp.example.com/"', "mcp_oauth_audience": "a"},
            "without spaces, quotes",
        ),
    ],
)
def test_bad_oauth_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerSettings.model_validate(settings)


def test_loopback_http_issuers_are_allowed() -> None:
    settings = ServerSettings.model_validate(
        {"mcp_oauth_issuer": "http://127.0.0.1:9000", "mcp_oauth_audience": "a", "mcp_oauth_scopes": "x, y"}
    )
    assert settings.oauth_scopes() == ("x", "y")


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_server.cli", "--port", "9", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_refuses_an_issuer_without_an_audience() -> None:
    result = _cli({"MCP_OAUTH_ISSUER": "https://idp.example.com", "AWS_REGION": "ca-central-1"})
    assert result.returncode == 2
    assert "MCP_OAUTH_AUDIENCE is required with MCP_OAUTH_ISSUER" in result.stderr


def test_cli_needs_the_public_url_off_loopback() -> None:
    env = {
        "MCP_OAUTH_ISSUER": "https://idp.example.com",
        "MCP_OAUTH_AUDIENCE": "https://mcp.example.com",
        "AWS_REGION": "ca-central-1",
    }
    result = _cli(env, "--host", "0.0.0.0")  # noqa: S104
    assert result.returncode == 2
    assert "MCP_OAUTH_RESOURCE" in result.stderr
