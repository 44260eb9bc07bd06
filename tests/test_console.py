"""incident-console over the sandbox's incident tables, through Starlette's TestClient: the list (newest
first, filters, pages through the status index and never a Scan), a real diagnosed incident's page, the
drill report, escaping of hostile log lines, bearer keys on a non-loopback bind, the Host allow-list
(DNS rebinding), the security headers, and ids, filters and page tokens checked before DynamoDB."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from console.app import create_app
from console.data import encode_token
from console.render import cost, evidence_source, highlighted, timeline, token_usage
from console.settings import ConsoleSettings
from console.templating import environment
from mcp_server.contract.history import FUNCTION_INDEX
from supervisor.diagnosis.evidence import verify
from supervisor.incident.revision import changes
from supervisor.incident.signals import stamp
from supervisor.incident.store import RECENT_INDEX, STATUS_INDEX, IncidentStore, to_item
from supervisor.schemas import Diagnosis, DiagnosisSubmission
from tests.agent_support import (
    CHANGE_TIME,
    FUNCTION,
    POLICY_DELETED,
    POLICY_RESTORED,
    RESPONSES,
    UNDONE_CHANGES,
    submission,
    with_resolved,
)
from tests.console_support import HOSTILE, ago, assert_page_headers, claimed

Calls = list[str]
BASE = "http://127.0.0.1:8088"  # the console's own name: the Host every request of a TestClient carries


def console(
    sandbox: Sandbox, incidents: IncidentStore, calls: Calls | None = None, **settings: Any
) -> TestClient:
    """The console as the supervisor identity, recording every DynamoDB operation it calls."""
    session: boto3.Session = sandbox.session(names.SUPERVISOR)
    if calls is not None:
        session.events.register(
            "before-call.dynamodb", lambda model, **_: calls.append(model.name), unique_id="console-calls"
        )
    values: dict[str, Any] = {
        "state_table": incidents.state_table,
        "context_table": str(incidents.context_table),
        "api_key": None,
    }
    return TestClient(create_app(ConsoleSettings(**(values | settings)), session), base_url=BASE)


def ids(html: str) -> list[str]:
    return re.findall(r'<tr class="incident-row">.*?<a href="/incidents/[^"]+">([^<]+)</a>', html, re.S)


def next_link(html: str) -> str | None:
    match = re.search(r'<a rel="next" href="([^"]+)"', html)
    return match[1].replace("&amp;", "&") if match else None


@pytest.mark.open_incidents
def test_the_list_is_newest_first_one_query_a_page_never_a_scan(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    statuses = ["RECEIVED", "DIAGNOSED", "FAILED", "DIAGNOSED", "ERROR", "DIAGNOSED", "INVESTIGATING"]
    made = [
        claimed(incidents, f"fn-{n}", ago(600 - 60 * n), status) for n, status in enumerate(statuses)
    ]  # the last one made is the newest
    calls: Calls = []
    client = console(sandbox, incidents, calls, page_size=3)

    seen: list[str] = []
    url: str | None = "/incidents"
    pages = 0
    while url is not None:
        response = client.get(url)
        assert response.status_code == 200
        seen += ids(response.text)
        url = next_link(response.text)
        pages += 1
    assert seen == list(reversed(made))
    assert pages == 3
    assert calls == ["Query"] * pages  # the headline is on the state item: no GetItem per row


@pytest.mark.open_incidents
def test_the_list_filters_by_status_function_and_time(sandbox: Sandbox, incidents: IncidentStore) -> None:
    old = claimed(incidents, "orders-api", ago(3 * 3600), "FAILED")
    failed = claimed(incidents, "orders-api", ago(120), "FAILED")
    received = claimed(incidents, "data-processor", ago(60))
    client = console(sandbox, incidents)

    assert ids(client.get("/incidents?status=FAILED").text) == [failed, old]
    assert ids(client.get("/incidents?function=data-processor").text) == [received]
    assert ids(client.get("/incidents?since=1h").text) == [received, failed]
    assert ids(client.get("/incidents?status=FAILED&function=orders-api&since=1h").text) == [failed]
    page = client.get("/incidents")
    assert '<meta http-equiv="refresh"' in page.text  # an open incident is on it
    assert '<meta http-equiv="refresh"' not in client.get("/incidents?status=FAILED").text
    fixing = claimed(incidents, "report-builder", ago(30), "DIAGNOSED")  # then a fix applied: in flight
    for source, target in (("DIAGNOSED", "PLANNING"), ("PLANNING", "AWAITING_APPROVAL")):
        incidents.transition(fixing, source, target)
    awaiting = "/incidents?status=AWAITING_APPROVAL"
    assert '<meta http-equiv="refresh"' not in client.get(awaiting).text  # a person's step: no reload
    incidents.transition(fixing, "AWAITING_APPROVAL", "APPLYING")
    assert '<meta http-equiv="refresh"' in client.get("/incidents?status=APPLYING").text
    assert client.get("/incidents?status=BOGUS").status_code == 400
    assert client.get("/incidents?next=not-a-token").status_code == 400
    key = {"incident_id": {"S": failed}, "status": {"S": "FAILED"}, "updated_at": {"S": "2026"}}
    foreign = encode_token(STATUS_INDEX, key)
    assert client.get(f"/incidents?status=FAILED&next={foreign}").status_code == 200
    assert client.get(f"/incidents?function=orders-api&next={foreign}").status_code == 400
    assert client.get(f"/incidents?next={foreign}").status_code == 400
    assert client.get("/incidents/no-such-incident").status_code == 404


@pytest.mark.open_incidents
def test_a_filtered_list_pages_over_what_the_filter_drops(sandbox: Sandbox, incidents: IncidentStore) -> None:
    """A function's failed incidents among its others and other functions': each page is full, in order,
    and the last one says it is the end."""
    wanted = []
    for n in range(12):
        status = "FAILED" if n % 3 == 0 else "DIAGNOSED"
        made = claimed(incidents, "orders-api", ago(900 - 60 * n), status)
        claimed(incidents, "data-processor", ago(890 - 60 * n), "FAILED")
        if status == "FAILED":
            wanted.append(made)
    calls: Calls = []
    client = console(sandbox, incidents, calls, page_size=2)

    first = client.get("/incidents?function=orders-api&status=FAILED").text
    assert ids(first) == wanted[::-1][:2]
    second_url = next_link(first)
    assert second_url is not None
    second = client.get(second_url).text
    assert ids(second) == wanted[::-1][2:]
    assert next_link(second) is None
    assert "Scan" not in calls


def test_a_diagnosed_incident_page_shows_its_evidence_commands_and_hostile_lines_as_text(
    sandbox: Sandbox,
    diagnosed_incident: str,
    incidents: IncidentStore,
) -> None:
    incident_id = diagnosed_incident
    context = incidents.get_context(incident_id)
    assert context is not None
    diagnosis = json.loads(context["diagnosis"]["S"])
    client = console(sandbox, incidents)

    calls: Calls = []
    listing = console(sandbox, incidents, calls).get("/incidents").text
    assert ids(listing) == [incident_id]
    assert calls == ["Query"]  # the row's headline came with the state item
    row = re.search(r'<tr class="incident-row">(.*?)</tr>', listing, re.S)
    assert row is not None
    cells = [
        re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)
    ]
    assert cells[3] == f"{names.ACCOUNT_ID} / {sandbox.region}"  # from the alarm's ARN
    assert cells[4:7] == [
        ", ".join(diagnosis["fault_types"]),
        diagnosis["severity"],
        f"{diagnosis['confidence']:.2f}",
    ]

    html = client.get(f"/incidents/{quote(incident_id, safe='')}").text
    assert html.count('class="tl-entry') == len(diagnosis["timeline"]) + 1 + (
        not any(e["kind"] == "alarm" for e in diagnosis["timeline"])
    )
    assert html.count("<mark>") >= len(diagnosis["evidence"])
    commands = [s["command"] for s in diagnosis["remediation_plan"] if s["command"]]
    assert commands
    for command in commands:
        assert f"<code>{command}</code>" in html.replace("&#39;", "'").replace("&#34;", '"')
    assert html.count('<button type="button" class="copy">') == len(commands)
    assert context["replay_hash"]["S"] in html
    assert '<details id="reasoning">' in html  # the chain, collapsed
    # The hostile log line reached the tool responses and is shown as text, never as markup.
    assert "window.__pwned" in html
    assert HOSTILE not in html
    assert "<script>window" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html


def _resolved_diagnosis(event_name: str, reason: str) -> Diagnosis:
    """The canned throttling diagnosis with a resolved permission_loss, verified against the canned
    answers, then given the event name and reason to show (what a model could write there)."""
    payload = with_resolved(submission())
    responses = {tool: [json.loads(answer)] for tool, answer in RESPONSES.items()}
    responses["get_recent_changes"] = [UNDONE_CHANGES]
    accepted = DiagnosisSubmission.model_validate(payload)
    verification = verify(accepted, responses, 0, FUNCTION)
    assert verification.passed
    (resolved,) = accepted.resolved
    shown = resolved.model_copy(
        update={
            "reason": reason,
            "caused_by": resolved.caused_by.model_copy(update={"event_name": event_name}),
        }
    )
    return Diagnosis(**accepted.model_dump(exclude={"resolved"}), resolved=[shown], verification=verification)


def test_a_resolved_fault_is_shown_as_text_with_its_changes_on_the_timeline(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    incident_id = claimed(incidents, "fn-resolved", ago(30), "DIAGNOSED")
    name, reason = f"DeleteRolePolicy{HOSTILE}", f"put back \u202e{HOSTILE}"
    diagnosis = _resolved_diagnosis(name, reason)
    incidents.put_context(
        to_item(
            {
                "incident_id": incident_id,
                "recorded_at": ago(20).isoformat(),
                "model": "rules",
                "diagnosis": diagnosis.model_dump_json(),
            }
        )
    )
    html = console(sandbox, incidents).get(f"/incidents/{quote(incident_id, safe='')}").text

    shown_reason = escape(reason.replace("\u202e", "[U+202E]"))
    assert (
        '<p class="resolved">Resolved: <strong>permission_loss</strong> — caused by '
        f"<code>{escape(name)}</code> at {POLICY_DELETED}, undone by <code>PutRolePolicy</code> at "
        f"{POLICY_RESTORED}: {shown_reason} "
        '<span class="basis">(evidence #4)</span></p>'
    ) in html
    assert HOSTILE not in html
    assert "<script>window" not in html
    assert "\u202e" not in html
    marks = re.findall(r'<g class="tl-entry tl-(\w+)".*?<title>(.*?)</title>', html, re.S)
    assert marks[:2] == [
        ("change", f"{POLICY_DELETED}: {escape(name)} caused permission_loss (resolved)"),
        ("change", f"{POLICY_RESTORED}: PutRolePolicy undid permission_loss (resolved)"),
    ]

    older = claimed(incidents, "fn-stored-before", ago(30), "DIAGNOSED")  # before resolved faults existed
    stored = {
        key: value for key, value in json.loads(diagnosis.model_dump_json()).items() if key != "resolved"
    }
    incidents.put_context(to_item({"incident_id": older, "model": "rules", "diagnosis": json.dumps(stored)}))
    page = console(sandbox, incidents).get(f"/incidents/{quote(older, safe='')}")
    assert page.status_code == 200
    assert 'class="resolved"' not in page.text
    assert "Reserved concurrency 0 throttles every invocation." in page.text


def test_a_resolved_change_already_on_the_timeline_is_not_charted_twice() -> None:
    diagnosis = json.loads(_resolved_diagnosis("DeleteRolePolicy", "put back").model_dump_json())
    entry = {
        "time": "2026-11-21T05:40:00-04:00",
        "kind": "change",
        "description": "policy deleted",
        "evidence": [2],
    }
    diagnosis["timeline"] = [entry]  # DeleteRolePolicy's instant, written with another offset
    assert [(m.kind, m.description) for m in timeline(diagnosis, {}, None)] == [
        ("change", "policy deleted"),
        ("change", "PutRolePolicy undid permission_loss (resolved)"),
    ]
    assert [m.description for m in timeline({**diagnosis, "resolved": []}, {}, None)] == ["policy deleted"]
    stored_before = {"timeline": [entry]}  # a diagnosis stored before resolved faults existed
    assert [m.description for m in timeline(stored_before, {}, None)] == ["policy deleted"]


def test_the_drill_page_is_the_scorecard_linking_each_scenario_to_its_incidents(
    sandbox: Sandbox, incidents: IncidentStore, tmp_path: Path
) -> None:
    report = {
        "started_at": "2026-01-01T00:00:00Z",
        "model": "rules",
        "seconds": 12.5,
        "passed": True,
        "scenarios": [
            {
                "name": "revoke-s3",
                "title": "S3 access revoked",
                "injected": ["<b>revoke</b>"],
                "expected": "permission_loss",
                "outcome": "permission_loss",
                "passed": True,
                "seconds": 4.2,
                "incidents": [
                    {
                        "incident_id": "data-processor@2026-01-01T00:00:01Z",
                        "status": "DIAGNOSED",
                        "pointers_found": 4,
                        "pointers": 5,
                        "llm_calls": 2,
                        "tokens": 0,
                    }
                ],
            },
            {"name": "healthy", "title": "no fault", "injected": [], "expected": "no alarm",
             "outcome": "no alarm", "passed": True, "seconds": 2.0, "incidents": []},
        ],
    }  # fmt: skip
    path = tmp_path / "drill-report.json"
    path.write_text(json.dumps(report))
    html = console(sandbox, incidents, drill_report=path).get("/drill").text
    assert html.count('<tr class="scenario">') == 2
    assert 'href="/incidents/data-processor%402026-01-01T00%3A00%3A01Z"' in html
    assert "4/5" in html  # what the judge re-found, of all pointers
    assert "&lt;b&gt;revoke&lt;/b&gt;" in html
    missing = console(sandbox, incidents, drill_report=tmp_path / "none.json").get("/drill")
    assert "make drill" in missing.text


def test_a_non_loopback_bind_requires_the_mcp_servers_bearer_keys(
    sandbox: Sandbox, incidents: IncidentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_API_KEY", raising=False)
    monkeypatch.delenv("CONSOLE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="requires bearer keys"):
        console(sandbox, incidents, host="0.0.0.0")  # noqa: S104

    one, two = "k-one-" + "1" * 32, "k-two-" + "2" * 32
    monkeypatch.setenv("MCP_API_KEY", f"{one}, {two}")
    settings = ConsoleSettings(host="0.0.0.0", state_table=incidents.state_table)  # noqa: S104
    assert settings.api_keys() == [one, two]  # the MCP server's variable, read the same way
    client = TestClient(create_app(settings, sandbox.session(names.SUPERVISOR)), base_url=BASE)
    assert client.get("/incidents").status_code == 401
    assert client.get("/incidents", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/incidents", headers={"Authorization": f"Bearer {two}"}).status_code == 200
    assert client.get("/healthz").status_code == 200

    loopback = console(sandbox, incidents)  # 127.0.0.1: no key needed
    assert loopback.get("/incidents").status_code == 200


CONFIG_ANSWER = {
    "Aliases": [{"FunctionVersion": "2", "Name": "live"}],
    "CodeSha256": "a2b2c2",
    "Timeout": 2,
    "Versions": [{"Version": "2"}],
}


def marked(html: str) -> list[str]:
    return re.findall(r"<mark>(.*?)</mark>", str(html), re.S)


def test_the_highlight_marks_the_field_the_pointer_names_not_every_equal_text() -> None:
    html = highlighted(CONFIG_ANSWER, "Aliases.0.FunctionVersion", "2")

    assert marked(html) == ["&#34;2&#34;"]  # one mark, the alias's version, quotes included
    line = next(line for line in str(html).splitlines() if "<mark>" in line)
    assert line.strip().startswith("&#34;FunctionVersion&#34;: <mark>")
    unmarked = re.sub(r"</?mark>", "", str(html))  # the rest is the answer as it was, unmarked
    assert unmarked == escape(json.dumps(CONFIG_ANSWER, indent=2, ensure_ascii=False, sort_keys=True))


def test_a_quoted_part_of_a_log_line_is_marked_in_that_line_only() -> None:
    logs = {"events": [{"message": "AccessDenied on A"}, {"message": "then AccessDenied on B <b>"}]}

    html = highlighted(logs, "events.1.message", "AccessDenied")

    assert marked(html) == ["AccessDenied"]
    assert "then <mark>AccessDenied</mark> on B &lt;b&gt;" in html
    whole = highlighted(
        {"configuration": {"Timeout": 3, "Memory": {"Size": 128}}}, "configuration.Memory", "{}"
    )
    assert marked(whole) == ["{\n      &#34;Size&#34;: 128\n    }"]  # a whole object, indented where it sits
    assert marked(highlighted(logs, "events.7.message", "AccessDenied")) == []  # no such field: no mark


def test_the_source_of_a_pointer_is_the_answer_where_its_field_holds_the_quote() -> None:
    results = [
        {"tool": "get_lambda_config", "result": CONFIG_ANSWER | {"Aliases": []}},
        {"tool": "get_lambda_config", "result": CONFIG_ANSWER},
    ]
    pointer = {"tool": "get_lambda_config", "field": "Aliases.0.FunctionVersion", "value": "2"}
    assert evidence_source(pointer, results) is results[1]


def test_bidirectional_controls_are_shown_not_obeyed_on_every_page() -> None:
    spoof = "invoice\u202efdp.exe \u2067x\u2069 \x1b[31m"
    page = (
        environment()
        .from_string("<p>{{ text }}</p><pre>{{ data|pretty }}</pre>")
        .render(text=spoof, data={"line": spoof})
    )
    assert not any(c in page for c in "\u202e\u2067\u2069\x1b")
    assert page.count("invoice[U+202E]fdp.exe [U+2067]x[U+2069] ") == 2
    assert "[U+001B][31m" in page  # JSON writes it as \\u001b already
    evidence = str(highlighted({"events": [{"message": spoof}]}, "events.0.message", "invoice"))
    assert "\u202e" not in evidence
    assert "[U+202E]" in evidence


KEY = "console-key-0123456789-abcdefghijklmnop"
BEARER = {"Authorization": f"Bearer {KEY}"}
REBOUND = "evil.example"  # a page's own domain, resolving to the console's address (DNS rebinding)


def test_a_page_under_another_host_name_gets_421_and_reads_nothing(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    calls: Calls = []
    client = console(sandbox, incidents, calls)
    paths = [
        "/incidents",
        "/incidents/fn%402026-01-01T00%3A00%3A00.000Z",
        "/drill",
        "/",
        "/static/console.css",
    ]
    for path in paths:
        for host in (REBOUND, f"{REBOUND}:8088"):
            refused = client.get(path, headers={"Host": host})
            assert refused.status_code == 421, path
            assert "window" not in refused.text
    assert client.post("/incidents", headers={"Origin": f"http://{REBOUND}"}).status_code == 403
    assert calls == []
    for host in ("127.0.0.1:8088", "localhost:8088", "[::1]:8088", "localhost"):
        assert client.get("/incidents", headers={"Host": host}).status_code == 200, host
    assert client.get("/healthz", headers={"Host": "10.0.3.7:8088"}).status_code == 200  # a load balancer


def test_off_loopback_the_public_url_and_the_configured_hosts_are_the_consoles_names(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    client = console(
        sandbox,
        incidents,
        host="0.0.0.0",  # noqa: S104 - only the settings say so: a TestClient binds nothing
        api_key=KEY,
        public_url="https://console.example.com",
        allowed_hosts="ops.example.net, intranet.example.net:8443",
    )
    for host in (
        "console.example.com",
        "ops.example.net:8088",
        "intranet.example.net:8443",
        "127.0.0.1:8088",
    ):
        assert client.get("/incidents", headers=BEARER | {"Host": host}).status_code == 200, host
    for host in (REBOUND, "intranet.example.net:8444", "console.example.com.evil.example"):
        assert client.get("/incidents", headers=BEARER | {"Host": host}).status_code == 421, host


def test_signed_in_pages_carry_the_security_headers(sandbox: Sandbox, incidents: IncidentStore) -> None:
    incident_id = claimed(incidents, "fn-headers", ago(30), "DIAGNOSED")
    client = console(sandbox, incidents, host="0.0.0.0", api_key=KEY)  # noqa: S104 - see above
    for path in ("/incidents", f"/incidents/{quote(incident_id, safe='')}", "/drill", "/incidents/none"):
        response = client.get(path, headers=BEARER)
        assert response.status_code in (200, 404), path
        assert_page_headers(response.headers)


@pytest.mark.parametrize(
    "path",
    [
        "/incidents/",
        "/incidents/%20",
        "/incidents/fn%0A%402026-01-01T00%3A00%3A00.000Z",
        "/incidents/" + "f" * 3000 + "%402026-01-01T00%3A00%3A00.000Z",
        "/incidents/no-such-incident",
        "/incidents/fn%402026-01-01",
    ],
)
def test_an_id_that_cannot_be_an_incident_is_a_404_page_without_a_dynamodb_call(
    sandbox: Sandbox, incidents: IncidentStore, path: str
) -> None:
    calls: Calls = []
    response = console(sandbox, incidents, calls).get(path)
    assert response.status_code == 404
    assert "No incident" in response.text or "%0A" in path  # a newline: no route's path, Starlette's 404
    assert calls == []


def _token(index: str, **values: str) -> str:
    return encode_token(index, {name: {"S": value} for name, value in values.items()})


STAMP = "2026-01-01T00:00:00.000Z"
INCIDENT = f"fn@{STAMP}"
BAD_LISTS = {
    "empty key values": f"?next={_token(RECENT_INDEX, incident_id='', kind='', updated_at='')}",
    "an id that is no incident's": "?next="
    + _token(RECENT_INDEX, incident_id="x" * 5000, kind="incident", updated_at=STAMP),
    "another kind": f"?next={_token(RECENT_INDEX, incident_id=INCIDENT, kind='pointer', updated_at=STAMP)}",
    "a time too long for a key": "?next="
    + _token(RECENT_INDEX, incident_id=INCIDENT, kind="incident", updated_at="2" * 2000),
    "another status": "?status=FAILED&next="
    + _token(STATUS_INDEX, incident_id=INCIDENT, status="DIAGNOSED", updated_at=STAMP),
    "another function": "?function=fn-a&next="
    + _token(FUNCTION_INDEX, incident_id=INCIDENT, function_name="fn-b", updated_at=STAMP),
    "a function name no function has": "?function=" + quote("no such function!"),
    "a long function name": "?function=" + "f" * 3000,
}  # fmt: skip


@pytest.mark.parametrize("query", list(BAD_LISTS.values()), ids=list(BAD_LISTS))
def test_filters_and_page_tokens_are_checked_before_dynamodb(
    sandbox: Sandbox, incidents: IncidentStore, query: str
) -> None:
    calls: Calls = []
    response = console(sandbox, incidents, calls).get(f"/incidents{query}")
    assert response.status_code == 400
    assert calls == []


def test_a_token_from_before_the_time_window_ends_the_list(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """A page token older than the window (the window moved on while the list was open): no more rows."""
    calls: Calls = []
    old = _token(RECENT_INDEX, incident_id=INCIDENT, kind="incident", updated_at=STAMP)
    response = console(sandbox, incidents, calls).get(f"/incidents?since=1h&next={old}")
    assert response.status_code == 200
    assert ids(response.text) == []
    assert calls == []


def _staged(incidents: IncidentStore, function: str, **stage: object) -> str:
    """A DIAGNOSED incident of ``function`` whose item records ``stage`` (final, recheck_at, ...)."""
    incident_id = claimed(incidents, function, ago(120), "INVESTIGATING")
    headline: dict[str, object] = {"fault_types": ["throttling"], "severity": "high", "confidence": 0.9}
    incidents.transition(incident_id, "INVESTIGATING", "DIAGNOSED", headline=headline | stage)
    return incident_id


def test_a_provisional_incident_is_marked_in_the_list_and_a_rechecked_one_shows_both_diagnoses(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    due = stamp(ago(-600))
    provisional_id = _staged(incidents, "fn-provisional", final=False, recheck_at=due)
    rechecked_id = _staged(incidents, "fn-rechecked", final=True, recheck_at=stamp(ago(60)))
    final = json.loads(_resolved_diagnosis("DeleteRolePolicy", "put back").model_dump_json())
    final["trigger"] = {"event_name": "PutFunctionConcurrency20171031", "identity": None, "time": CHANGE_TIME}
    provisional = final | {"trigger": None, "fault_types": ["unknown"], "confidence": 0.2}
    provisional["gaps"] = [{"source": "get_recent_changes", "reason": "provisional: the window is open"}]
    incidents.put_context(
        to_item(
            {
                "incident_id": rechecked_id,
                "model": "rules",
                "diagnosis": json.dumps(final),
                "provisional_diagnosis": json.dumps(provisional),
                "provisional_recorded_at": stamp(ago(110)),
                "recheck_changes": json.dumps(changes(provisional, final)),
            }
        )
    )
    client = console(sandbox, incidents)

    rows = re.findall(r'<tr class="incident-row">(.*?)</tr>', client.get("/incidents").text, re.S)
    marked = {ids(f'<tr class="incident-row">{row}</tr>')[0]: "stage-provisional" in row for row in rows}
    assert marked == {provisional_id: True, rechecked_id: False}
    page = client.get(f"/incidents/{quote(provisional_id, safe='')}").text
    assert (
        f"provisional: made before CloudTrail could have delivered every change; re-checked at {due}" in page
    )

    html = client.get(f"/incidents/{quote(rechecked_id, safe='')}").text
    assert '<span class="stage stage-final">final</span>' in html
    final_section, provisional_section = html.split('<section id="provisional">')
    assert "Reserved concurrency 0 throttles every invocation." in final_section  # the final diagnosis first
    trigger = final["trigger"]
    assert f"<li>trigger found: {trigger['event_name']} at {trigger['time']}</li>" in provisional_section
    assert "<li>fault types: unknown -&gt; throttling</li>" in provisional_section
    assert "Trigger: none found" in provisional_section
    assert "provisional: the window is open" in provisional_section


def test_an_incident_s_cost_bills_each_call_s_cached_input_at_the_cache_s_prices() -> None:
    """Claude Sonnet ($3 in, $15 out a million): 10,000 input tokens, 8,000 read from the prompt cache
    ($0.30 a million), and 1,000 out; an older record without per-call usage is priced from its totals."""
    model = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    call = {
        "prompt_tokens": 10_000,
        "completion_tokens": 1_000,
        "total_tokens": 11_000,
        "cache_read_tokens": 8_000,
    }
    recorded = {"token_usage": json.dumps([call]), "prompt_tokens": 10_000, "completion_tokens": 1_000}
    assert cost(model, token_usage(recorded)) == "$0.0234"  # 2,000 x 3 + 8,000 x 0.3 + 1,000 x 15
    older = {"prompt_tokens": 10_000, "completion_tokens": 1_000}
    assert cost(model, token_usage(older)) == "$0.0450"
    assert cost("ollama:llama3", token_usage(older)) == "n/a (no price known for this model)"
