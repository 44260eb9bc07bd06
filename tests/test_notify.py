"""The notification of an incident's outcome, as formatted: subject, email text, chat JSON, attributes."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics
from pydantic import ValidationError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from executor.settings import ExecutorSettings
from supervisor.incident.notification import NO_CONSOLE, build_notification, cut, redact
from supervisor.incident.notify import (
    CLAIMED_ELSEWHERE,
    NOTIFY_LEASE,
    PUBLISHED,
    SENT_BEFORE,
    Notifier,
    notify_once,
    sns_client,
)
from supervisor.incident.notify_settings import NotificationSettings
from supervisor.incident.revision import changes
from supervisor.incident.stage import NEVER_RAN
from supervisor.incident.store import IncidentStore, dynamodb_client
from supervisor.settings import SupervisorSettings
from tests.pipeline_support import published_notifications, stuck_incident
from watchdog.settings import WatchdogSettings
from watchdog.sweep import STALE_REASON

INCIDENT_ID = "data-processor@2026-11-23T04:49:10.000000Z"
INCIDENT: dict[str, Any] = {
    "incident_id": INCIDENT_ID,
    "function_name": "data-processor",
    "status": "DIAGNOSED",
    "error_type": "Errors",
    "observed_at": "2026-11-23T04:49:10.000000Z",
    "detail": "DB_PASSWORD=from-the-alarm-detail",  # not on the allowlist: never shown
    "mcp_api_key": "sk-not-a-field-the-notification-reads",
}


def _diagnosis(**changes: Any) -> dict[str, Any]:
    diagnosis: dict[str, Any] = {
        "root_cause": "data-processor-role lost its inline policy data-processor-access.",
        "fault_types": ["permission_loss"],
        "affected_resources": ["data-processor", "data-processor-role"],
        "severity": "high",
        "confidence": 0.9,
        "evidence": [
            {
                "tool": "get_recent_logs",
                "field": "events.2.message",
                "value": "[ERROR] AccessDenied when calling GetObject",
                "interpretation": "An invocation failed",
                "supports": None,
            },
            {
                "tool": "get_iam_state",
                "field": "inline_policies",
                "value": "{}",
                "interpretation": "The role has no inline policy",
                "supports": "permission_loss",
            },
        ],
        "remediation_plan": [
            {
                "action": "Put back the inline policy",
                "details": "as it was",
                "evidence_basis": [1],
                "risk_level": "medium",
                "requires_approval": True,
                "command": "aws iam put-role-policy --role-name data-processor-role",
            }
        ],
        "trigger": {
            "event_name": "DeleteRolePolicy",
            "identity": "arn:aws:iam::123456789012:user/operator",
            "time": "2026-11-23T04:49:08.829498+00:00",
            "seconds_before_first_failure": 0.7,
            "evidence": [1],
        },
        "timeline": [
            {
                "time": "2026-11-23T04:49:09.830000+00:00",
                "kind": "first_failure",
                "description": "The first failed invocation",
                "evidence": [0],
            }
        ],
        "gaps": [{"source": "get_function_metrics", "reason": "no datapoints yet", "evidence": []}],
        "verification": {
            "pointers": [{"index": 0, "verified": True}, {"index": 1, "verified": True}],
        },
    }
    return diagnosis | changes


def test_a_diagnosis_gives_subject_email_text_chat_json_and_attributes() -> None:
    notification = build_notification(INCIDENT, _diagnosis(), "https://console.example.com/")

    assert notification.subject == "[DIAGNOSED] data-processor: permission_loss (high)"
    text = notification.text
    for expected in (
        "Root cause\n  data-processor-role lost its inline policy",
        "Trigger\n  DeleteRolePolicy by arn:aws:iam::123456789012:user/operator at "
        "2026-11-23T04:49:08.829498+00:00, 0.7 s before the first failure",
        "First failure\n  2026-11-23T04:49:09.830000+00:00: The first failed invocation",
        "[1] get_iam_state inline_policies = '{}' (verified): The role has no inline policy",
        "$ aws iam put-role-policy --role-name data-processor-role",
        "Gaps\n  - get_function_metrics: no datapoints yet",
        "Console\n  https://console.example.com/incidents/data-processor%40",
        "Confidence:  0.90 (2/2 evidence pointers verified, 0 claim(s) refused)",
    ):
        assert expected in text
    assert text.index("[1] get_iam_state") < text.index("[0] get_recent_logs")  # supporting pointers first

    chat = notification.chat
    assert (chat["version"], chat["source"], chat["content"]["textType"]) == (
        "1.0",
        "custom",
        "client-markdown",
    )
    assert chat["content"]["title"] == notification.subject
    assert chat["content"]["nextSteps"][1] == "$ aws iam put-role-policy --role-name data-processor-role"
    assert chat["metadata"]["threadId"] == INCIDENT_ID
    assert chat["metadata"]["eventType"] == "IncidentDiagnosed"
    assert chat["metadata"]["relatedResources"] == ["data-processor", "data-processor-role"]
    assert chat["metadata"]["additionalContext"] == {  # strings only: the custom notification schema's
        "incident_id": INCIDENT_ID,
        "function_name": "data-processor",
        "status": "DIAGNOSED",
        "stage": "final",  # final at once: no provisional one came before
        "kind": "diagnosis",  # not a fix's notice
        "severity": "high",
        "gaps": "1",
        "console": "https://console.example.com/incidents/data-processor%402026-11-23T04%3A49%3A10.000000Z",
    }
    assert notification.attributes["fault_types"] == {
        "DataType": "String.Array",
        "StringValue": '["permission_loss"]',
    }

    request = notification.publish_arguments("arn:aws:sns:ca-central-1:123456789012:incident-diagnoses")
    message = json.loads(request["Message"])
    assert request["MessageStructure"] == "json"
    assert set(message) == {"default", "email"}  # no "https" key: the chat integration reads "default"
    assert json.loads(message["default"]) == chat
    assert message["email"] == text


@pytest.mark.parametrize(
    ("status", "category", "reason", "subject"),
    [
        ("ERROR", "mcp_connection", "MCP server unreachable", "[ERROR] data-processor: mcp_connection"),
        ("FAILED", None, "recursion limit exhausted", "[FAILED] data-processor: no diagnosis"),
        ("FAILED", None, STALE_REASON, "[FAILED] data-processor: no diagnosis"),  # the watchdog's
    ],
)
def test_an_outcome_without_diagnosis_says_why_and_that_there_is_no_console(
    status: str, category: str | None, reason: str, subject: str
) -> None:
    incident = INCIDENT | {"status": status, "error_category": category, "error_reason": reason}
    notification = build_notification(incident, None, None)
    assert notification.subject == subject
    assert f"Why there is no diagnosis\n  {reason}" in notification.text
    assert f"Console\n  {NO_CONSOLE}" in notification.text
    assert (
        notification.chat["metadata"]["eventType"]
        == f"Incident{'Errored' if status == 'ERROR' else 'Failed'}"
    )
    assert notification.attributes["severity"]["StringValue"] == "none"
    assert notification.attributes["fault_types"]["StringValue"] == "[]"


def test_the_subject_stays_under_100_ascii_characters() -> None:
    long_name = "f" * 64  # the longest function name Lambda allows
    diagnosis = _diagnosis(fault_types=["permission_loss", "throttling", "network_block", "timeout"])
    subject = build_notification(INCIDENT | {"function_name": long_name}, diagnosis, None).subject
    assert len(subject) < 100
    assert subject.endswith("...")
    assert subject.isascii()
    assert "\n" not in subject
    unicode_cause = build_notification(
        INCIDENT | {"function_name": "fn\u00e9\nx"}, _diagnosis(), None
    ).subject
    assert unicode_cause.isascii()
    assert "\n" not in unicode_cause


def test_long_fields_are_cut_with_a_visible_marker() -> None:
    assert cut("x" * 50, 50) == "x" * 50
    cut_text = cut("x" * 1000, 100)
    assert len(cut_text) == 100
    assert cut_text.endswith(f"[... {1000 - cut_text.index(' [')} more characters cut]")

    diagnosis = _diagnosis(root_cause="the role " * 500)
    text = build_notification(INCIDENT, diagnosis, None).text
    root = text.split("Root cause\n  ", 1)[1].split("\n", 1)[0]
    assert len(root) == 600
    assert root.endswith("more characters cut]")
    many = _diagnosis(evidence=[_diagnosis()["evidence"][0]] * 12)
    assert "... and 7 more pointers" in build_notification(INCIDENT, many, None).text


def test_no_secret_reaches_any_form_of_the_message() -> None:
    leaky = _diagnosis(
        root_cause="Failed with DB_PASSWORD=hunter2 while using AKIAIOSFODNN7EXAMPLE",
        evidence=[
            {
                "tool": "get_recent_logs",
                "field": "events.0.message",
                "value": 'config {"api_key": "sk-live-123456", "Authorization": "Bearer abcdefgh12345678"}',
                "interpretation": "SECRET_TOKEN: s3cr3t-value printed by the code",
                "supports": None,
            }
        ],
        gaps=[{"source": "get_recent_logs", "reason": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG"}],
    )
    notification = build_notification(INCIDENT, leaky, None)
    published = json.dumps(notification.publish_arguments("arn:aws:sns:ca-central-1:1:t"))
    for secret in (
        "hunter2",
        "AKIAIOSFODNN7EXAMPLE",
        "sk-live-123456",
        "abcdefgh12345678",
        "s3cr3t-value",
        "wJalrXUtnFEMI",
        "from-the-alarm-detail",
        "sk-not-a-field",
    ):
        assert secret not in published
    assert "DB_PASSWORD=[REDACTED:secret]" in notification.text
    assert redact("MY_TOKEN=abc and nothing else") == "MY_TOKEN=[REDACTED:secret] and nothing else"


HOSTILE = (
    "@channel <!channel> <!here|here> <@U024BE7LH> "
    "<https://evil.example|Open in the incident console> [Open](javascript:alert(1)) "
    "admin\u202egnp.exe \u2066isolated\u2069 & done"
)


def test_log_text_reaches_the_chat_inert_and_without_bidirectional_controls() -> None:
    """Slack's markup is &, < and > (mentions, links, commands); Teams reads Markdown links; a bidi control
    reorders what a person reads. Whatever the function logged arrives as text, in every field."""
    hostile = _diagnosis(
        root_cause=f"cause: {HOSTILE}",
        evidence=[_diagnosis()["evidence"][0] | {"value": HOSTILE, "interpretation": HOSTILE}],
        remediation_plan=[_diagnosis()["remediation_plan"][0] | {"action": HOSTILE, "command": HOSTILE}],
        gaps=[{"source": "get_recent_logs", "reason": HOSTILE}],
        affected_resources=[HOSTILE],
    )
    notification = build_notification(INCIDENT, hostile, "https://console.example.com")
    chat = notification.chat
    shown = json.dumps(chat["content"], ensure_ascii=False) + json.dumps(chat["metadata"], ensure_ascii=False)

    for raw in ("<!channel>", "<!here", "<@U024", "<https://evil", "](javascript:", "@channel"):
        assert raw not in shown
    assert not any(control in shown for control in "\u202e\u2066\u2069")
    assert "&lt;!channel&gt;" in chat["content"]["description"]  # shown as typed, never parsed
    assert "&lt;https://evil.example|Open in the incident console&gt;" in chat["content"]["description"]
    assert "[U+202E]" in chat["content"]["description"]
    assert chat["content"]["description"].count("<") == 1  # the console link, the only markup link
    assert chat["content"]["description"].endswith(
        f"<https://console.example.com/incidents/{INCIDENT_ID.replace('@', '%40').replace(':', '%3A')}"
        "|Open in the incident console>"
    )
    assert "\u202e" not in notification.text
    assert "[U+202E]gnp.exe" in notification.text
    assert "<!channel>" in notification.text  # e-mail is plain text: nothing there is markup


RESOLVED: dict[str, Any] = {
    "fault_type": "throttling",
    "reason": "Concurrency is unreserved again; nothing was throttled since.",
    "caused_by": {
        "event_name": "PutFunctionConcurrency20171031",
        "time": "2026-11-23T04:40:00+00:00",
        "evidence": [1],
    },
    "undone_by": {
        "event_name": "DeleteFunctionConcurrency20171031",
        "time": "2026-11-23T04:45:00+00:00",
        "evidence": [1],
    },
    "evidence": [1],
}
RESOLVED_TITLE = "Resolved (undone by a later change; not current)"
RESOLVED_LINE = (
    "- throttling: caused by PutFunctionConcurrency20171031 at 2026-11-23T04:40:00+00:00, undone by "
    "DeleteFunctionConcurrency20171031 at 2026-11-23T04:45:00+00:00. Concurrency is unreserved again; "
    "nothing was throttled since."
)


def test_a_resolved_fault_is_named_with_the_changes_that_caused_and_undid_it() -> None:
    notification = build_notification(INCIDENT, _diagnosis(resolved=[RESOLVED]), None)

    assert (
        "First failure\n  2026-11-23T04:49:09.830000+00:00: The first failed invocation\n\n"
        f"{RESOLVED_TITLE}\n  {RESOLVED_LINE}\n\nTop evidence\n"
    ) in notification.text
    assert (
        f"*{RESOLVED_TITLE}*\n{RESOLVED_LINE}\n\n*Top evidence*"
        in notification.chat["content"]["description"]
    )
    # Not current: neither in the subject nor in what subscription filters match.
    assert notification.subject == "[DIAGNOSED] data-processor: permission_loss (high)"
    assert notification.attributes["fault_types"]["StringValue"] == '["permission_loss"]'
    assert notification.chat["content"]["keywords"] == [
        "DIAGNOSED",
        "data-processor",
        "permission_loss",
        "high",
    ]

    for without in (_diagnosis(), _diagnosis(resolved=[])):  # a stored diagnosis from before has no key
        assert "Resolved" not in build_notification(INCIDENT, without, None).text
    many = build_notification(INCIDENT, _diagnosis(resolved=[RESOLVED] * 7), None).text
    assert many.count(RESOLVED_LINE) == 5
    assert f"{RESOLVED_LINE}\n  ... and 2 more resolved faults\n" in many


HOSTILE_IN_CHAT = (
    "\uff20channel &lt;!channel&gt; &lt;!here|here&gt; &lt;\uff20U024BE7LH&gt; "
    "&lt;https://evil.example|Open in the incident console&gt; [Open] (javascript:alert(1)) "
    "admin[U+202E]gnp.exe [U+2066]isolated[U+2069] &amp; done"
)


def test_a_resolved_faults_text_reaches_the_chat_and_the_email_inert() -> None:
    """The changes' names and the reason are the diagnosis's text (a model may quote a log line there):
    escaped for the chat, controls shown and secrets redacted in every form, as every other field."""
    changed = RESOLVED["caused_by"] | {"event_name": "Put<!here|here>\u202e@channel [x](javascript:y)"}
    reason = f"DB_PASSWORD=hunter2 {HOSTILE}"
    notification = build_notification(
        INCIDENT, _diagnosis(resolved=[RESOLVED | {"caused_by": changed, "reason": reason}]), None
    )

    description = notification.chat["content"]["description"]
    section = description.split(f"*{RESOLVED_TITLE}*\n", 1)[1].split("\n\n", 1)[0]
    assert section == (
        "- throttling: caused by Put&lt;!here|here&gt;[U+202E]\uff20channel [x] (javascript:y) at "
        "2026-11-23T04:40:00+00:00, undone by DeleteFunctionConcurrency20171031 at "
        f"2026-11-23T04:45:00+00:00. DB_PASSWORD=[REDACTED:secret] {HOSTILE_IN_CHAT}"
    )
    assert "<" not in description  # no console link here: no markup at all
    line = notification.text.split(f"{RESOLVED_TITLE}\n  ", 1)[1].split("\n", 1)[0]
    assert line == (
        "- throttling: caused by Put<!here|here>[U+202E]@channel [x](javascript:y) at "
        "2026-11-23T04:40:00+00:00, undone by DeleteFunctionConcurrency20171031 at "
        "2026-11-23T04:45:00+00:00. DB_PASSWORD=[REDACTED:secret] @channel <!channel> <!here|here> "
        "<@U024BE7LH> <https://evil.example|Open in the incident console> [Open](javascript:alert(1)) "
        "admin[U+202E]gnp.exe [U+2066]isolated[U+2069] & done"
    )  # e-mail is plain text: nothing there is markup, but no control reorders it
    assert "hunter2" not in json.dumps(notification.publish_arguments("arn:aws:sns:ca-central-1:1:t"))


def _failed(incidents: IncidentStore, function: str) -> str:
    incident_id = stuck_incident(incidents, minutes_ago=1, function=function)
    incidents.transition(incident_id, "INVESTIGATING", "FAILED", reason=STALE_REASON)
    return incident_id


def test_notify_once_publishes_once_among_concurrent_orchestrators_and_watchdogs(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """Orchestrator deliveries and watchdog sweeps, each as its own identity, race to notify the same
    incident: one publishes, the others find the claim; afterwards everyone finds it sent."""
    published_notifications(sandbox)
    incident_id = _failed(incidents, "fn-raced")
    senders: list[tuple[IncidentStore, Notifier]] = []
    for identity in (names.SUPERVISOR, names.WATCHDOG):
        session = sandbox.session(identity)
        store = IncidentStore(dynamodb_client(session), incidents.state_table, incidents.context_table)
        notifier = Notifier(sns_client(session), sandbox.world.diagnoses_topic_arn, None, Logger())
        senders += [(store, notifier)] * 6
    metrics = EphemeralMetrics(namespace="IncidentResponse", service="test")

    def send(sender: tuple[IncidentStore, Notifier]) -> str:
        return notify_once(sender[0], sender[1], incident_id, None, metrics)

    with ThreadPoolExecutor(len(senders)) as pool:
        results = list(pool.map(send, senders))
    assert results.count(PUBLISHED) == 1, results  # the others find it claimed, or already sent
    assert set(results) - {PUBLISHED} <= {CLAIMED_ELSEWHERE, SENT_BEFORE}, results
    (envelope,) = published_notifications(sandbox)
    assert envelope["MessageAttributes"]["incident_id"]["Value"] == incident_id
    state = incidents.get(incident_id)
    assert state is not None
    assert state["notification_message_id"] == envelope["MessageId"]
    assert notify_once(*senders[0], incident_id, state, metrics) == SENT_BEFORE
    assert send(senders[-1]) == SENT_BEFORE  # it reads the item: sent
    assert published_notifications(sandbox) == []


def test_a_claim_whose_holder_died_is_taken_over_after_the_lease(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    published_notifications(sandbox)
    incident_id = _failed(incidents, "fn-abandoned")
    died = datetime.now(UTC) - NOTIFY_LEASE - timedelta(seconds=5)
    then = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: died)
    assert then.claim_notification(incident_id, "dead-holder", NOTIFY_LEASE) is not None
    held = datetime.now(UTC) - NOTIFY_LEASE + timedelta(minutes=1)
    live = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: held)
    session = sandbox.session(names.WATCHDOG)
    notifier = Notifier(sns_client(session), sandbox.world.diagnoses_topic_arn, None, Logger())
    watchdog = IncidentStore(dynamodb_client(session), incidents.state_table, incidents.context_table)
    metrics = EphemeralMetrics(namespace="IncidentResponse", service="test")

    assert live.claim_notification(incident_id, "live-holder", NOTIFY_LEASE) is None  # held, not lapsed
    assert published_notifications(sandbox) == []
    assert notify_once(watchdog, notifier, incident_id, None, metrics) == PUBLISHED
    (envelope,) = published_notifications(sandbox)
    assert envelope["MessageAttributes"]["incident_id"]["Value"] == incident_id
    assert "notify_claim" not in incidents.get(incident_id)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("settings", "prefix"),
    [(SupervisorSettings, "SUPERVISOR_"), (WatchdogSettings, "WATCHDOG_"), (ExecutorSettings, "EXECUTOR_")],
)
def test_each_component_names_its_own_notification_setting_when_it_is_wrong(
    settings: type[NotificationSettings], prefix: str
) -> None:
    with pytest.raises(ValidationError, match=f"{prefix}DIAGNOSES_TOPIC_ARN must be an SNS topic ARN"):
        settings(diagnoses_topic_arn="arn:aws:sqs:us-east-1:123456789012:not-a-topic")
    with pytest.raises(ValidationError, match=f"{prefix}CONSOLE_URL must be an http\\(s\\) URL"):
        settings(console_url="console.example.com")
    unset = settings(diagnoses_topic_arn="", console_url="https://console.example.com/")
    assert (unset.diagnoses_topic_arn, unset.console_url) == (None, "https://console.example.com")


RECHECK_AT = "2026-11-23T05:04:10.000Z"


def test_each_stage_of_a_diagnosis_says_what_it_is_in_every_form() -> None:
    provisional = build_notification(
        INCIDENT | {"final": False, "recheck_at": RECHECK_AT}, _diagnosis(), None
    )
    assert provisional.subject == "[DIAGNOSED] data-processor (provisional): permission_loss (high)"
    assert f"A re-check at {RECHECK_AT} reads it again" in provisional.text
    assert provisional.attributes["stage"] == {"DataType": "String", "StringValue": "provisional"}
    assert provisional.chat["metadata"]["additionalContext"]["stage"] == "provisional"

    revision = changes(_diagnosis(trigger=None, fault_types=["unknown"]), _diagnosis())
    rechecked = INCIDENT | {"final": True, "recheck_at": RECHECK_AT}
    final = build_notification(rechecked, _diagnosis(), None, revision)
    assert final.subject == "[DIAGNOSED] data-processor (final): permission_loss (high)"
    assert (
        "Changed since the provisional diagnosis\n  trigger found: DeleteRolePolicy at "
        "2026-11-23T04:49:08.829498+00:00\n  fault types: unknown -> permission_loss\n"
    ) in final.text
    assert final.attributes["stage"]["StringValue"] == "final"

    stands = build_notification(rechecked | {"final_reason": NEVER_RAN}, _diagnosis(), None)
    assert f"Final (not re-checked)\n  {NEVER_RAN}\n" in stands.text
    at_once = build_notification(INCIDENT | {"final": True}, _diagnosis(), None)
    assert at_once.subject == "[DIAGNOSED] data-processor: permission_loss (high)"
    assert "re-check" not in at_once.text
