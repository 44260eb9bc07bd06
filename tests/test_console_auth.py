"""Signing in to incident-console off loopback: the OAuth 2.1 authorization code flow with PKCE against a
local issuer served over HTTP (state, audience and scope checked before a session opens), the signed
session cookie (tampered, expired, another secret, a retired key; minutes long, renewed on use, within the
session's end), bearer access tokens and keys for scripts, the key sign-in form (CSRF checks), wrong keys
throttled per client, startup errors (short keys), and loopback left open."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import jwt
import pytest
from starlette.testclient import TestClient

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from console.app import create_app
from console.cli import main as console_main
from console.sessions import SESSION_COOKIE, Cookies, Identity
from console.settings import ConsoleSettings
from supervisor.incident.store import IncidentStore
from tests.console_support import ago, claimed, local_issuer, served_knowing_its_url
from tests.oauth_issuer import LocalIssuer

AUDIENCE = "https://mcp.example.com"
SCOPE = "incident:read"
CLIENT = "incident-console"
PUBLIC = "http://127.0.0.1:9"  # the console's public URL in TestClient tests: only the issuer uses it
SECRET = "s" * 40
KEY = "console-key-0123456789-abcdefghijklmnop"
HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
ANYWHERE = "0.0.0.0"  # noqa: S104 - a non-loopback bind, never actually bound by these tests


def settings(incidents: IncidentStore, **values: Any) -> ConsoleSettings:
    base: dict[str, Any] = {
        "host": ANYWHERE,
        "state_table": incidents.state_table,
        "context_table": str(incidents.context_table),
        "api_key": None,
        "session_secret": SECRET,
    }
    return ConsoleSettings(**(base | values))


def oauth(
    incidents: IncidentStore, issuer: LocalIssuer, public_url: str = PUBLIC, **values: Any
) -> ConsoleSettings:
    return settings(
        incidents,
        oauth_issuer=issuer.issuer,
        oauth_audience=AUDIENCE,
        oauth_scopes=SCOPE,
        oauth_client_id=CLIENT,
        public_url=public_url,
        **values,
    )


def client(sandbox: Sandbox, console_settings: ConsoleSettings) -> TestClient:
    app = create_app(console_settings, sandbox.session(names.SUPERVISOR))
    return TestClient(app, base_url=PUBLIC, follow_redirects=False)  # a Host the console answers


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with local_issuer(CLIENT) as served:
        served.grant_claims = {"aud": AUDIENCE}
        yield served


def max_age_of(cookie: str) -> int:
    return int(re.search(r"Max-Age=(\d+)", cookie)[1])  # type: ignore[index]


def set_cookies(response: httpx.Response | httpx2.Response, name: str) -> list[str]:
    return [c for c in response.headers.get_list("set-cookie") if c.startswith(f"{name}=")]


def to_callback(console: TestClient) -> tuple[str, dict[str, str]]:
    """Start a sign-in in ``console`` and let the (real) issuer approve it: the callback path and query."""
    started = console.get("/auth/login", params={"next": "/incidents"}, follow_redirects=False)
    assert started.status_code == 302
    approved = httpx.get(started.headers["location"], follow_redirects=False, timeout=10)
    assert approved.status_code == 302, approved.text
    back = urlsplit(approved.headers["location"])
    assert f"{back.scheme}://{back.netloc}" == PUBLIC
    return back.path, {k: v[0] for k, v in parse_qs(back.query).items()}


def test_the_oauth_sign_in_round_trip_ends_on_the_list_with_a_session_cookie(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer
) -> None:
    incident_id = claimed(incidents, "fn-signed-in", ago(60), "DIAGNOSED")
    issuer.grant_lifetime = 900

    def make(url: str) -> Any:
        return create_app(oauth(incidents, issuer, public_url=url), sandbox.session(names.SUPERVISOR))

    with served_knowing_its_url(make) as url, httpx.Client(timeout=10, follow_redirects=True) as browser:
        page = browser.get(f"{url}/incidents?status=DIAGNOSED", headers=HTML)
        assert page.status_code == 200, page.text
        assert str(page.url) == f"{url}/incidents?status=DIAGNOSED"
        assert [str(r.url).split("?")[0] for r in page.history] == [
            f"{url}/incidents",
            f"{url}/auth/login",
            f"{issuer.issuer}/authorize",
            f"{url}/auth/callback",
        ]
        assert incident_id in page.text
        assert "signed in as user-1" in page.text

        (request,) = issuer.token_requests  # one code, exchanged by the console with its PKCE verifier
        assert request["client"] == CLIENT
        assert request["redirect_uri"] == f"{url}/auth/callback"
        assert len(request["code_verifier"]) >= 43
        (cookie,) = set_cookies(page.history[-1], SESSION_COOKIE)
        assert "HttpOnly" in cookie
        assert "SameSite=Lax" in cookie
        assert "Path=/;" in cookie
        assert "Secure" not in cookie  # http on loopback; an https CONSOLE_PUBLIC_URL adds it
        assert max_age_of(cookie) == 600  # one cookie: CONSOLE_SESSION_COOKIE_MINUTES (10)
        session = browser.cookies[SESSION_COOKIE]
        claims = jwt.decode(session, options={"verify_signature": False})
        assert set(claims) == {"sub", "via", "end", "exp", "iat", "aud", "signed_in_at"}  # never the token
        assert 0 <= claims["iat"] - claims["signed_in_at"] <= 60  # the sign-in, not the cookie's renewal
        assert (claims["sub"], claims["via"]) == ("user-1", "oauth")
        assert 880 <= claims["end"] - claims["iat"] <= 900  # the session ends with the access token

        out = browser.post(f"{url}/auth/logout", headers={"Origin": url})
        assert out.status_code == 200
        assert "Signed out" in out.text
        assert SESSION_COOKIE not in browser.cookies
        again = browser.get(f"{url}/incidents", headers=HTML, follow_redirects=False)
        assert again.status_code == 303
        assert again.headers["location"] == "/auth/login?next=%2Fincidents"


def test_a_wrong_state_or_a_callback_nobody_started_is_refused(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer
) -> None:
    console = client(sandbox, oauth(incidents, issuer))
    path, query = to_callback(console)
    wrong = console.get(path, params=query | {"state": "not-the-state"}, follow_redirects=False)
    assert wrong.status_code == 400
    assert "state does not match" in wrong.text
    assert not set_cookies(wrong, SESSION_COOKIE)
    assert issuer.token_requests == []  # the code was never exchanged

    stranger = client(sandbox, oauth(incidents, issuer))  # another browser: no sign-in cookie
    refused = stranger.get(path, params=query, follow_redirects=False)
    assert refused.status_code == 400
    assert not set_cookies(refused, SESSION_COOKIE)

    done = console.get(path, params=query, follow_redirects=False)  # the right state still works
    assert done.status_code == 303
    assert set_cookies(done, SESSION_COOKIE)


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        ({"aud": "https://another.example.com"}, "another audience"),
        ({"aud": AUDIENCE, "scope": "incident:write"}, "lacks the scope(s) incident:read"),
    ],
    ids=["another-audience", "without-the-scope"],
)
def test_a_token_the_mcp_server_would_refuse_opens_no_session(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer, grant: dict[str, str], problem: str
) -> None:
    issuer.grant_claims = grant
    console = client(sandbox, oauth(incidents, issuer))
    path, query = to_callback(console)
    refused = console.get(path, params=query, follow_redirects=False)
    assert refused.status_code == 403
    assert problem in refused.text
    assert not set_cookies(refused, SESSION_COOKIE)
    assert len(issuer.token_requests) == 1  # exchanged, then refused by the verifier
    assert console.get("/incidents", headers=HTML, follow_redirects=False).status_code == 303


def test_a_tampered_expired_or_foreign_session_cookie_is_refused(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    console = client(sandbox, settings(incidents, api_key=KEY))
    cookies = Cookies(SECRET.encode(), secure=False, keys=[KEY])
    later = int(time.time()) + 600
    good = cookies.session(Identity("key", "key", later), key=KEY)

    def status(value: str) -> int:
        response = console.get("/incidents", headers=HTML | {"Cookie": f"{SESSION_COOKIE}={value}"})
        return response.status_code

    assert status(good) == 200  # the control: a session this console made
    header, _payload, signature = good.split(".")
    forged = jwt.encode(
        {"sub": "admin", "via": "key", "exp": later}, "a-guessed-secret-" * 2, algorithm="HS256"
    ).split(".")[1]
    assert status(f"{header}.{forged}.{signature}") == 303
    assert status(good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")) == 303
    expired = cookies.session(Identity("key", "key", int(time.time()) - 1), key=KEY)
    assert status(expired) == 303
    foreign = Cookies(b"another-secret-" * 3, secure=False, keys=[KEY]).session(
        Identity("key", "key", later), key=KEY
    )
    assert status(foreign) == 303
    retired = cookies.session(Identity("key", "key", later), key="a-key-no-longer-configured")
    assert status(retired) == 303
    plain = console.get("/incidents", headers={"Cookie": f"{SESSION_COOKIE}={expired}"})  # a script: 401
    assert plain.status_code == 401
    assert plain.json()["error"] == "unauthorized"


def test_bearer_access_tokens_and_keys_work_for_scripts(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer
) -> None:
    console = client(sandbox, oauth(incidents, issuer, api_key=KEY))

    def get(token: str | None) -> httpx2.Response:
        return console.get("/incidents", headers={"Authorization": f"Bearer {token}"} if token else {})

    assert get(issuer.mint({"aud": AUDIENCE, "scope": SCOPE})).status_code == 200
    assert get(KEY).status_code == 200
    missing = get(None)
    assert missing.status_code == 401
    assert missing.json()["error"] == "unauthorized"
    assert get(issuer.mint({"aud": AUDIENCE, "scope": "other"})).status_code == 403
    assert get(issuer.mint({"aud": "https://another.example.com", "scope": SCOPE})).status_code == 401
    assert get(issuer.mint({"aud": AUDIENCE, "scope": SCOPE}, lifetime=-120)).status_code == 401
    assert get("not-the-key").status_code == 401
    assert console.get("/healthz").status_code == 200
    assert console.get("/static/console.css").status_code == 200


def test_the_key_form_signs_in_with_a_right_key_and_refuses_a_wrong_one(
    sandbox: Sandbox, incidents: IncidentStore, caplog: pytest.LogCaptureFixture
) -> None:
    console = client(sandbox, settings(incidents, api_key=f"old-key-0000-{KEY}, {KEY}", session_hours=2))
    sent = console.get("/incidents?since=24h", headers=HTML, follow_redirects=False)
    assert (sent.status_code, sent.headers["location"]) == (
        303,
        "/auth/login?next=%2Fincidents%3Fsince%3D24h",
    )

    def form() -> dict[str, str]:
        page = console.get(sent.headers["location"])
        assert page.status_code == 200
        assert 'type="password"' in page.text
        token = re.search(r'name="form_token" value="([^"]+)"', page.text)
        assert token is not None
        return {"form_token": token[1], "next": "/incidents?since=24h"}

    wrong = console.post("/auth/login", data=form() | {"key": "wrong-key-guess"}, follow_redirects=False)
    assert wrong.status_code == 401
    assert "not accepted" in wrong.text
    assert "wrong-key-guess" not in wrong.text
    assert not set_cookies(wrong, SESSION_COOKIE)

    no_token = console.post("/auth/login", data={"key": KEY, "next": "/incidents"}, follow_redirects=False)
    assert no_token.status_code == 403
    assert not set_cookies(no_token, SESSION_COOKIE)
    elsewhere = console.post(
        "/auth/login",
        data=form() | {"key": KEY},
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert elsewhere.status_code == 403
    assert not set_cookies(elsewhere, SESSION_COOKIE)
    offsite = console.post(
        "/auth/login", data=form() | {"key": KEY, "next": "//evil.example/"}, follow_redirects=False
    )
    assert offsite.headers["location"] == "/incidents"  # never sent to another site
    console.cookies.clear()

    right = console.post("/auth/login", data=form() | {"key": KEY}, follow_redirects=False)
    assert (right.status_code, right.headers["location"]) == (303, "/incidents?since=24h")
    (cookie,) = set_cookies(right, SESSION_COOKIE)
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie
    assert max_age_of(cookie) == 600  # one cookie: CONSOLE_SESSION_COOKIE_MINUTES (10)
    claims = jwt.decode(console.cookies[SESSION_COOKIE], options={"verify_signature": False})
    assert 7190 <= claims["end"] - claims["iat"] <= 7200  # the session: CONSOLE_SESSION_HOURS=2
    page = console.get("/incidents?since=24h", headers=HTML)
    assert page.status_code == 200
    assert "signed in with a key" in page.text
    assert KEY not in caplog.text
    assert KEY not in page.text

    out = console.post("/auth/logout", follow_redirects=False)
    assert out.status_code == 200
    assert console.get("/incidents", headers=HTML, follow_redirects=False).status_code == 303


def test_loopback_needs_no_sign_in_even_with_keys_and_oauth_configured(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer
) -> None:
    console = client(sandbox, oauth(incidents, issuer, host="127.0.0.1", api_key=KEY))
    assert console.get("/incidents", headers=HTML).status_code == 200
    assert console.get("/incidents").status_code == 200
    assert console.get("/auth/login").status_code == 404


def test_oauth_settings_come_from_the_mcp_servers_names_and_startup_errors_are_clear(
    sandbox: Sandbox,
    incidents: IncidentStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("MCP_API_KEY", "CONSOLE_API_KEY", "CONSOLE_PUBLIC_URL", "CONSOLE_OAUTH_CLIENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", sandbox.region)  # configured, so the checks below are reached
    monkeypatch.setenv("MCP_OAUTH_ISSUER", "https://idp.example.com/")
    monkeypatch.setenv("MCP_OAUTH_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("CONSOLE_OAUTH_AUDIENCE", "console-client")  # the console's own name wins
    monkeypatch.setenv("MCP_OAUTH_SCOPES", f"{SCOPE} openid")
    read = ConsoleSettings(host=ANYWHERE)
    assert (read.oauth_issuer, read.oauth_audience, read.scopes()) == (
        "https://idp.example.com/",  # exactly as in `iss`
        "console-client",
        (SCOPE, "openid"),
    )
    with pytest.raises(ValueError, match="requires CONSOLE_PUBLIC_URL"):
        create_app(read, sandbox.session(names.SUPERVISOR))
    monkeypatch.setenv("CONSOLE_PUBLIC_URL", "https://console.example.com/")
    with pytest.raises(ValueError, match="requires CONSOLE_OAUTH_CLIENT_ID"):
        create_app(ConsoleSettings(host=ANYWHERE), sandbox.session(names.SUPERVISOR))

    monkeypatch.setenv("CONSOLE_PUBLIC_URL", "http://console.example.com")
    handlers = list(logging.getLogger().handlers)
    assert console_main(["--host", ANYWHERE]) == 2
    assert "CONSOLE_PUBLIC_URL must use https" in capsys.readouterr().err
    assert logging.getLogger().handlers == handlers  # a refused start leaves the process's logging alone
    monkeypatch.setenv("CONSOLE_PUBLIC_URL", "https://console.example.com")
    monkeypatch.setenv("CONSOLE_SESSION_SECRET", "short")
    assert console_main(["--host", ANYWHERE]) == 2
    assert "CONSOLE_SESSION_SECRET must be at least 32 characters" in capsys.readouterr().err
    monkeypatch.delenv("CONSOLE_SESSION_SECRET")
    assert console_main(["--host", ANYWHERE]) == 2
    assert "requires CONSOLE_OAUTH_CLIENT_ID" in capsys.readouterr().err

    for name in ("MCP_OAUTH_ISSUER", "MCP_OAUTH_AUDIENCE", "CONSOLE_OAUTH_AUDIENCE", "MCP_OAUTH_SCOPES"):
        monkeypatch.delenv(name)
    assert console_main(["--host", ANYWHERE]) == 2
    assert "requires bearer keys or OAuth" in capsys.readouterr().err


def key_form(console: TestClient) -> dict[str, str]:
    page = console.get("/auth/login")
    token = re.search(r'name="form_token" value="([^"]+)"', page.text)
    assert token is not None
    return {"form_token": token[1], "next": "/incidents"}


def claims_of(cookie_header: str) -> dict[str, Any]:
    value = cookie_header.split(";", 1)[0].split("=", 1)[1]
    claims: dict[str, Any] = jwt.decode(value, options={"verify_signature": False})
    return claims


def test_a_session_cookie_lives_minutes_is_renewed_on_use_and_a_copy_dies_unless_used(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """Nothing is stored on the server (several tasks, read-only on DynamoDB): a cookie lives
    CONSOLE_SESSION_COOKIE_MINUTES, each signed-in request gets a new one up to the session's end, sign-out
    deletes the browser's; a copy stays valid only until its own expiry."""
    console = client(sandbox, settings(incidents, api_key=KEY, session_hours=2, session_cookie_minutes=5))
    signed_in = console.post("/auth/login", data=key_form(console) | {"key": KEY})
    (issued,) = set_cookies(signed_in, SESSION_COOKIE)
    claims = claims_of(issued)
    assert max_age_of(issued) == 300
    assert claims["exp"] - claims["iat"] == 300  # the cookie: five minutes
    assert 7190 <= claims["end"] - claims["iat"] <= 7200  # the session: two hours
    copied = console.cookies[SESSION_COOKIE]

    used = console.get("/incidents", headers=HTML)
    assert used.status_code == 200
    (renewed,) = set_cookies(used, SESSION_COOKIE)
    assert max_age_of(renewed) == 300
    assert claims_of(renewed)["end"] == claims["end"]  # renewing never lengthens the session

    out = console.post("/auth/logout")
    (cleared,) = set_cookies(out, SESSION_COOKIE)
    assert cleared.startswith(f"{SESSION_COOKIE}=;")
    assert "Max-Age=0" in cleared
    assert console.get("/incidents", headers=HTML).status_code == 303

    def status(cookie: str) -> int:
        console.cookies.clear()  # only the cookie given
        return console.get("/incidents", headers=HTML | {"Cookie": f"{SESSION_COOKIE}={cookie}"}).status_code

    assert status(copied) == 200  # what a cookie-only design cannot prevent: a copy, for its minutes
    now = time.time()
    end = int(now) + 3600
    identity = Identity("key", "key", end)

    def made(seconds_ago: float, cookie_end: int = end) -> str:
        maker = Cookies(
            SECRET.encode(), secure=False, keys=[KEY], cookie_seconds=300, clock=lambda: now - seconds_ago
        )
        return maker.session(Identity("key", "key", cookie_end), key=KEY)

    assert status(made(360)) == 303  # copied six minutes ago and left: dead, an hour before the session ends
    console.cookies.clear()
    kept = console.get("/incidents", headers=HTML | {"Cookie": f"{SESSION_COOKIE}={made(240)}"})
    assert kept.status_code == 200  # four minutes old: still alive, and renewed for five more
    (again,) = set_cookies(kept, SESSION_COOKIE)
    assert claims_of(again)["end"] == identity.expires_at
    assert 299 <= claims_of(again)["exp"] - now <= 301

    console.cookies.clear()
    ending = console.get(
        "/incidents", headers=HTML | {"Cookie": f"{SESSION_COOKIE}={made(0, int(now) + 60)}"}
    )
    (last,) = set_cookies(ending, SESSION_COOKIE)
    assert max_age_of(last) <= 60  # never past the session's end
    assert claims_of(last)["exp"] == claims_of(last)["end"]
    assert status(made(0, int(now) - 1)) == 303  # the session is over


