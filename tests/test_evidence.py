"""Evidence checks: dotted paths, value matching, verification of a submission, the confidence cap."""

from __future__ import annotations

import re
from typing import Any

import pytest

from supervisor.diagnosis.evidence import capped_confidence, check_pointer, describe_failures, verify
from supervisor.diagnosis.paths import resolve, value_matches
from supervisor.schemas import DiagnosisSubmission, EvidencePointer
from tests.agent_support import CONFIG, IAM, LOGS, METRICS, THROTTLES, pointer, submission

RESPONSES: dict[str, list[Any]] = {
    "get_lambda_config": [CONFIG],
    "get_recent_logs": [LOGS],
    "get_iam_state": [IAM],
    "get_function_metrics": [METRICS],
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
    assert [(e.entry, e.verified) for e in verification.entries] == [
        ("remediation_plan.0", True),
        ("remediation_plan.0.command", True),
    ]
    assert [(s.fault_type, s.supported_by, s.missing) for s in verification.support] == [
        ("throttling", [0, 1], "")
    ]
    assert capped_confidence(verification) == 0.9


def test_throttling_from_the_configured_limit_alone_is_not_supported() -> None:
    payload = submission(
        evidence=[pointer("get_lambda_config", "ReservedConcurrentExecutions", "0")],
        remediation_plan=[],
    )
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 0)
    assert [c.verified for c in verification.pointers] == [True]  # the pointer holds ...
    assert verification.unsupported_fault_types == ["throttling"]  # ... but the limit is not the throttles
    assert "needs get_function_metrics throttles" in verification.support[0].missing
    assert not verification.passed
    assert capped_confidence(verification) == 0.3


def test_fabricated_pointers_cap_the_confidence_and_are_named() -> None:
    payload = submission(
        fault_types=["throttling", "network_block"],
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            THROTTLES,
            pointer("get_network_state", "https_egress_allowed", "false", "network_block"),  # never called
        ],
    )
    diagnosis = DiagnosisSubmission.model_validate(payload)
    verification = verify(diagnosis, RESPONSES, 1)
    assert [c.verified for c in verification.pointers] == [True, True, False]
    assert verification.unsupported_fault_types == ["network_block"]
    assert capped_confidence(verification) == 0.3  # a fault type without support caps it hard
    message = describe_failures(diagnosis, verification)
    assert (
        "evidence 2 (get_network_state 'https_egress_allowed'): get_network_state was not called" in message
    )
    assert "fault type 'network_block'" in message


def test_no_verified_evidence_means_zero_confidence() -> None:
    unknown = DiagnosisSubmission.model_validate(
        submission(fault_types=["unknown"], evidence=[], remediation_plan=[], confidence=0.95)
    )
    verification = verify(unknown, RESPONSES, 0)
    assert verification.passed  # "unknown" with no evidence is a legitimate answer ...
    assert capped_confidence(verification) == 0.0  # ... but never a confident one


def test_half_of_the_pointers_and_entries_verified_caps_at_half() -> None:
    payload = submission(
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            THROTTLES,
            pointer("get_lambda_config", "Timeout", "900"),
        ]
    )
    payload["remediation_plan"][0] |= {"evidence_basis": [0, 2], "command": None}
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 1)
    assert [c.verified for c in verification.pointers] == [True, True, False]
    assert [(e.entry, e.verified, e.reason) for e in verification.entries] == [
        ("remediation_plan.0", False, "cites evidence 2, not verified")
    ]
    assert verification.unsupported_fault_types == []
    assert capped_confidence(verification) == 0.5  # 2 of 3 pointers and 0 of 1 entry


def test_an_entry_that_fails_lowers_the_confidence_even_when_every_pointer_holds() -> None:
    payload = submission()
    payload["remediation_plan"][0]["command"] = (
        "aws lambda delete-function-concurrency --function data-processor"
    )
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 0)
    assert all(c.verified for c in verification.pointers)
    assert not verification.passed
    assert capped_confidence(verification) == 0.75  # 2 pointers and 1 of 2 entries
    assert "- remediation_plan.0.command: the command does not parse" in describe_failures(
        DiagnosisSubmission.model_validate(payload), verification
    )
