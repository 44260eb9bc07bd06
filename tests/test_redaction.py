"""Redaction on the project's corpus (tests/redaction_corpus.py): every secret replaced by its placeholder in
plain text and inside a JSON-format record (its "/" escaped or not), every redacted record still parsing,
look-alikes left exactly as they are, and an answer's gaps counting what was replaced."""

from __future__ import annotations

import json
import random
import re
import urllib.parse
from collections import Counter
from itertools import product

import pytest

from mcp_server.contract.common import Gap
from mcp_server.contract.logs import LogsResponse
from mcp_server.redaction import (
    _ENCODED,
    KINDS,
    REDACTION_SOURCE,
    _decode_one,
    _said,
    names_a_secret,
    redact_answer,
    redact_text,
)
from mcp_server.secret_kinds import CARD_NUMBER, may_hold_card
from tests.redaction_corpus import ACCESS_KEY, LOOK_ALIKES, REQUEST_ID, SECRET_KEY, SECRETS, Secret

PLACEHOLDER = re.compile(r"\[REDACTED:([a-z_]+)\]")


def _record(message: str, *, escape_slashes: bool = False) -> str:
    """A JSON-format Lambda log record (LoggingConfig LogFormat JSON) carrying ``message``."""
    record = json.dumps(
        {
            "timestamp": "2026-11-29T10:15:00.123Z",
            "level": "INFO",
            "requestId": REQUEST_ID,
            "message": message,
        }
    )
    return record.replace("/", "\\/") if escape_slashes else record


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _leaks(text: str, secret: Secret) -> list[str]:
    """The secret's values found in ``text`` as written, URL-decoded or with "\\/" unescaped."""
    forms = {text, urllib.parse.unquote(text), text.replace("\\/", "/")}
    return [value for value in secret.values if any(value in form for form in forms)]


def test_the_corpus_is_as_large_as_the_issue_asks() -> None:
    assert len(SECRETS) >= 60
    assert len(LOOK_ALIKES) >= 40
    assert {kind for secret in SECRETS for kind in secret.kinds} == set(KINDS)  # every kind is exercised


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.name)
def test_each_secret_in_plain_text_becomes_its_placeholder(secret: Secret) -> None:
    counts: Counter[str] = Counter()
    redacted = redact_text(secret.text, counts)
    assert _leaks(redacted, secret) == [], redacted
    assert set(secret.kinds) <= set(PLACEHOLDER.findall(redacted)), redacted
    assert sum(counts.values()) == len(PLACEHOLDER.findall(redacted))
    if _is_json(secret.text):  # a JSON document stays one
        json.loads(redacted)


@pytest.mark.parametrize("escape_slashes", [False, True], ids=["json", "json-escaped-slashes"])
@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.name)
def test_each_secret_in_a_json_record_is_replaced_and_the_record_still_parses(
    secret: Secret, escape_slashes: bool
) -> None:
    record = _record(secret.text, escape_slashes=escape_slashes)
    redacted = redact_text(record, Counter())
    parsed = json.loads(redacted)
    assert parsed["requestId"] == REQUEST_ID
    assert _leaks(redacted, secret) == [], redacted
    assert _leaks(parsed["message"], secret) == [], parsed["message"]
    assert set(secret.kinds) <= set(PLACEHOLDER.findall(parsed["message"])), parsed["message"]


@pytest.mark.parametrize(("name", "text"), LOOK_ALIKES, ids=[name for name, _ in LOOK_ALIKES])
def test_a_look_alike_is_left_exactly_as_it_is(name: str, text: str) -> None:
    counts: Counter[str] = Counter()
    assert redact_text(text, counts) == text
    record = _record(text)
    assert redact_text(record, counts) == record
    assert counts == Counter()


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact_text(" | ".join(secret.text for secret in SECRETS), Counter())
    counts: Counter[str] = Counter()
    assert redact_text(once, counts) == once
    assert counts == Counter()


def test_a_truncation_marker_is_never_part_of_a_match() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B …[truncated 912 bytes]"
    assert redact_text(text, Counter()) == "[REDACTED:private_key] …[truncated 912 bytes]"
    cut_record = '{"message": "user bob@example.com and mo …[truncated 40 bytes]'
    assert (
        redact_text(cut_record, Counter())
        == '{"message": "user [REDACTED:email] and mo …[truncated 40 bytes]'
    )
    cut_inside = "environment: {'AWS_SESSION_TOKEN': 'Zm9vYmFyYmF6cXV4 …[truncated 473 bytes]"
    assert redact_text(cut_inside, Counter()) == (  # the quote left open runs to the cut
        "environment: {'AWS_SESSION_TOKEN': '[REDACTED:secret] …[truncated 473 bytes]"
    )