def test_wrong_keys_are_throttled_per_client_at_the_form_and_as_bearer_keys(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    app = create_app(
        settings(incidents, api_key=KEY, sign_in_failures_per_minute=2), sandbox.session(names.SUPERVISOR)
    )
    guesser = TestClient(app, base_url=PUBLIC, client=("203.0.113.9", 40000), follow_redirects=False)
    statuses = [
        guesser.post("/auth/login", data=key_form(guesser) | {"key": f"guess-{n}"}).status_code
        for n in range(20)
    ]
    assert statuses[:2] == [401, 401]
    assert set(statuses[2:]) == {429}

    right = guesser.post("/auth/login", data=key_form(guesser) | {"key": KEY})
    assert right.status_code == 429  # not even compared: the answer says nothing about the key
    assert "Too many wrong keys from your address" in right.text
    assert 0 < int(right.headers["retry-after"]) <= 30
    assert not set_cookies(right, SESSION_COOKIE)
    bearer = guesser.get("/incidents", headers={"Authorization": f"Bearer {KEY}"})
    assert bearer.status_code == 429  # one allowance for the form and for scripts

    other = TestClient(app, base_url=PUBLIC, client=("198.51.100.4", 40000), follow_redirects=False)
    assert other.post("/auth/login", data=key_form(other) | {"key": KEY}).status_code == 303
    assert other.get("/incidents", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_behind_trusted_proxies_the_console_counts_the_forwarded_client(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    values = {"api_key": KEY, "sign_in_failures_per_minute": 1, "trusted_proxies": "10.0.0.0/8"}
    app = create_app(settings(incidents, **values), sandbox.session(names.SUPERVISOR))
    balancer = TestClient(app, base_url=PUBLIC, client=("10.0.3.7", 40000), follow_redirects=False)

    def bearer(forwarded_for: str, key: str = "not-the-key") -> int:
        headers = {"Authorization": f"Bearer {key}", "X-Forwarded-For": forwarded_for}
        return balancer.get("/incidents", headers=headers).status_code

    assert bearer("203.0.113.9") == 401
    assert bearer("198.51.100.7, 203.0.113.9") == 429  # the left of the header is the client's own writing
    assert bearer("198.51.100.4", KEY) == 200  # another client behind the same balancer
    https = balancer.post(
        "/auth/login",
        data=key_form(balancer) | {"key": KEY},
        headers={"X-Forwarded-For": "198.51.100.4", "X-Forwarded-Proto": "https"},
    )
    assert "Secure" in set_cookies(https, SESSION_COOKIE)[0]  # TLS ended at the balancer


def test_keys_shorter_than_32_characters_are_refused_off_loopback_only(
    sandbox: Sandbox,
    incidents: IncidentStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    short = settings(incidents, api_key=f"{KEY}, x")
    with pytest.raises(
        ValueError, match="refuses bearer keys shorter than 32 characters \\(key 2 of 2 has 1\\)"
    ):
        create_app(short, sandbox.session(names.SUPERVISOR))
    for name in ("MCP_OAUTH_ISSUER", "MCP_OAUTH_AUDIENCE", "CONSOLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", sandbox.region)  # configured, so the key check below is reached
    monkeypatch.setenv("MCP_API_KEY", "abc123")
    assert console_main(["--host", ANYWHERE]) == 2
    error = capsys.readouterr().err
    assert "incident-console on 0.0.0.0 (not loopback) refuses bearer keys shorter than 32" in error
    assert "secrets.token_urlsafe(32)" in error
    assert "abc123" not in error
    loopback = client(sandbox, settings(incidents, api_key="x", host="127.0.0.1"))
    assert loopback.get("/incidents").status_code == 200
