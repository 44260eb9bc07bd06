"""Evidence checks: dotted paths, value matching, verification of a submission, the confidence cap."""

from __future__ import annotations

import re
from typing import Any

import pytest

from supervisor.diagnosis.evidence import check_pointer, describe_failures, verify
from supervisor.diagnosis.paths import resolve, value_matches
from supervisor.diagnosis.standing import confidence, standing_claims
from supervisor.schemas import DiagnosisSubmission, EvidencePointer, Verification
from tests.agent_support import CONFIG, FUNCTION, IAM, LOGS, METRICS, THROTTLES, pointer, submission

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
        # Numbers, booleans, null, lists and objects: whole, by value.
        ("0", 0, True),
        ("1", 0, False),
        ("4", 4.0, True),
        ("4.0", 4, True),
        ("1392", 1392, True),
        ("139", 1392, False),  # digits inside a number quote nothing
        ("1", 1.5, False),
        ("1", True, False),  # a boolean is not a number
        ("true", 1, False),
        ("null", None, True),
        ("None", None, True),
        ("0", None, False),
        ("false", False, True),
        ("False", False, True),
        ("[]", [], True),
        ('["a", "b"]', ["a", "b"], True),
        ('["a"]', ["a", "b"], False),  # a list is quoted whole
        ('{"b": 2, "a": 1.0}', {"a": 1, "b": 2}, True),
        ("logs:PutLogEvents", {"Action": ["logs:PutLogEvents"]}, False),  # a member is not the object
        # Strings: whole, or a part of at least 8 characters on token boundaries.
        ("ok", "ok", True),
        ("  ok ", "ok", True),
        ('"Disabled"', "Disabled", True),
        ("AccessDenied", "An error occurred (AccessDenied) when calling", True),
        ("Access Granted", "An error occurred (AccessDenied) when calling", False),
        ("Ac", "An error occurred (AccessDenied)", False),
        ("ERR", "ERR something went wrong", False),  # bounded, but too short to be specific
        ("ion", "the permission was denied", False),
        ("ccessDenied", "An error occurred (AccessDenied)", False),  # starts inside a token
        ("AccessDenie", "An error occurred (AccessDenied)", False),  # ends inside a token
        ("3003", "Duration: 3003.12 ms", False),  # inside the number 3003.12
        ("3003.12 ms", "Duration: 3003.12 ms", True),
        ("Duration: 3003", "Duration: 3003.12 ms", False),
        ("1,392 items", "read 1,392 items", True),
        ("392 items", "read 1,392 items", False),
        ("data-processor-input", "arn:aws:s3:::data-processor-input/*", True),
        ("aws:s3:::data-processor", "arn:aws:s3:::data-processor-input/*", True),  # '-' is a boundary
        ("GetObject operation", "GetObject operation: GetObjectAcl", True),  # the first bounded one counts
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


def _standing(
    payload: dict[str, Any], turns: int = 0
) -> tuple[DiagnosisSubmission, Verification, list[str], float]:
    """What stands of ``payload`` once checked against RESPONSES: the diagnosis kept, its verification, where
    the refused claims were, and the confidence computed from what remains."""
    submitted = DiagnosisSubmission.model_validate(payload)
    check = verify(submitted, RESPONSES, turns, FUNCTION)
    kept, again, refused = standing_claims(submitted, check, RESPONSES, FUNCTION)
    assert again.passed
    return (
        kept,
        again,
        [claim.claim for claim in refused],
        confidence(submitted.confidence, check, refused, again),
    )


def test_verified_submission_keeps_its_confidence() -> None:
    verification = verify(DiagnosisSubmission.model_validate(submission()), RESPONSES, 0, FUNCTION)
    assert verification.passed
    assert [(e.entry, e.verified) for e in verification.entries] == [
        ("remediation_plan.0", True),
        ("remediation_plan.0.command", True),
    ]
    assert [(s.fault_type, s.supported_by, s.missing) for s in verification.support] == [
        ("throttling", [0, 1], "")
    ]
    kept, _, refused, stated = _standing(submission())
    assert (kept, refused, stated) == (DiagnosisSubmission.model_validate(submission()), [], 0.9)


