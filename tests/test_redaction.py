"""Redaction: each kind of secret replaced by its typed placeholder, look-alikes left as they are, and an
answer's gaps counting what was replaced."""

from __future__ import annotations

from collections import Counter

import pytest

from mcp_server.contract.common import Gap
from mcp_server.contract.logs import LogsResponse
from mcp_server.redaction import KINDS, REDACTION_SOURCE, redact_answer, redact_text

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq9z1\n-----END RSA PRIVATE KEY-----"

SECRETS = [
    (f"token {JWT} sent", "jwt", "token [REDACTED:jwt] sent"),
    (
        "Authorization: Bearer abcdefghijklmnop1234",
        "bearer_token",
        "Authorization: Bearer [REDACTED:bearer_token]",
    ),
    ("key AKIAIOSFODNN7EXAMPLE used", "aws_access_key", "key [REDACTED:aws_access_key] used"),
    ("session ASIAY34FZKBOKMUTVV7A", "aws_access_key", "session [REDACTED:aws_access_key]"),
    (
        f"aws_secret_access_key={SECRET_KEY}",
        "aws_secret_key",
        "aws_secret_access_key=[REDACTED:aws_secret_key]",
    ),
    (
        f'{{"SecretAccessKey": "{SECRET_KEY}"}}',
        "aws_secret_key",
        '{"SecretAccessKey": "[REDACTED:aws_secret_key]"}',
    ),
    ("mail bob.smith+x@example.co.uk now", "email", "mail [REDACTED:email] now"),
    ("card 4111 1111 1111 1111 declined", "card_number", "card [REDACTED:card_number] declined"),
    ("card 4111-1111-1111-1111", "card_number", "card [REDACTED:card_number]"),
    ("amex 378282246310005", "card_number", "amex [REDACTED:card_number]"),
    (f"key:\n{PEM}\nloaded", "private_key", "key:\n[REDACTED:private_key]\nloaded"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEv", "private_key", "[REDACTED:private_key]"),
    (
        "connect postgres://admin:hunter2@db.example.com:5432/orders",
        "url_password",
        "connect postgres://admin:[REDACTED:url_password]@db.example.com:5432/orders",
    ),
]

LOOK_ALIKES = [
    "RequestId: 8d1f3c2e-1234-4abc-8def-0123456789ab",  # a request id (a UUID)
    "Root=1-5759e988-bd862e3fe1be46a994272793",  # an X-Ray trace id
    # Request ids whose digits, run together across the hyphens, pass the Luhn check (a drill run met one)
    "START RequestId: fffbeebe-767d-4e57-5513-13735379b83d Version: $LATEST",
    "request 46557210-1415-6183-6546-107358735570",  # a UUID of digits only
    "sha256:ab5904544091031776cd",  # 16 Luhn-valid digits inside a hex string
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",  # a git hash: 40 hex characters
    "CodeSha256: 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",  # a code hash, base64 with padding
    "card 4111 1111 1111 1112",  # 16 digits that fail the Luhn check
    "at 1764100000000 ms",  # epoch milliseconds: 13 digits, Luhn or not, start with 1
    "account 123456789012 role arn:aws:iam::123456789012:role/data-processor-role",
    "processing s3://data-processor-input/incoming/orders-0001.json",
    "REPORT RequestId: 8d1f3c2e-1234-4abc-8def-0123456789ab\tDuration: 45.19 ms\tMax Memory Used: 50 MB",
    "from 10.0.1.25 to 52.94.0.1:443",
    "the word Bearer alone, and Bearer short",
    "user@localhost and @channel",
    "[REDACTED:email] already replaced",
]


@pytest.mark.parametrize(("text", "kind", "expected"), SECRETS)
def test_each_kind_of_secret_becomes_its_placeholder(text: str, kind: str, expected: str) -> None:
    counts: Counter[str] = Counter()
    assert redact_text(text, counts) == expected
    assert counts == Counter({kind: 1})
    assert kind in KINDS


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_look_alike_is_not_a_secret(text: str) -> None:
    counts: Counter[str] = Counter()
    assert redact_text(text, counts) == text
    assert counts == Counter()


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact_text(" | ".join(text for text, _, _ in SECRETS), Counter())
    counts: Counter[str] = Counter()
    assert redact_text(once, counts) == once
    assert counts == Counter()


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
    answer = _logs(f"user bob@example.com key {SECRET_KEY}", "paid with 4111111111111111", "ok")
    redacted = redact_answer(answer)
    assert [event.message for event in redacted.events] == [
        "user [REDACTED:email] key [REDACTED:aws_secret_key]",
        "paid with [REDACTED:card_number]",
        "ok",
    ]
    assert redacted.gaps[0] == answer.gaps[0]
    assert [gap.source for gap in redacted.gaps] == ["logs:FilterLogEvents", REDACTION_SOURCE]
    assert (redacted.gaps[1].error_code, redacted.gaps[1].meaning) == (
        None,
        "Replaced before any model reads the answer: 1 aws_secret_key, 1 email, 1 card_number. The "
        "placeholders ([REDACTED:<kind>]) stand where the values were; the values are not recoverable from "
        "this answer.",
    )
    assert answer.events[0].message.startswith("user bob@")  # the original is untouched


def test_an_answer_with_nothing_to_redact_is_returned_as_it_is() -> None:
    answer = _logs("processed 25 orders", "RequestId: 8d1f3c2e-1234-4abc-8def-0123456789ab")
    assert redact_answer(answer) is answer
    assert answer.gaps == [Gap(source="logs:FilterLogEvents", meaning="a page was not read")]
