"""incident-console in a real browser: Debian's headless Chromium, driven by Playwright, opens the list
and the page of a real drill-style incident (fault, alarm, SNS, pipeline), finds the timeline, the
highlighted evidence and the commands, sees no console errors, and shows a hostile log line as text;
signed in, every page carries the security headers and keeps its Content-Security-Policy.
Screenshots are saved under build/screenshots/ (CI keeps them as artefacts)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from playwright.sync_api import BrowserContext, ConsoleMessage, sync_playwright

from chaos.loopback import served_in_thread
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from console.app import create_app
from console.settings import ConsoleSettings
from supervisor.incident.store import IncidentStore
from tests.console_support import ago, assert_page_headers, claimed, local_issuer, served_knowing_its_url

CHROMIUM = "/usr/bin/chromium"
KEY = "console-key-0123456789-abcdefghijklmnop"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "build" / "screenshots"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium(profile: Path) -> Iterator[BrowserContext]:
    """Debian's Chromium under Playwright, with a fresh profile. Started after the incident is made:
    the sync API keeps an event loop in this thread, and the pipeline runs its own."""
    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: `make unit` installs Debian's chromium"
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def test_the_console_in_chromium_shows_a_drill_incident(
    sandbox: Sandbox,
    diagnosed_incident: str,
    incidents: IncidentStore,
    tmp_path: Path,
) -> None:
    incident_id = diagnosed_incident
    settings = ConsoleSettings(
        state_table=incidents.state_table, context_table=str(incidents.context_table), api_key=None
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []

    def console_message(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"{message.type}: {message.text}")

    app = create_app(settings, sandbox.session(names.SUPERVISOR))
    with served_in_thread(app) as url, chromium(tmp_path / "profile") as browser:
        page = browser.new_page()
        page.on("console", console_message)
        page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))

        page.goto(f"{url}/incidents")
        rows = page.locator("tr.incident-row")
        assert rows.count() == 1
        assert "permission_loss" in rows.first.inner_text()
        page.screenshot(path=str(SCREENSHOTS / "incident-list.png"), full_page=True)

        rows.first.locator("a").click()
        page.wait_for_url(f"{url}/incidents/{quote(incident_id, safe='')}")
        context = incidents.get_context(incident_id)
        assert context is not None
        diagnosis = json.loads(context["diagnosis"]["S"])
        alarm = 0 if any(e["kind"] == "alarm" for e in diagnosis["timeline"]) else 1
        entries = page.locator("svg.timeline g.tl-entry")
        assert entries.count() == len(diagnosis["timeline"]) + alarm + 1  # + the diagnosis itself
        kinds = [entries.nth(i).get_attribute("data-kind") for i in range(entries.count())]
        assert kinds[0] == "change"
        assert kinds[-1] == "diagnosis"

        marks = page.locator("#evidence pre.response mark")
        assert marks.count() >= len(diagnosis["evidence"])
        assert marks.first.is_visible()
        commands = page.locator("#remediation .command code")
        expected = [s["command"] for s in diagnosis["remediation_plan"] if s["command"]]
        assert [commands.nth(i).inner_text() for i in range(commands.count())] == expected
        page.screenshot(path=str(SCREENSHOTS / "incident-page.png"), full_page=True)
        page.screenshot(path=str(SCREENSHOTS / "incident-page-top.png"))  # the README's picture

        # The hostile log line, in the logs tool's response an evidence pointer quotes: shown as text, and
        # nothing of it ran or became an element.
        hostile = page.locator("#evidence pre.response", has_text="window.__pwned = 1").first
        assert "<script>window.__pwned = 1</script><img src=x" in hostile.inner_text()
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main script, main img").count() == 0
        hostile.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "incident-hostile-line.png"))
        page.locator("#reasoning summary").click()  # the chain, collapsed until asked for
        assert page.locator("#reasoning .message").first.is_visible()

        page.goto(f"{url}/drill")
        assert page.locator("h1").inner_text() == "Last drill"
        page.close()
    assert problems == []


def test_chromium_signs_in_through_the_issuer_and_lands_on_the_list(
    sandbox: Sandbox, incidents: IncidentStore, tmp_path: Path
) -> None:
    """A console configured as off loopback in OAuth mode: Chromium asks for the list, is sent to the
    issuer (which approves at once), comes back to /auth/callback and lands on the list, signed in."""
    incident_id = claimed(incidents, "fn-oauth-browser", ago(30), "DIAGNOSED")
    with local_issuer("incident-console") as issuer:
        issuer.grant_claims = {"aud": "https://mcp.example.com"}

        def make(url: str) -> Any:
            settings = ConsoleSettings(
                host="0.0.0.0",  # noqa: S104 - only the settings say so: served on loopback below
                state_table=incidents.state_table,
                context_table=str(incidents.context_table),
                api_key=None,
                oauth_issuer=issuer.issuer,
                oauth_audience="https://mcp.example.com",
                oauth_scopes="incident:read",
                oauth_client_id="incident-console",
                public_url=url,
            )
            return create_app(settings, sandbox.session(names.SUPERVISOR))

        with served_knowing_its_url(make) as url, chromium(tmp_path / "profile") as browser:
            page = browser.new_page()
            visited: list[str] = []
            page.on(
                "request",
                lambda request: visited.append(request.url) if request.is_navigation_request() else None,
            )
            page.goto(f"{url}/incidents")
            page.wait_for_url(f"{url}/incidents")
            assert [urlsplit(u).path for u in visited] == [
                "/incidents",
                "/auth/login",
                "/authorize",
                "/auth/callback",
                "/incidents",
            ]
            assert urlsplit(visited[2]).netloc == urlsplit(issuer.issuer).netloc
            assert page.locator("h1").inner_text() == "Incidents"
            assert incident_id in page.locator("tr.incident-row").first.inner_text()
            assert "signed in as user-1" in page.locator("header").inner_text()
            (session,) = [c for c in browser.cookies() if c["name"] == "console_session"]
            assert session["httpOnly"]
            assert session["sameSite"] == "Lax"
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "signed-in-list.png"))
            page.close()


def test_chromium_signed_in_with_a_key_gets_pages_with_the_security_headers(
    sandbox: Sandbox, incidents: IncidentStore, tmp_path: Path
) -> None:
    """Off loopback with keys: Chromium signs in through the key form, and every page it is then shown
    carries the security headers, whose Content-Security-Policy the pages keep (no violation reported)."""
    incident_id = claimed(incidents, "fn-headers-browser", ago(30), "DIAGNOSED")
    problems: list[str] = []

    def make(url: str) -> Any:
        settings = ConsoleSettings(
            host="0.0.0.0",  # noqa: S104 - only the settings say so: served on loopback below
            state_table=incidents.state_table,
            context_table=str(incidents.context_table),
            api_key=KEY,
            public_url=url,
        )
        return create_app(settings, sandbox.session(names.SUPERVISOR))

    with served_knowing_its_url(make) as url, chromium(tmp_path / "profile") as browser:
        page = browser.new_page()
        page.on(
            "console",
            lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
        )
        page.goto(f"{url}/incidents")
        page.wait_for_url(f"{url}/auth/login?next=%2Fincidents")
        page.fill("#key", KEY)
        with page.expect_navigation():
            page.click("button[type=submit]")
        assert page.locator("h1").inner_text() == "Incidents"
        for path in ("/incidents", f"/incidents/{quote(incident_id, safe='')}", "/fleet", "/drill"):
            response = page.goto(f"{url}{path}")
            assert response is not None
            assert response.status == 200, path
            assert_page_headers(response.headers)
        assert page.locator("#remediation, h1").first.is_visible()
        page.close()
    assert problems == []  # a Content-Security-Policy violation is reported here