def test_throttling_from_the_configured_limit_alone_is_not_supported() -> None:
    payload = submission(
        evidence=[pointer("get_lambda_config", "ReservedConcurrentExecutions", "0")],
        remediation_plan=[],
    )
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 0, FUNCTION)
    assert [c.verified for c in verification.pointers] == [True]  # the pointer holds ...
    assert verification.unsupported_fault_types == ["throttling"]  # ... but the limit is not the throttles
    assert verification.support[0].missing.startswith("needs get_function_metrics throttles above 0")
    assert not verification.passed
    kept, _, refused, stated = _standing(payload)
    assert kept.fault_types == ["unknown"]
    assert refused == ["fault_types.throttling", "root_cause"]
    assert kept.evidence[0].supports is None  # the pointer stays, as context
    assert kept.root_cause.startswith("No submitted fault verified (throttling)")
    assert stated == 0.0  # none of the faults it named remains


def test_fabricated_pointers_are_taken_out_and_named() -> None:
    payload = submission(
        fault_types=["throttling", "network_block"],
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            THROTTLES,
            pointer("get_network_state", "https_egress_allowed", "false", "network_block"),  # never called
        ],
    )
    diagnosis = DiagnosisSubmission.model_validate(payload)
    verification = verify(diagnosis, RESPONSES, 1, FUNCTION)
    assert [c.verified for c in verification.pointers] == [True, True, False]
    assert verification.unsupported_fault_types == ["network_block"]
    message = describe_failures(diagnosis, verification)
    assert (
        "evidence 2 (get_network_state 'https_egress_allowed'): get_network_state was not called" in message
    )
    assert "fault type 'network_block'" in message
    kept, _, refused, stated = _standing(payload, 1)
    assert kept.fault_types == ["throttling"]
    assert [p.field for p in kept.evidence] == ["ReservedConcurrentExecutions", "throttles"]
    assert refused == ["evidence.2", "fault_types.network_block", "root_cause"]
    assert kept.root_cause.startswith("Verified: throttling. The submitted cause also named network_block")
    assert stated == round(1 - 2 / 7, 3)  # 2 refused of 3 pointers, 2 entries, 2 fault types


def test_no_verified_evidence_means_zero_confidence() -> None:
    unknown = submission(fault_types=["unknown"], evidence=[], remediation_plan=[], confidence=0.95)
    verification = verify(DiagnosisSubmission.model_validate(unknown), RESPONSES, 0, FUNCTION)
    assert verification.passed  # "unknown" with no evidence is a legitimate answer ...
    assert _standing(unknown)[3] == 0.0  # ... but never a confident one


def test_a_step_that_cites_an_unverified_pointer_leaves_with_it() -> None:
    payload = submission(
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            THROTTLES,
            pointer("get_lambda_config", "Timeout", "900"),
        ]
    )
    payload["remediation_plan"][0] |= {"evidence_basis": [0, 2], "command": None}
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 1, FUNCTION)
    assert [c.verified for c in verification.pointers] == [True, True, False]
    assert [(e.entry, e.verified, e.reason) for e in verification.entries] == [
        ("remediation_plan.0", False, "cites evidence 2, not verified")
    ]
    assert verification.unsupported_fault_types == []
    kept, _, refused, stated = _standing(payload, 1)
    assert (kept.fault_types, kept.remediation_plan) == (["throttling"], [])
    assert refused == ["evidence.2", "remediation_plan.0"]
    assert stated == 0.6  # 2 claims refused of 5: 3 pointers, 1 entry, 1 fault type


def test_an_entry_that_fails_is_taken_out_even_when_every_pointer_holds() -> None:
    payload = submission()
    payload["remediation_plan"][0]["command"] = (
        "aws lambda delete-function-concurrency --function data-processor"
    )
    verification = verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 0, FUNCTION)
    assert [c.verified for c in verification.pointers] == [True, True]  # both of submission()'s
    assert not verification.passed
    assert "- remediation_plan.0.command: the command does not parse" in describe_failures(
        DiagnosisSubmission.model_validate(payload), verification
    )
    kept, _, refused, stated = _standing(payload)
    assert (kept.fault_types, kept.remediation_plan, refused) == (["throttling"], [], ["remediation_plan.0"])
    assert stated == 0.8  # 1 claim refused (the step) of 5: 2 pointers, 2 entries, 1 fault type
