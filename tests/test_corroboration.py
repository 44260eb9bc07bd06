"""The corroboration policy: which verified pointers support each fault type, the rule that a log line cited
for a fault must be the terminal error of a failed invocation, and both through the real graph."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_server.contract.registry import TOOL_NAMES, TOOLS, ToolName
from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.diagnosis.corroboration import POLICY, describe_policy, log_problem, support
from supervisor.diagnosis.evidence import verify
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.faults.registry import FAULT_TYPES, FaultType
from supervisor.schemas import DiagnosisSubmission, EvidencePointer
from tests.agent_support import FUNCTION, ScriptedChatModel, ai, call, diagnose_with, submission

ACCOUNT = "123456789012"
ROLE = f"{FUNCTION}-role"
LOG_GROUP = f"/aws/lambda/{FUNCTION}"
MINUTE = "2026-11-21T10:00:00+00:00"
QUEUE = f"arn:aws:sqs:ca-central-1:{ACCOUNT}:orders-queue"
PASSROLE = (
    f"User: arn:aws:sts::{ACCOUNT}:assumed-role/x/y is not authorized to perform: iam:PassRole "
    f"on resource: arn:aws:iam::{ACCOUNT}:role/admin"
)
BOTO = "[ERROR] ClientError: An error occurred (AccessDenied) when calling the {} operation: {}"
DENIED = BOTO.format("GetObject", "Access Denied")


def _line(message: str, request: str | None, kind: str, second: int = 0) -> dict[str, Any]:
    return {
        "timestamp": f"2026-11-21T10:00:{second:02d}+00:00",
        "message": message,
        "request_id": request,
        "kind": kind,
    }


def _logs(events: list[dict[str, Any]], outcomes: dict[str, str]) -> dict[str, Any]:
    return {
        "log_group": LOG_GROUP,
        "events": events,
        "invocations": [
            {"request_id": request, "started": MINUTE, "outcome": outcome}
            for request, outcome in outcomes.items()
        ],
        "matched_events": len(events),
        "returned_events": len(events),
    }


# A world in which something of every kind went wrong, as each tool answers (raw, before validation).
WORLD: dict[str, dict[str, Any]] = {
    "get_recent_logs": _logs(
        [
            _line("START RequestId: r-ok Version: $LATEST", "r-ok", "start"),  # 0
            _line(PASSROLE, "r-ok", "function", 1),  # 1: printed by the code
            _line(f"[ERROR] AccessDeniedException: {PASSROLE}", "r-ok", "error_record", 2),  # 2: no failure
            _line("START RequestId: r-denied Version: $LATEST", "r-denied", "start", 3),  # 3
            _line(DENIED, "r-denied", "error_record", 4),  # 4: the terminal error of a failed invocation
            _line("START RequestId: r-slow Version: $LATEST", "r-slow", "start", 5),  # 5
            _line("r-slow Task timed out after 3.00 seconds", "r-slow", "timeout", 8),  # 6
            _line(DENIED, None, "error_record", 9),  # 7: in no invocation that was read
            _line("START RequestId: r-full Version: $LATEST", "r-full", "start", 10),  # 8
            _line("[ERROR] OSError: [Errno 28] No space left on device", "r-full", "error_record", 11),  # 9
        ],
        {"r-ok": "no_error_seen", "r-denied": "error_record", "r-slow": "timeout", "r-full": "error_record"},
    ),
    "get_iam_state": {
        "role_name": ROLE,
        "inline_policies": {
            "data-processor-access": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other-bucket/*"}
                ],
            }
        },
        "attached_policies": [],
    },
    "get_lambda_config": {
        "FunctionName": FUNCTION,
        "FunctionArn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
        "Runtime": "python3.12",
        "Handler": "data_processor.process",
        "MemorySize": 128,
        "Timeout": 3,
        "State": "Active",
        "EphemeralStorageMb": 512,
        "CodeSha256": "c2hhMjU2LW9mLXRoZS1jb2Rl",
        "EnvironmentVariableNames": ["BUCKET"],
        "ReservedConcurrentExecutions": 0,
        "Versions": [{"Version": "$LATEST"}, {"Version": "2"}],
        "Aliases": [{"Name": "live", "FunctionVersion": "2"}],
        "Role": f"arn:aws:iam::{ACCOUNT}:role/{FUNCTION}-role",
        "KMSKeyArn": f"arn:aws:kms:ca-central-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "EnvironmentKey": {"KeyState": "Disabled", "DecryptGrantees": []},
    },
    "get_network_state": {
        "function_name": FUNCTION,
        "in_vpc": True,
        "vpc_id": "vpc-1",
        "security_groups": [
            {
                "group_id": "sg-1",
                "group_name": "data-processor",
                "vpc_id": "vpc-1",
                "ingress": [],
                "egress": [],
            }
        ],
        "egress": [
            {"destination": "aws-apis", "allowed": False, "reasons": ["sg-1 allows no outbound tcp/443"]}
        ],
        "https_egress_allowed": False,
    },
    "get_recent_changes": {
        "function_name": FUNCTION,
        "window_start": "2026-11-20T10:00:00+00:00",
        "window_end": "2026-11-21T10:05:00+00:00",
        "searched": [f"function {FUNCTION}", f"role {ROLE}", "security group sg-1"],
        "matched_events": 6,
        "returned_events": 6,
        "events": [  # newest first
            {
                "event_id": "e-ec2",
                "time": "2026-11-21T09:59:00+00:00",
                "event_name": "RevokeSecurityGroupEgress",
                "service": "ec2.amazonaws.com",
            },
            {
                "event_id": "e-lambda",
                "time": "2026-11-21T09:58:00+00:00",
                "event_name": "PutFunctionConcurrency20171031",
                "service": "lambda.amazonaws.com",
            },
            {
                "event_id": "e-iam",
                "time": "2026-11-21T09:57:00+00:00",
                "event_name": "DeleteRolePolicy",
                "service": "iam.amazonaws.com",
                "summary": {"roleName": ROLE, "policyName": "data-processor-access"},
            },
            {
                "event_id": "e-config",
                "time": "2026-11-21T09:56:00+00:00",
                "event_name": "UpdateFunctionConfiguration20150331v2",
                "service": "lambda.amazonaws.com",
                "summary": {"functionName": FUNCTION, "changed_fields": ["handler"], "handler": "x.y"},
            },
            {
                "event_id": "e-mapping",
                "time": "2026-11-21T09:55:00+00:00",
                "event_name": "UpdateEventSourceMapping20150331",
                "service": "lambda.amazonaws.com",
                "summary": {"uUID": "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "enabled": False},
            },
            {
                "event_id": "e-failed",
                "time": "2026-11-21T09:54:00+00:00",
                "event_name": "DeleteRolePolicy",
                "service": "iam.amazonaws.com",
                "error_code": "NoSuchEntity",
            },
        ],
        "note": "CloudTrail delivers events minutes after the call.",
    },
    "get_function_metrics": {
        "function_name": FUNCTION,
        "window_start": "2026-11-21T09:05:00+00:00",
        "window_end": "2026-11-21T10:05:00+00:00",
        "minutes": [
            {
                "timestamp": MINUTE,
                "invocations": 3,
                "errors": 3,
                "throttles": 2,
                "duration_max_ms": 3000,
                "concurrent_executions_max": 1,
            },
            {  # a minute in which most invocations succeeded and nothing was throttled
                "timestamp": "2026-11-21T10:01:00+00:00",
                "invocations": 5,
                "errors": 1,
                "throttles": 0,
                "duration_max_ms": 1200,
                "concurrent_executions_max": 1,
            },
        ],
        "invocations": 3,
        "errors": 3,
        "throttles": 2,
        "error_rate": 1,
        "first_error_minute": MINUTE,
        "first_throttle_minute": MINUTE,
        "timeout_seconds": 3,
        "max_duration_ms": 3000,
        "duration_to_timeout": 1,
        "memory_size_mb": 128,
        "peak_memory_used_mb": 128,
        "memory_to_size": 1,
        "log_group": LOG_GROUP,
        "report_lines": 3,
    },
    "get_event_sources": {
        "function_name": FUNCTION,
        "function_arn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
        "timeout_seconds": 3,
        "window_start": "2026-11-21T09:05:00+00:00",
        "window_end": "2026-11-21T10:05:00+00:00",
        "mappings": [
            {
                "UUID": "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
                "EventSourceArn": QUEUE,
                "FunctionArn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
                "State": "Disabled",
                "queue": {"QueueArn": QUEUE, "VisibilityTimeout": 2, "ApproximateNumberOfMessages": 42},
                "visibility_timeout_below_function_timeout": True,
            }
        ],
        "async_config": {"configured": False, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 21600},
        "apis": [
            {
                "api_id": "a1b2c3d4e5",
                "api_name": "orders-rest-api",
                "stage": "prod",
                "logging_level": "INFO",
                "api_source_arn": "arn:aws:execute-api:ca-central-1:123456789012:a1b2c3d4e5/*",
                "routes": [{"route": "POST /orders", "timeout_ms": 29000, "invoke_allowed": True}],
                "requests": 4.0,
                "server_errors": 2.0,
                "execution_errors": [
                    {
                        "at": "2026-11-21T10:01:00+00:00",
                        "message": "(r-1) Lambda execution failed with status 200 due to customer function "
                        "error: RuntimeError: boom. Lambda request id: r-1",
                    },
                    {
                        "at": "2026-11-21T10:02:00+00:00",
                        "message": "(r-2) Execution failed due to configuration error: Malformed Lambda "
                        "proxy response",
                    },
                ],
            }
        ],
    },
}


def _validated(responses: dict[str, dict[str, Any]]) -> dict[str, list[Any]]:
    """As the graph keeps them: each answer validated by its contract model and dumped to JSON data."""
    return {
        tool: [TOOLS[tool].response.model_validate(raw).model_dump(mode="json")]
        for tool, raw in responses.items()
    }


SEEN = _validated(WORLD)

_TOOLS: dict[str, ToolName] = {
    "logs": "get_recent_logs",
    "iam": "get_iam_state",
    "config": "get_lambda_config",
    "network": "get_network_state",
    "changes": "get_recent_changes",
    "metrics": "get_function_metrics",
    "sources": "get_event_sources",
}
Quote = tuple[str, str, str]  # (tool's short name, field, value)
LOG_DENIED: Quote = ("logs", "events.4.message", "(AccessDenied) when calling the GetObject operation")
LOG_TIMEOUT: Quote = ("logs", "events.6.message", "Task timed out after 3.00 seconds")
IAM_CHANGE: Quote = ("changes", "events.2.event_name", "DeleteRolePolicy")
LAMBDA_CHANGE: Quote = ("changes", "events.1.event_name", "PutFunctionConcurrency20171031")
EC2_CHANGE: Quote = ("changes", "events.0.event_name", "RevokeSecurityGroupEgress")
ERRORS: Quote = ("metrics", "errors", "3.0")
THROTTLES: Quote = ("metrics", "throttles", "2.0")


def _pointer(quote: Quote, supports: FaultType | None) -> EvidencePointer:
    tool, field, value = quote
    return EvidencePointer(
        tool=_TOOLS[tool], field=field, value=value, interpretation="seen", supports=supports
    )


MAPPING_CHANGE: Quote = ("changes", "events.4.event_name", "UpdateEventSourceMapping20150331")
CONFIG_CHANGE: Quote = ("changes", "events.3.event_name", "UpdateFunctionConfiguration20150331v2")
FAILED_CHANGE: Quote = ("changes", "events.5.event_name", "DeleteRolePolicy")
LIMIT_MISSING = "needs get_lambda_config ReservedConcurrentExecutions 0, reached, or null"

# (fault, the quotes cited with supports=fault, the pointers that support it or None, what is missing, the
# pointers refused because their value does not mean the fault)
Case = tuple[FaultType, list[Quote], list[int] | None, str, list[int]]
CASES: list[Case] = [
    (
        "permission_loss",  # an Allow of the denied action, scoped to another bucket
        [
            (
                "iam",
                "inline_policies.data-processor-access.Statement.0.Resource",
                "arn:aws:s3:::other-bucket/*",
            )
        ],
        [0],
        "",
        [],
    ),
    ("permission_loss", [IAM_CHANGE], [0], "", []),
    ("permission_loss", [LOG_DENIED, ("iam", "attached_policies", "[]")], [1], "", []),
    ("permission_loss", [FAILED_CHANGE], None, "needs get_iam_state policies", [0]),  # it changed nothing
    ("permission_loss", [LOG_DENIED], None, "needs get_iam_state policies", []),
    ("permission_loss", [LAMBDA_CHANGE], None, "needs get_iam_state policies", []),  # not an IAM event
    ("permission_loss", [ERRORS], None, "or an IAM policy change in get_recent_changes", []),
    ("throttling", [THROTTLES, ("config", "ReservedConcurrentExecutions", "0")], [0, 1], "", []),
    ("throttling", [THROTTLES, ("metrics", "minutes.0.concurrent_executions_max", "1.0")], [0, 1], "", []),
    ("throttling", [("metrics", "first_throttle_minute", MINUTE), LAMBDA_CHANGE], [0, 1], "", []),
    ("throttling", [("metrics", "minutes.0.throttles", "2.0"), IAM_CHANGE], None, LIMIT_MISSING, []),
    ("throttling", [THROTTLES], None, LIMIT_MISSING, []),  # throttles, but no limit that explains them
    (
        "throttling",
        [("config", "ReservedConcurrentExecutions", "0")],
        None,
        "needs get_function_metrics throttles above 0",
        [],
    ),
    ("throttling", [LOG_DENIED, ("config", "ReservedConcurrentExecutions", "0")], None, "throttles", []),
    ("throttling", [("metrics", "minutes.1.throttles", "0.0"), LAMBDA_CHANGE], None, "throttles", [0]),
    (
        "throttling",  # the peak concurrency of a minute nothing was throttled in
        [THROTTLES, ("metrics", "minutes.1.concurrent_executions_max", "1.0")],
        None,
        LIMIT_MISSING,
        [1],
    ),
    ("throttling", [THROTTLES, CONFIG_CHANGE], None, LIMIT_MISSING, [1]),  # not a concurrency change
    ("network_block", [("network", "https_egress_allowed", "false")], [0], "", []),
    ("network_block", [("network", "egress.0.allowed", "false")], [0], "", []),
    ("network_block", [("network", "egress.0.reasons.0", "sg-1 allows no outbound tcp/443")], [0], "", []),
    ("network_block", [EC2_CHANGE], [0], "", []),
    ("network_block", [LOG_TIMEOUT], None, "needs get_network_state blocked verdicts", []),
    ("network_block", [IAM_CHANGE], None, "or an EC2 network change in get_recent_changes", []),
    ("network_block", [("metrics", "duration_to_timeout", "1.0")], None, "needs get_network_state", []),
    ("timeout", [("metrics", "duration_to_timeout", "1.0")], [0], "", []),
    ("timeout", [("metrics", "minutes.0.duration_max_ms", "3000.0")], [0], "", []),
    ("timeout", [("metrics", "minutes.1.duration_max_ms", "1200.0")], None, "durations", [0]),  # not at 3 s
    ("timeout", [("config", "Timeout", "3")], None, "needs get_function_metrics durations", []),
    ("timeout", [LOG_TIMEOUT], None, "needs get_function_metrics durations", []),
    ("out_of_memory", [("metrics", "memory_to_size", "1.0")], [0], "", []),
    ("out_of_memory", [("metrics", "peak_memory_used_mb", "128")], [0], "", []),
    ("out_of_memory", [("config", "MemorySize", "128")], None, "needs get_function_metrics memory", []),
    ("code_error", [ERRORS], [0], "", []),
    ("code_error", [ERRORS, ("config", "CodeSha256", "c2hhMjU2LW9mLXRoZS1jb2Rl")], [0], "", []),
    ("code_error", [("config", "Aliases.0.FunctionVersion", "2")], None, "errors above 0", []),  # context
    ("code_error", [LAMBDA_CHANGE], None, "needs get_function_metrics errors", []),
    ("code_error", [LOG_DENIED], None, "needs get_function_metrics errors", []),
    ("code_error", [("metrics", "minutes.1.errors", "1.0")], [0], "", []),
    (
        "configuration_error",
        [("config", "Handler", "data_processor.process")],
        [0],
        "",
        [],
    ),  # a change set it
    ("configuration_error", [CONFIG_CHANGE], [0], "", []),
    (
        "configuration_error",  # no change in the history set the environment
        [("config", "EnvironmentVariableNames", '["BUCKET"]')],
        None,
        "needs get_lambda_config",
        [0],
    ),
    ("configuration_error", [LAMBDA_CHANGE], None, "needs get_lambda_config", [0]),  # a concurrency change
    ("configuration_error", [ERRORS], None, "needs get_lambda_config", []),
    ("configuration_error", [EC2_CHANGE], None, "needs get_lambda_config", []),
    (
        "configuration_error",
        [("sources", "mappings.0.visibility_timeout_below_function_timeout", "true")],
        [0],
        "",
        [],
    ),
    ("dependency_failure", [ERRORS], [0], "", []),
    ("dependency_failure", [("metrics", "error_rate", "1.0")], [0], "", []),
    ("dependency_failure", [LOG_DENIED], None, "needs get_function_metrics errors", []),
    ("dependency_failure", [("config", "Handler", "data_processor.process")], None, "errors", []),
    (
        "bad_input",
        [("metrics", "minutes.1.errors", "1.0"), ("metrics", "minutes.1.invocations", "5.0")],
        [0, 1],
        "",
        [],
    ),
    (
        "bad_input",  # every invocation of the minute failed: nothing succeeded beside the failures
        [("metrics", "minutes.0.errors", "3.0"), ("metrics", "minutes.0.invocations", "3.0")],
        None,
        "invocations above that minute's errors",
        [1],
    ),
    ("bad_input", [ERRORS], None, "needs get_function_metrics minutes.<n>.invocations above", []),
    (
        "bad_input",
        [LOG_DENIED, ("metrics", "invocations", "3.0")],
        None,
        "needs get_function_metrics errors",
        [],
    ),
    (
        "event_source_stopped",
        [
            ("sources", "mappings.0.State", "Disabled"),
            ("sources", "mappings.0.queue.ApproximateNumberOfMessages", "42"),
        ],
        [0, 1],
        "",
        [],
    ),
    ("event_source_stopped", [("sources", "mappings.0.State", "Disabled"), MAPPING_CHANGE], [0, 1], "", []),
    (
        "event_source_stopped",  # a concurrency change does not stop a mapping
        [("sources", "mappings.0.State", "Disabled"), LAMBDA_CHANGE],
        None,
        "needs get_event_sources backlog",
        [1],
    ),
    (
        "event_source_stopped",
        [("sources", "mappings.0.State", "Disabled")],
        None,
        "needs get_event_sources backlog",
        [],
    ),
    ("event_source_stopped", [MAPPING_CHANGE, ERRORS], None, "needs get_event_sources a stopped path", []),
    ("resource_exhausted", [ERRORS, ("config", "EphemeralStorageMb", "512")], [0, 1], "", []),
    (
        "resource_exhausted",  # a full /tmp in the logs is not enough: the size and the errors back it
        [ERRORS, ("logs", "events.9.message", "[ERROR] OSError: [Errno 28] No space left on device")],
        None,
        "needs get_lambda_config EphemeralStorageMb",
        [],
    ),
    ("platform_refused", [("config", "EnvironmentKey.KeyState", "Disabled")], [0], "", []),
    ("platform_refused", [("config", "EnvironmentKey.DecryptGrantees", "[]")], [0], "", []),
    (
        "platform_refused",  # the key named, not what state it is in
        [
            (
                "config",
                "KMSKeyArn",
                f"arn:aws:kms:ca-central-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            )
        ],
        None,
        "needs get_lambda_config EnvironmentKey.KeyState not Enabled",
        [],
    ),
    ("platform_refused", [ERRORS], None, "needs get_lambda_config EnvironmentKey", []),
    (
        "invocation_contract",
        [
            (
                "sources",
                "apis.0.execution_errors.1.message",
                "(r-2) Execution failed due to configuration error: Malformed Lambda proxy response",
            )
        ],
        [0],
        "",
        [],
    ),
    (
        "invocation_contract",  # API Gateway's line about the function's own error: the code's fault
        [
            (
                "sources",
                "apis.0.execution_errors.0.message",
                "(r-1) Lambda execution failed with status 200 due to customer function error: RuntimeError: "
                "boom. Lambda request id: r-1",
            )
        ],
        None,
        "needs get_event_sources apis.<n>.execution_errors.<m>:",
        [0],
    ),
    (
        "invocation_contract",
        [("sources", "apis.0.server_errors", "2.0")],
        None,
        "needs get_event_sources",
        [],
    ),
]


def _case_id(case: Case) -> str:
    fault, quotes, supported, _, _ = case
    cited = "+".join(f"{tool}.{field}" for tool, field, _ in quotes)
    return f"{fault}-{'supported' if supported is not None else 'unsupported'}-by-{cited}"


def test_every_fault_type_is_in_the_policy_and_in_the_table() -> None:
    reportable = set(FAULT_TYPES) - {"unknown"}
    assert set(POLICY) == reportable
    for fault in reportable:
        verdicts = {supported is not None for f, _, supported, _, _ in CASES if f == fault}
        assert verdicts == {True, False}, fault  # at least one supported and one unsupported case each
        assert f"- {fault}: " in describe_policy()


def test_the_world_is_what_the_tools_would_answer() -> None:
    assert set(WORLD) == set(TOOL_NAMES)  # and _validated() above validated each against the contract


@pytest.mark.parametrize(
    ("fault", "quotes", "supported", "missing", "refused"), CASES, ids=list(map(_case_id, CASES))
)
def test_which_verified_pointers_support_a_fault_type(
    fault: FaultType, quotes: list[Quote], supported: list[int] | None, missing: str, refused: list[int]
) -> None:
    evidence = [_pointer(quote, fault).model_dump() for quote in quotes]
    payload = submission(fault_types=[fault], evidence=evidence, remediation_plan=[])
    verification = verify(DiagnosisSubmission.model_validate(payload), SEEN, 0, FUNCTION)
    assert [c.reason for c in verification.pointers] == [""] * len(quotes)  # every value is really there
    (backing,) = verification.support
    assert backing.fault_type == fault
    if supported is not None:
        assert (backing.supported_by, backing.missing) == (supported, "")
        assert verification.unsupported_fault_types == []
        assert verification.passed
    else:
        assert backing.supported_by == []
        assert missing in backing.missing
        assert verification.unsupported_fault_types == [fault]
        assert not verification.passed
    assert [r.index for r in backing.refused] == refused  # cited from a source, but the value says otherwise
    assert not (refused and verification.passed)
    logs = [i for i, quote in enumerate(quotes) if quote[0] == "logs"]
    assert set(logs) <= set(backing.detail)  # log pointers are recorded as detail, never as support


LIMIT: Quote = ("config", "ReservedConcurrentExecutions", "0")


@pytest.mark.parametrize(
    ("second", "backed"),
    [
        (_pointer(LIMIT, "throttling"), [0, 1]),
        (_pointer(LIMIT, None), []),  # context, not support
        (_pointer(LIMIT, "timeout"), []),  # support for another fault
        (_pointer((*LIMIT[:2], "5"), "throttling"), []),  # a value that is not there
    ],
    ids=["supports-throttling", "supports-nothing", "supports-another-fault", "not-verified"],
)
def test_only_verified_pointers_that_name_the_fault_count(second: EvidencePointer, backed: list[int]) -> None:
    evidence = [_pointer(THROTTLES, "throttling").model_dump(), second.model_dump()]
    payload = submission(evidence=evidence, remediation_plan=[])
    verification = verify(DiagnosisSubmission.model_validate(payload), SEEN, 0, FUNCTION)
    assert verification.support[0].supported_by == backed
    assert verification.unsupported_fault_types == ([] if backed else ["throttling"])


def test_unknown_needs_no_support() -> None:
    assert support(["unknown"], [], [], SEEN) == []


# --------------------------------------------------------------------------- the log rule


def _log_check(index: int, value: str, supports: FaultType | None) -> str:
    pointer = EvidencePointer(
        tool="get_recent_logs",
        field=f"events.{index}.message",
        value=value,
        interpretation="seen",
        supports=supports,
    )
    payload = submission(fault_types=["unknown"], evidence=[pointer.model_dump()], remediation_plan=[])
    return verify(DiagnosisSubmission.model_validate(payload), SEEN, 0, FUNCTION).pointers[0].reason


def test_a_line_the_code_printed_cited_for_a_fault_is_not_verified() -> None:
    reason = _log_check(1, "is not authorized to perform: iam:PassRole", "permission_loss")
    assert "events.1 is a line the function's code printed (kind 'function')" in reason
    assert "not the terminal error of a failed invocation" in reason
    assert "cite it with supports=null" in reason


def test_the_same_line_cited_as_context_is_verified() -> None:
    assert _log_check(1, "is not authorized to perform: iam:PassRole", None) == ""


def test_an_error_record_of_an_invocation_that_did_not_fail_is_not_verified() -> None:
    reason = _log_check(2, "is not authorized to perform: iam:PassRole", "permission_loss")
    assert reason == (
        "events.2 is not the terminal error of an invocation that failed "
        "(request r-ok: its REPORT line shows no_error_seen)"
    )
    assert _log_check(2, "is not authorized to perform: iam:PassRole", None) == ""


def test_an_error_record_in_no_invocation_read_is_not_verified() -> None:
    reason = _log_check(7, "(AccessDenied)", "permission_loss")
    assert "request None: its REPORT line shows no failure that was read" in reason


@pytest.mark.parametrize(
    ("index", "value"), [(4, "(AccessDenied)"), (6, "Task timed out after 3.00 seconds")]
)
def test_the_terminal_error_of_a_failed_invocation_is_verified(index: int, value: str) -> None:
    assert _log_check(index, value, "permission_loss") == ""


def test_the_log_rule_judges_only_event_lines_of_pointers_that_support_something() -> None:
    logs = SEEN["get_recent_logs"][0]
    outcome = EvidencePointer(
        tool="get_recent_logs", field="invocations.0.outcome", value="no_error_seen", interpretation="x"
    )
    assert log_problem(outcome.model_copy(update={"supports": "timeout"}), logs) == ""
    config = EvidencePointer(
        tool="get_lambda_config",
        field="Handler",
        value="x",
        interpretation="x",
        supports="configuration_error",
    )
    assert log_problem(config, logs) == ""


# --------------------------------------------------------------------------- through the graph


def _canned(responses: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {tool: json.dumps(raw) for tool, raw in responses.items()}


def _log_claim(index: int, value: str) -> dict[str, Any]:
    claim = {
        "tool": "get_recent_logs",
        "field": f"events.{index}.message",
        "value": value,
        "interpretation": "The role was denied",
        "supports": "permission_loss",
    }
    return call(
        SUBMIT_TOOL,
        submission(
            root_cause="The role lost s3:GetObject.",
            fault_types=["permission_loss"],
            severity="high",
            evidence=[claim],
            remediation_plan=[
                {
                    "action": "Grant s3:GetObject back",
                    "details": "Put the statement back.",
                    "evidence_basis": [0],
                    "risk_level": "medium",
                    "requires_approval": True,
                }
            ],
            confidence=0.95,
        ),
    )


async def test_permission_loss_from_a_failed_invocations_log_line_alone_is_unsupported() -> None:
    claim = _log_claim(4, "(AccessDenied) when calling the GetObject operation")
    model = ScriptedChatModel([ai(call("get_recent_logs")), ai(claim), ai(claim)])
    run = await diagnose_with(model, _canned(WORLD))
    refusal = str(run.replies(SUBMIT_TOOL)[0].content)
    assert "fault type 'permission_loss' is not corroborated" in refusal
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert [c.verified for c in diagnosis.verification.pointers] == [True]  # a real failure's line ...
    assert diagnosis.fault_types == ["unknown"]  # ... proves nothing alone: the fault is taken out
    assert [r.claim for r in diagnosis.refused] == [
        "fault_types.permission_loss",
        "remediation_plan.0",  # the step fixes only the fault taken out
        "root_cause",
    ]
    assert diagnosis.refused[0].reason.startswith("not corroborated: needs get_iam_state policies")
    assert diagnosis.evidence[0].supports is None  # the line stays, as context
    assert diagnosis.verification.claimed_confidence == 0.95
    assert diagnosis.confidence == 0.0


async def test_permission_loss_from_a_printed_line_is_unsupported_and_unverified() -> None:
    claim = _log_claim(1, "is not authorized to perform: iam:PassRole")
    model = ScriptedChatModel([ai(call("get_recent_logs")), ai(claim), ai(claim)])
    run = await diagnose_with(model, _canned(WORLD))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert [r.claim for r in diagnosis.refused] == [
        "evidence.0",
        "fault_types.permission_loss",
        "remediation_plan.0",
        "root_cause",
    ]
    assert "kind 'function'" in diagnosis.refused[0].reason
    assert (diagnosis.fault_types, diagnosis.evidence, diagnosis.remediation_plan) == (["unknown"], [], [])
    assert diagnosis.confidence == 0.0


def _healthy(logs: dict[str, Any], errors: float) -> dict[str, dict[str, Any]]:
    """A working function with a role that allows what it does; only the logs and the error count vary."""
    arn = f"arn:aws:logs:ca-central-1:{ACCOUNT}:log-group:{LOG_GROUP}"
    return {
        "get_recent_logs": logs,
        "get_iam_state": {
            "role_name": ROLE,
            "inline_policies": {
                "data-processor-access": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": ["s3:GetObject", "s3:PutObject"],
                            "Resource": "arn:aws:s3:::data-processor-input/*",
                        },
                        {
                            "Effect": "Allow",
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": [f"{arn}:*", f"{arn}:log-stream:*"],
                        },
                    ],
                }
            },
            "attached_policies": [],
        },
        "get_lambda_config": WORLD["get_lambda_config"]
        | {
            "Handler": "data_processor.handler",
            "ReservedConcurrentExecutions": None,
            "Timeout": 30,
            "EnvironmentKey": {
                "KeyState": "Enabled",
                "DecryptGrantees": [WORLD["get_lambda_config"]["Role"]],
            },
        },
        "get_network_state": {"function_name": FUNCTION, "in_vpc": False, "note": "not in a VPC"},
        "get_recent_changes": WORLD["get_recent_changes"]
        | {"events": [], "matched_events": 0, "returned_events": 0},
        "get_function_metrics": WORLD["get_function_metrics"]
        | {
            "minutes": [{"timestamp": MINUTE, "invocations": 2, "errors": errors, "duration_max_ms": 120}],
            "invocations": 2,
            "errors": errors,
            "throttles": 0,
            "error_rate": errors / 2,
            "first_error_minute": MINUTE if errors else None,
            "first_throttle_minute": None,
            "timeout_seconds": 30,
            "max_duration_ms": 120,
            "duration_to_timeout": 0.004,
            "peak_memory_used_mb": 60,
            "memory_to_size": 0.469,
            "report_lines": 2,
        },
    }


def _passrole_logs(outcome: str) -> dict[str, Any]:
    """The PassRole denial printed by the code, and the same text as the error record of request r-2."""
    return _logs(
        [
            _line("START RequestId: r-1 Version: $LATEST", "r-1", "start"),
            _line(PASSROLE, "r-1", "function", 1),
            _line("START RequestId: r-2 Version: $LATEST", "r-2", "start", 2),
            _line(BOTO.format("PassRole", PASSROLE), "r-2", "error_record", 3),
        ],
        {"r-1": "no_error_seen", "r-2": outcome},
    )


async def test_the_rules_model_is_not_steered_by_a_denial_no_invocation_died_of() -> None:
    run = await diagnose_with(RulesChatModel(), _canned(_healthy(_passrole_logs("no_error_seen"), 0)))
    assert [call.tool_calls for call in run.accounting.llm_calls] == [list(TOOL_NAMES), [SUBMIT_TOOL]]
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.fault_types == ["unknown"]
    assert diagnosis.verification.passed
    assert diagnosis.remediation_plan == []  # no step, so none about PassRole
    assert "PassRole" not in diagnosis.root_cause
    assert [p for p in diagnosis.evidence if p.tool == "get_recent_logs"] == []  # the line is not cited
    assert "permission_loss" in {r.fault_type for r in diagnosis.ruled_out}  # the role allows what it does


def _passrole_granted_before(world: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The change history shows the role's inline policy written with an iam:PassRole grant, which the
    policy it has now lacks: a permission the role had, and lost."""
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}],
    }
    event = {
        "event_id": "e-put",
        "time": "2026-11-21T09:50:00+00:00",
        "event_name": "PutRolePolicy",
        "service": "iam.amazonaws.com",
        "identity_arn": f"arn:aws:iam::{ACCOUNT}:user/operator",
        "summary": {"roleName": ROLE, "policyName": "passing", "policyDocument": json.dumps(document)},
    }
    changes = world["get_recent_changes"] | {"events": [event], "matched_events": 1, "returned_events": 1}
    return world | {"get_recent_changes": changes}


async def test_the_same_denial_as_the_terminal_error_of_failed_invocations_is_found() -> None:
    """The control of the test above: only the invocation's outcome and the error count differ (and the
    history shows the role once had the permission: a denial of what it never had is no loss)."""
    world = _passrole_granted_before(_healthy(_passrole_logs("error_record"), 1))
    run = await diagnose_with(RulesChatModel(), _canned(world))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.fault_types == ["permission_loss"]
    assert diagnosis.verification.passed
    assert "does not allow iam:PassRole on arn:aws:iam::123456789012:role/admin" in diagnosis.root_cause


async def test_a_denial_of_what_the_role_never_had_is_no_permission_loss() -> None:
    """The same failed invocation without the earlier grant: the role never allowed iam:PassRole, so no
    permission was lost (forged lines, or code calling what it never could)."""
    run = await diagnose_with(RulesChatModel(), _canned(_healthy(_passrole_logs("error_record"), 1)))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.fault_types == ["unknown"]  # not permission_loss
    assert "PassRole" not in diagnosis.root_cause