def test_a_redaction_after_an_escape_leaves_every_escape_whole() -> None:
    text = 'payload {"rows": "id\\n4111111111111111\\u00a0x", "path": "a\\/b"}'
    redacted = redact_text(text, Counter())
    assert redacted == 'payload {"rows": "id\\n[REDACTED:card_number]\\u00a0x", "path": "a\\/b"}'
    json.loads(redacted.removeprefix("payload "))


def test_a_value_under_a_secret_key_goes_whole_when_another_kind_begins_it() -> None:
    assert redact_text("password=abc@example.com-tail next", Counter()) == "password=[REDACTED:email] next"


@pytest.mark.parametrize(
    "text",
    ['{} } {"password": "x"}', '{"a": "b" "password": "c"}', "{'password': 'x'}", "[1, 2]]", '{"k": tru}'],
)
def test_text_that_only_looks_like_json_is_read_without_error(text: str) -> None:
    assert "[REDACTED:" in redact_text(text, Counter()) or "password" not in text


def test_a_secret_value_is_replaced_wherever_it_stands_and_the_record_stays_as_it_was() -> None:
    """The same text as a key elsewhere, and escaped differently elsewhere."""
    document = '{"note": "password=hunter2", "password=hunter2": 1, "raw": "password=hunter2\\/x"}'
    redacted = redact_text(document, Counter())
    assert json.loads(redacted) == {
        "note": "password=[REDACTED:secret]",
        "password=[REDACTED:secret]": 1,
        "raw": "password=[REDACTED:secret]",
    }


def test_a_key_that_is_an_address_is_replaced_and_the_record_still_parses() -> None:
    for document in ('{"bob@example.com": {"orders": 2}}', '{"bob@example.com": 4111111111111111}'):
        redacted = redact_text(document, Counter())
        assert "bob@example.com" not in redacted
        assert "[REDACTED:email]" in json.loads(redacted)


def test_a_url_password_takes_only_the_password_not_the_host() -> None:
    redacted = redact_text("mongodb://svc:p@ss@cluster0.example.net/db?w=1", Counter())
    assert redacted == "mongodb://svc:[REDACTED:url_password]@cluster0.example.net/db?w=1"


def test_a_json_document_keeps_its_layout_and_only_the_secret_changes() -> None:
    document = '{ "user" : "bob",\n  "password":"hunter2", "n": [1, 2] }'
    assert (
        redact_text(document, Counter())
        == '{ "user" : "bob",\n  "password":"[REDACTED:secret]", "n": [1, 2] }'
    )


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("clientSecret", True),
        ("X-Amz-Security-Token", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("api-key", True),
        ("APIKey", True),
        ("private_key", True),
        ("authorization", True),
        ("secret_arn", False),
        ("token_type", False),
        ("input_tokens", False),
        ("access_key_id", False),
        ("key", False),
        ("PartitionKey", False),
        ("password_last_used", False),
    ],
)
def test_a_key_names_a_secret_by_its_last_words(key: str, secret: bool) -> None:
    assert names_a_secret(key) is secret


def _logs(*messages: str) -> LogsResponse:
    events = [
        {"timestamp": "2026-11-25T20:39:23+00:00", "message": message, "kind": "function"}
        for message in messages
    ]
    return LogsResponse.model_validate(
        {
            "log_group": "/aws/lambda/data-processor",
            "events": events,
            "window_start": "2026-11-25T20:09:23+00:00",
            "window_end": "2026-11-25T20:39:23+00:00",
            "matched_events": len(events),
            "returned_events": len(events),
            "gaps": [{"source": "logs:FilterLogEvents", "meaning": "a page was not read"}],
        }
    )


