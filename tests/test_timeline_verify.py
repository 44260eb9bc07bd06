"""The timeline rule in the code's verification (issue 26): a change made before the function's last
successful invocation cannot have started the failures after it, whatever a model says. IAM changes take
seconds to apply, so one made up to 10 s before that success is still a candidate.

Every other claim of the scripted submission holds, so the trigger's check is the only one that can fail.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from mcp_server.contract.changes import RecentChangesResponse
from mcp_server.contract.iam import IAMStateResponse
from mcp_server.contract.logs import LogsResponse
from mcp_server.contract.metrics import FunctionMetricsResponse
from supervisor.diagnosis.evidence import verify
from supervisor.schemas import DiagnosisSubmission, Verification
from tests.agent_support import FUNCTION, OPERATOR, pointer

ROLE = "data-processor-role"
POLICY = "data-processor-access"
LAST_SUCCESS = datetime.fromisoformat("2026-11-21T10:00:00.250+00:00")  # START of the last success
FIRST_FAILURE = datetime.fromisoformat("2026-11-21T10:00:20.500+00:00")  # START of the first failure
DENIED = "An error occurred (AccessDenied) when calling the GetObject operation: Access Denied"
NARROWED = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::archive/*"}],
}


def _invocation(request_id: str, started: datetime, error: str | None) -> list[dict[str, Any]]:
    """The log events of one invocation, as get_recent_logs places them."""
    at = started.isoformat()
    lines = [("start", f"START RequestId: {request_id} Version: $LATEST")]
    lines += [("error_record", f"[ERROR] AccessDenied: {error}")] if error else []
    lines += [
        ("end", f"END RequestId: {request_id}"),
        ("report", f"REPORT RequestId: {request_id}\tDuration: 80.00 ms\tBilled Duration: 80 ms"),
    ]
    return [
        {"timestamp": at, "message": text, "log_stream": "s", "request_id": request_id, "kind": kind}
        for kind, text in lines
    ]


EVENTS = _invocation("ok-1", LAST_SUCCESS, None) + _invocation("denied-1", FIRST_FAILURE, DENIED)
ERROR_RECORD = next(n for n, event in enumerate(EVENTS) if event["kind"] == "error_record")


def _responses(change_at: datetime) -> dict[str, list[Any]]:
    """What the tools answered: the role's policy narrowed by one PutRolePolicy at ``change_at``; one
    invocation that succeeded, then one denied."""
    events = EVENTS
    logs = {
        "log_group": f"/aws/lambda/{FUNCTION}",
        "events": events,
        "invocations": [
            {
                "request_id": "ok-1",
                "log_stream": "s",
                "started": LAST_SUCCESS.isoformat(),
                "outcome": "no_error_seen",
            },
            {
                "request_id": "denied-1",
                "log_stream": "s",
                "started": FIRST_FAILURE.isoformat(),
                "outcome": "error_record",
            },
        ],
        "matched_events": len(events),
        "returned_events": len(events),
    }
    changes = {
        "function_name": FUNCTION,
        "window_start": "2026-11-20T10:01:00+00:00",
        "window_end": "2026-11-21T10:01:00+00:00",
        "searched": [f"function {FUNCTION}", f"role {ROLE}"],
        "matched_events": 1,
        "returned_events": 1,
        "events": [
            {
                "event_id": "evt-iam",
                "time": change_at.isoformat(),
                "event_name": "PutRolePolicy",
                "service": "iam.amazonaws.com",
                "region": "us-east-1",
                "identity_arn": OPERATOR,
                "identity_type": "IAMUser",
                "matched": [f"role {ROLE}"],
                "summary": {"roleName": ROLE, "policyName": POLICY, "policyDocument": json.dumps(NARROWED)},
            }
        ],
        "note": "CloudTrail delivers events minutes after the call: the newest changes may be missing.",
    }
    iam = {"role_name": ROLE, "inline_policies": {POLICY: NARROWED}, "attached_policies": []}
    metrics = {
        "function_name": FUNCTION,
        "window_start": "2026-11-21T09:01:00+00:00",
        "window_end": "2026-11-21T10:01:00+00:00",
        "minutes": [{"timestamp": "2026-11-21T10:00:00+00:00", "invocations": 2.0, "errors": 1.0}],
        "minutes_with_data": 1,
        "invocations": 2.0,
        "errors": 1.0,
        "throttles": 0.0,
        "error_rate": 0.5,
        "first_error_minute": "2026-11-21T10:00:00+00:00",
        "timeout_seconds": 3,
        "memory_size_mb": 256,
        "log_group": f"/aws/lambda/{FUNCTION}",
    }
    for model, answer in (
        (LogsResponse, logs),
        (RecentChangesResponse, changes),
        (IAMStateResponse, iam),
        (FunctionMetricsResponse, metrics),
    ):
        model.model_validate(answer)  # each as the tool would answer
    return {
        "get_recent_logs": [logs],
        "get_recent_changes": [changes],
        "get_iam_state": [iam],
        "get_function_metrics": [metrics],
    }


def _verified(change_at: datetime) -> Verification:
    """A scripted model's permission_loss diagnosis naming the PutRolePolicy as its trigger."""
    payload = {
        "root_cause": f"{ROLE} allows s3:GetObject only on arn:aws:s3:::archive/*, since a PutRolePolicy.",
        "fault_types": ["permission_loss"],
        "affected_resources": [FUNCTION, ROLE],
        "severity": "high",
        "evidence": [
            pointer(
                "get_iam_state",
                f"inline_policies.{POLICY}.Statement.0.Resource",
                "arn:aws:s3:::archive/*",
                "permission_loss",
            ),
            pointer("get_recent_changes", "events.0.event_name", "PutRolePolicy", "permission_loss"),
            pointer("get_recent_changes", "events.0.time", change_at.isoformat(), None),
            pointer(
                "get_recent_logs",
                f"events.{ERROR_RECORD}.message",
                "(AccessDenied) when calling the GetObject",
                "permission_loss",
            ),
        ],
        "remediation_plan": [],
        "confidence": 0.9,
        "trigger": {
            "event_name": "PutRolePolicy",
            "identity": OPERATOR,
            "time": change_at.isoformat(),
            "seconds_before_first_failure": (FIRST_FAILURE - change_at).total_seconds(),
            "evidence": [1, 2],
        },
    }
    return verify(DiagnosisSubmission.model_validate(payload), _responses(change_at), 0, "data-processor")


@pytest.mark.parametrize("before_success", [timedelta(seconds=30), timedelta(seconds=12)])
def test_a_trigger_from_before_the_last_successful_invocation_fails_verification(
    before_success: timedelta,
) -> None:
    verification = _verified(LAST_SUCCESS - before_success)
    assert [check.verified for check in verification.pointers] == [True] * 4, verification.pointers
    assert not verification.unsupported_fault_types
    assert [(c.entry, c.verified) for c in verification.entries] == [("trigger", False)], verification.entries
    assert "last successful invocation" in verification.entries[0].reason
    assert not verification.passed


@pytest.mark.parametrize(
    "change_at",
    [
        LAST_SUCCESS + timedelta(seconds=10),  # between the last success and the first failure
        LAST_SUCCESS - timedelta(seconds=5),  # before it, but within the time IAM takes to apply a change
    ],
)
def test_a_trigger_after_the_last_success_or_within_iams_delay_is_verified(change_at: datetime) -> None:
    verification = _verified(change_at)
    assert [(c.entry, c.verified, c.reason) for c in verification.entries] == [("trigger", True, "")]
    assert verification.passed
