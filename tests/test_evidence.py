"""Evidence checks: dotted paths, value matching, verification of a submission, the confidence cap."""

from __future__ import annotations

import re
from typing import Any

import pytest

from supervisor.diagnosis.evidence import (
    capped_confidence,
    check_pointer,
    describe_failures,
    resolve,
    value_matches,
    verify,
)
from supervisor.schemas import DiagnosisSubmission, EvidencePointer
from tests.agent_support import CONFIG, IAM, LOGS, pointer, submission

RESPONSES: dict[str, list[Any]] = {
    "get_lambda_config": [CONFIG],
    "get_recent_logs": [LOGS],
    "get_iam_state": [IAM],
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("ReservedConcurrentExecutions", 0),
        ("events.1.timestamp", "2026-11-21T10:00:01+00:00"),
        ("attached_policies.0.document.Statement.0.Action.2", "logs:PutLogEvents"),
        ("policy.v1.Effect", "Allow"),  # a key with a dot in it
    ],
)
def test_resolve(path: str, expected: Any) -> None:
    data = {**CONFIG, **LOGS, **IAM, "policy.v1": {"Effect": "Allow"}}
    assert resolve(data, path) == expected


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("events.9.message", "index 9 is out of range (the list has 2 items)"),
        ("events.first", "'first' is not a list index"),
        ("nope", "no key 'nope'"),
        ("log_group.length", "goes below a str value"),
    ],
)
def test_resolve_says_where_it_stopped(path: str, reason: str) -> None:
    with pytest.raises(LookupError, match=re.escape(reason)):
        resolve(LOGS, path)


@pytest.mark.parametrize(
    ("quoted", "observed", "matches"),
    [
        ("0", 0, True),
        ("1", 0, False),
        ("null", None, True),
        ("false", False, True),
        ("False", False, True),
        ("[]", [], True),
        ('["a", "b"]', ["a", "b"], True),
        ("AccessDenied", "An error occurred (AccessDenied) when calling", True),
        ("Access Granted", "An error occurred (AccessDenied) when calling", False),
        ("Ac", "An error occurred (AccessDenied)", False),  # too short to prove anything by containment
        ("ok", "ok", True),  # ... but equality is equality
        ("logs:PutLogEvents", {"Action": ["logs:PutLogEvents"]}, True),
        ("   ", "anything", False),
    ],
)
def test_value_matches(quoted: str, observed: Any, matches: bool) -> None:
    assert value_matches(quoted, observed) is matches


def _pointer(**fields: Any) -> EvidencePointer:
    return EvidencePointer.model_validate(
        pointer("get_lambda_config", "ReservedConcurrentExecutions", "0") | fields
    )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({}, ""),
        ({"tool": "get_network_state"}, "get_network_state was not called in this run"),
        ({"field": "ReservedConcurrency"}, "does not resolve: no key 'ReservedConcurrency'"),
        ({"value": "100"}, "value '100' is not what 'ReservedConcurrentExecutions' holds ('0')"),
    ],
)
def test_check_pointer(fields: dict[str, Any], reason: str) -> None:
    found = check_pointer(_pointer(**fields), RESPONSES)
    assert reason in found if reason else found == ""


def test_a_pointer_holds_if_any_response_of_its_tool_has_it() -> None:
    later = {**CONFIG, "ReservedConcurrentExecutions": None}
    assert check_pointer(_pointer(value="null"), {"get_lambda_config": [CONFIG, later]}) == ""


def test_verified_submission_keeps_its_confidence() -> None:
    verification = verify(DiagnosisSubmission.model_validate(submission()), RESPONSES, 0)
    assert verification.passed
    assert capped_confidence(verification) == 0.9


def test_fabricated_pointers_cap_the_confidence_and_are_named() -> None:
    payload = submission(
        fault_types=["throttling", "network_block"],
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            pointer("get_network_state", "https_egress_allowed", "false", "network_block"),  # never called
        ],
    )
    diagnosis = DiagnosisSubmission.model_validate(payload)
    verification = verify(diagnosis, RESPONSES, 1)
    assert [c.verified for c in verification.pointers] == [True, False]
    assert verification.unsupported_fault_types == ["network_block"]
    assert capped_confidence(verification) == 0.3  # a fault type without support caps it hard
    message = describe_failures(diagnosis, verification)
    assert (
        "evidence 1 (get_network_state 'https_egress_allowed'): get_network_state was not called" in message
    )
    assert "fault type 'network_block'" in message


def test_no_verified_evidence_means_zero_confidence() -> None:
    unknown = DiagnosisSubmission.model_validate(
        submission(fault_types=["unknown"], evidence=[], remediation_plan=[], confidence=0.95)
    )
    verification = verify(unknown, RESPONSES, 0)
    assert verification.passed  # "unknown" with no evidence is a legitimate answer ...
    assert capped_confidence(verification) == 0.0  # ... but never a confident one


def test_half_verified_evidence_caps_at_half() -> None:
    payload = submission(
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            pointer("get_lambda_config", "Timeout", "900"),
        ]
    )
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 1)
    assert capped_confidence(verification) == 0.5