def test_an_answer_is_redacted_in_every_string_and_its_gaps_count_each_kind() -> None:
    answer = _logs(f"user bob@example.com key {ACCESS_KEY} {SECRET_KEY}", "paid with 4111111111111111", "ok")
    redacted = redact_answer(answer)
    assert [event.message for event in redacted.events] == [
        "user [REDACTED:email] key [REDACTED:aws_access_key] [REDACTED:aws_secret_key]",
        "paid with [REDACTED:card_number]",
        "ok",
    ]
    assert redacted.gaps[0] == answer.gaps[0]
    assert [gap.source for gap in redacted.gaps] == ["logs:FilterLogEvents", REDACTION_SOURCE]
    assert (redacted.gaps[1].error_code, redacted.gaps[1].meaning) == (
        None,
        "Replaced before any model reads the answer: 1 aws_access_key, 1 aws_secret_key, 1 email, 1 "
        "card_number. The placeholders ([REDACTED:<kind>]) stand where the values were; the values are not "
        "recoverable from this answer.",
    )
    assert answer.events[0].message.startswith("user bob@")  # the original is untouched


def test_an_answer_with_nothing_to_redact_is_returned_as_it_is() -> None:
    answer = _logs("processed 25 orders", f"RequestId: {REQUEST_ID}")
    assert redact_answer(answer) is answer
    assert answer.gaps == [Gap(source="logs:FilterLogEvents", meaning="a page was not read")]


def test_the_decoded_view_takes_each_escape_once_left_to_right() -> None:
    """Every text of up to six characters drawn from backslashes, escape letters and others: the short-escape
    path decodes exactly as the general one does (an escaped backslash takes the backslash after it)."""
    texts = ("".join(chars) for size in range(1, 7) for chars in product('\\n"/tqx', repeat=size))
    assert [text for text in texts if _said(text) != _ENCODED.sub(_decode_one, text)] == []
    assert _said("a\\\\nb\\tc\\q") == "a\\nb\tc\\q"


@pytest.mark.parametrize(
    "text",
    [
        f"START RequestId: {REQUEST_ID} Version: $LATEST password=hunter2",
        f"REPORT RequestId: {REQUEST_ID}\tDuration: 4111111111111111 ms",  # not a number Lambda prints
        f"REPORT RequestId: {REQUEST_ID}\tDuration: 45.19 ms\tpassword=hunter2",
        f"END RequestId: {REQUEST_ID} Bearer abcdefghijklmnop1234",
        "2026-11-29T10:15:00.4111111111111111",  # a time's shape, a card number as its fraction
        f"{REQUEST_ID} bob@example.com",
    ],
)
def test_what_starts_like_a_time_an_id_or_lambda_s_own_line_is_still_read(text: str) -> None:
    assert PLACEHOLDER.search(redact_text(text, Counter()))


@pytest.mark.parametrize(
    "text",
    [
        f"START RequestId: {REQUEST_ID} Version: $LATEST\n",
        f"END RequestId: {REQUEST_ID}\n",
        f"REPORT RequestId: {REQUEST_ID}\tDuration: 45.19 ms\tBilled Duration: 46 ms\tMemory Size: 256 MB\t"
        "Max Memory Used: 50 MB\tInit Duration: 166.36 ms\t\n",
        "2026-11-29T10:15:00.123456+00:00",
        REQUEST_ID,
    ],
)
def test_times_ids_and_lambda_s_own_lines_are_kept(text: str) -> None:
    assert redact_text(text, Counter()) == text


def test_the_card_pre_test_passes_every_text_the_card_pattern_matches() -> None:
    """``may_hold_card`` skips the card pattern where it fails: it must never fail where the pattern finds
    something (digit runs with spaces, hyphens and other characters between them, drawn at random)."""
    draw = random.Random(43)
    matched = 0
    for _ in range(20_000):
        text = "".join(draw.choice("0123456789 -x\n") for _ in range(draw.randint(10, 40)))
        if CARD_NUMBER.search(text) is not None:
            matched += 1
            assert may_hold_card(text), text
    assert matched > 100  # the draw reaches the pattern often enough to mean something
    assert not may_hold_card(f"{REQUEST_ID} 2026-11-29T10:15:00.123Z Duration: 45.19 ms")


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        ('{"card": 4111111111111111, "n": 2}', "card_number"),
        ('{"pin": 1234, "api_key": 987654321}', "secret"),
    ],
)
def test_a_number_that_is_a_secret_becomes_a_quoted_placeholder_and_the_rest_stays(
    document: str, kind: str
) -> None:
    redacted = redact_text(document, Counter())
    parsed = json.loads(redacted)
    assert f"[REDACTED:{kind}]" in parsed.values()
    assert all(isinstance(value, int) for name, value in parsed.items() if name in ("n", "pin"))
