"""The independent judge's own rules, edge by edge: what a quote must be to match a value, what a value
must say to support a fault, and the claims it checks beyond pointers. Each refused case is the honest one
with one thing made wrong, so removing a rule makes its refusal pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chaos.drill.grounding import judge, quotes
from chaos.drill.sent_answers import SentAnswer, values_at
from chaos.drill.value_meanings import MEANINGS

MESSAGE = "An error occurred (AccessDenied) when calling the GetObject operation"


@pytest.mark.parametrize(
    ("quote", "value", "matches"),
    [
        # numbers: by value, never a digit run inside one, a boolean never a number
        ("4", 4.0, True),
        ("4.0", 4, True),
        (" 4 ", 4, True),
        ("1392", 1392, True),
        ("139", 1392, False),
        ("1", 1.5, False),
        ("1.5", 1.5, True),
        ('"4"', 4, False),
        ("four", 4, False),
        ("1", True, False),
        ("true", 1, False),
        ("0", False, False),
        ("false", 0, False),
        # booleans and null: only themselves, JSON or Python spelling
        ("true", True, True),
        ("True", True, True),
        ("false", False, True),
        ("False", False, True),
        ("false", True, False),
        ("TRUE", True, False),
        ("null", None, True),
        ("None", None, True),
        ("0", None, False),
        ("false", None, False),
        ('""', None, False),
        ("null", 0, False),
        ("None", False, False),
        # lists and objects: whole, equal after parsing, key order free
        ('["s3:GetObject", "s3:PutObject"]', ["s3:GetObject", "s3:PutObject"], True),
        ('["s3:GetObject"]', ["s3:GetObject", "s3:PutObject"], False),
        ("s3:GetObject", ["s3:GetObject"], False),
        ('{"b": 2, "a": 1}', {"a": 1, "b": 2}, True),
        ('{"a": 1}', {"a": 1, "b": 2}, False),
        ("[1.0]", [1], True),
        ("[true]", [1], False),
        ("[]", [], True),
        ("{}", {}, True),
        ("[]", {}, False),
        # strings quoted whole: stripped, or as a JSON string literal; case counts
        ("Disabled", "Disabled", True),
        ("  Disabled ", "Disabled\n", True),
        ('"Disabled"', "Disabled", True),
        ("disabled", "Disabled", False),
        ("ERR", "ERR", True),
        ("", "", True),
        ("", "Disabled", False),
        # a part: at least 8 characters, on token boundaries, any one bounded occurrence
        ("AccessDenied", MESSAGE, True),
        ("An error", MESSAGE, True),  # exactly 8
        ("error", MESSAGE, False),  # bounded, but too short
        ("ERR", "ERR: something failed", False),
        ("Err", "Error: something failed", False),
        ("ion", MESSAGE, False),
        ("ccessDenied", MESSAGE, False),  # starts inside a token
        ("AccessDenie", MESSAGE, False),  # ends inside a token
        ("accessdenied", MESSAGE, False),
        ("when calling the GetObject", MESSAGE, True),
        ("xAccessDenied or (AccessDenied)", "xAccessDenied or (AccessDenied)", True),
        ("AccessDenied", "xAccessDenied, then AccessDenied", True),  # the second occurrence is bounded
        ("AccessDenied", "xAccessDenied, then AccessDeniedException", False),
        # a dot or comma between digits joins them into one token; elsewhere it is a boundary
        ("3003", "Duration: 3003.12 ms", False),
        ("Duration: 3003", "Duration: 3003.12 ms", False),
        ("3003.12 ms", "Duration: 3003.12 ms", True),
        ("Duration: 3003.12", "Duration: 3003.12 ms", True),
        ("processed 1", "processed 1,392 records", False),
        ("processed 1,392", "processed 1,392 records", True),
        ("it costs 3", "it costs 3.00 CAD", False),
        ("it costs 3.00", "it costs 3.00 CAD", True),
        ("it ends here", "it ends here. Next", True),
        ("it ends here", "it ends here,5 more", True),
        ("value of my", "value of my_var is set", False),
        ("139", "1392", False),
    ],
)
def test_the_pointer_rule(quote: str, value: Any, matches: bool) -> None:
    assert quotes(quote, value) is matches


def _pointer(tool: str, field: str, value: str, supports: str | None = None) -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": value, "interpretation": "-", "supports": supports}


def test_a_quote_from_a_sibling_field_is_not_found() -> None:
    metrics = {"throttles": 0.0, "invocations": 3.0}
    for field, found in (("throttles", False), ("invocations", True)):
        grounding = judge(
            {"fault_types": ["unknown"], "evidence": [_pointer("get_function_metrics", field, "3")]},
            [SentAnswer("get_function_metrics", {}, metrics)],
        )
        assert grounding.findings[0].found is found


def test_a_key_with_dots_is_followed_every_way() -> None:
    iam = {"inline_policies": {"v1.2-access": {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}}}
    for field, found in (
        ("inline_policies.v1.2-access.Statement.0.Action", True),
        ("inline_policies.v1.2-access.Statement.1.Action", False),
        ("inline_policies.v1.Statement.0.Action", False),
    ):
        pointer = _pointer("get_iam_state", field, "s3:GetObject")
        grounding = judge(
            {"fault_types": ["unknown"], "evidence": [pointer]}, [SentAnswer("get_iam_state", {}, iam)]
        )
        assert grounding.findings[0].found is found


# --- support: each entry with an honest value, and the same value made dishonest -------------------------

CHANGE = {"event_name": "UpdateFunctionConfiguration20150331v2", "identity_arn": "arn:aws:iam::1:user/o"}
CHANGES = SentAnswer("get_recent_changes", {}, {"events": [CHANGE]})
FAILED_CHANGES = SentAnswer("get_recent_changes", {}, {"events": [CHANGE | {"error_code": "AccessDenied"}]})
ROLE_CHANGES = SentAnswer("get_recent_changes", {}, {"events": [{"event_name": "PutRolePolicy"}]})
READER = "arn:aws:iam::210987654321:user/report-reader"
_WROTE_FOR_URL = {
    "event_name": "AddPermission20150331v2",
    "summary": {"statementId": "s", "principal": READER, "functionUrlAuthType": "AWS_IAM"},
}
_REMOVED = {"event_name": "RemovePermission20150331v2", "summary": {"statementId": "s"}}
URL_GRANT_TAKEN_OUT = SentAnswer(
    "get_recent_changes", {}, {"events": [_REMOVED, _WROTE_FOR_URL]}
)  # newest first
URL_GRANT_PUT_BACK = SentAnswer(
    "get_recent_changes", {}, {"events": [_WROTE_FOR_URL, _REMOVED, _WROTE_FOR_URL]}
)


def _minute(**values: float) -> dict[str, Any]:
    return {"timestamp": "2026-11-28T16:40:00+00:00"} | values


def _statement(effect: str, action: Any, resource: Any) -> dict[str, Any]:
    return {"Effect": effect, "Action": action, "Resource": resource}


DENY = _statement("Deny", "s3:GetObject", "*")
SCOPED = _statement("Allow", "s3:GetObject", "arn:aws:s3:::other-bucket/*")
ON_EVERYTHING = _statement("Allow", "s3:GetObject", "*")
EVERY_ACTION = _statement("Allow", "*", "arn:aws:s3:::input/*")
EVERY_S3_ACTION = _statement("Allow", ["s3:*"], "*")
S3_ACTIONS_SCOPED = _statement("Allow", "s3:*", "arn:aws:s3:::input/*")
LOGS_ON_EVERYTHING = _statement("Allow", ["logs:CreateLogStream", "logs:PutLogEvents"], "*")


def _iam(*statements: dict[str, Any], boundary: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "role_name": "r",
        "inline_policies": {"access": {"Version": "2012-10-17", "Statement": list(statements)}},
        "attached_policies": [],
        "permissions_boundary": None,
    }
    if boundary is not None:
        answer["permissions_boundary"] = {
            "arn": "arn:aws:iam::1:policy/b",
            "document": {"Statement": boundary},
        }
    return answer


def _network(*verdicts: dict[str, Any], https: bool = False) -> dict[str, Any]:
    return {"in_vpc": True, "https_egress_allowed": https, "egress": list(verdicts)}


BLOCKED_REASON, ALLOWED_REASON = "no egress rule of sg-1 allows 443", "sg-1 allows 0.0.0.0/0"
BLOCKED = {"destination": "s3", "allowed": False, "reasons": [BLOCKED_REASON]}
ALLOWED = {"destination": "s3", "allowed": True, "reasons": [ALLOWED_REASON]}

GROUNDS, REFUSED, UNSUPPORTED, NOT_FOUND = (
    "grounds",
    "does not show it",
    "no re-found pointer",
    "not re-found",
)
METRICS, CONFIG, NETWORK, IAM, SOURCES = (
    "get_function_metrics",
    "get_lambda_config",
    "get_network_state",
    "get_iam_state",
    "get_event_sources",
)
PEAK_1 = SentAnswer(METRICS, {}, {"minutes": [_minute(concurrent_executions_max=1.0)]})


def _case(
    fault: str, tool: str, field: str, quote: str, answer: dict[str, Any], outcome: str, *others: SentAnswer
) -> Any:
    return pytest.param(
        fault, tool, field, quote, answer, outcome, list(others), id=f"{fault}-{field}-{quote[:24]}"
    )


def _policies(statement: dict[str, Any]) -> dict[str, Any]:
    return {"inline_policies": {"access": {"Statement": [statement]}}}


def _values(answer: dict[str, Any], field: str) -> list[Any]:
    return list(values_at(answer, field.split(".")))


RAN_1004 = SentAnswer(METRICS, {}, {"minutes": [_minute(duration_max_ms=1004.5)]})


def _http_stage(wait: int, status: int, protocol: str | None = "HTTP") -> dict[str, Any]:
    stage = {"routes": [{"timeout_ms": wait}], "execution_errors": [{"message": "{}", "status": status}]}
    return {"apis": [stage | ({"protocol": protocol} if protocol else {})]}


SUPPORT_CASES = [
    # an HTTP API's 503 or 504 beside a route that waits less than a minute's longest run; else nothing
    *(
        _case(
            "invocation_contract", SOURCES, "apis.0.execution_errors.0.status", quote, answer, outcome, *ran
        )
        for quote, answer, outcome, ran in (
            ("503", _http_stage(300, 503), GROUNDS, [RAN_1004]),
            ("504", _http_stage(300, 504), GROUNDS, [RAN_1004]),
            ("503", _http_stage(300, 503), REFUSED, []),  # no metrics answer: how long it ran is unknown
            ("503", _http_stage(1200, 503), REFUSED, [RAN_1004]),  # the route waited long enough
            ("500", _http_stage(300, 500), REFUSED, [RAN_1004]),  # the function's own failure
            ("503", _http_stage(300, 503, protocol=None), REFUSED, [RAN_1004]),  # a REST stage's
        )
    ),
    *(
        _case(
            "permission_loss",
            "get_event_sources",
            "function_url.granted_callers",
            "[]",
            {"function_url": {"granted_callers": []}},
            outcome,
            *history,
        )
        for history, outcome in (
            ((URL_GRANT_TAKEN_OUT,), GROUNDS),
            ((URL_GRANT_PUT_BACK,), REFUSED),  # written again since: nobody was taken out
            ((SentAnswer("get_recent_changes", {}, {"events": [_WROTE_FOR_URL]}),), REFUSED),
            ((), REFUSED),
        )
    ),
    _case("throttling", METRICS, "throttles", "3.0", {"throttles": 3.0}, GROUNDS),
    _case("throttling", METRICS, "throttles", "0", {"throttles": 0.0}, REFUSED),
    _case("throttling", METRICS, "minutes.0.throttles", "2", {"minutes": [_minute(throttles=2)]}, GROUNDS),
    _case("throttling", METRICS, "minutes.0.throttles", "0", {"minutes": [_minute(throttles=0)]}, REFUSED),
    _case(
        "throttling", METRICS, "first_throttle_minute", "16:40", {"first_throttle_minute": "16:40"}, GROUNDS
    ),
    _case("throttling", METRICS, "first_throttle_minute", "null", {"first_throttle_minute": None}, REFUSED),
    _case(
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "0",
        {"ReservedConcurrentExecutions": 0},
        GROUNDS,
    ),
    _case(  # no reservation, and nothing throttled in the metrics sent
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "null",
        {"ReservedConcurrentExecutions": None},
        REFUSED,
        SentAnswer(METRICS, {}, {"throttles": 0.0}),
    ),
    _case(  # no reservation: the account's pool, which refused the throttled requests
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "null",
        {"ReservedConcurrentExecutions": None},
        GROUNDS,
        SentAnswer(METRICS, {}, {"throttles": 2.0}),
    ),
    _case(
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "1",
        {"ReservedConcurrentExecutions": 1},
        GROUNDS,
        PEAK_1,
    ),
    _case(
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "2",
        {"ReservedConcurrentExecutions": 2},
        REFUSED,
        PEAK_1,
    ),
    _case(
        "throttling",
        CONFIG,
        "ReservedConcurrentExecutions",
        "1",
        {"ReservedConcurrentExecutions": 1},
        REFUSED,
    ),
    _case(
        "throttling",
        METRICS,
        "minutes.0.concurrent_executions_max",
        "1",
        {"minutes": [_minute(concurrent_executions_max=1, throttles=2)]},
        GROUNDS,
    ),
    _case(
        "throttling",
        METRICS,
        "minutes.0.concurrent_executions_max",
        "1",
        {"minutes": [_minute(concurrent_executions_max=1, throttles=0)]},
        REFUSED,
    ),
    _case(
        "throttling",
        METRICS,
        "minutes.0.concurrent_executions_max",
        "0",
        {"minutes": [_minute(concurrent_executions_max=0, throttles=2)]},
        REFUSED,
    ),
    *(
        _case(fault, METRICS, field, quote, answer, outcome)
        for fault in ("code_error", "dependency_failure", "bad_input")
        for field, quote, answer, outcome in (
            ("errors", "1", {"errors": 1.0}, GROUNDS),
            ("errors", "0.0", {"errors": 0.0}, REFUSED),
            ("errors", "139", {"errors": 1392}, NOT_FOUND),
            ("error_rate", "0.5", {"error_rate": 0.5}, GROUNDS),
            ("error_rate", "0", {"error_rate": 0}, REFUSED),
            ("minutes.0.errors", "3", {"minutes": [_minute(errors=3)]}, GROUNDS),
            ("minutes.0.errors", "0", {"minutes": [_minute(errors=0)]}, REFUSED),
            ("first_error_minute", "16:40", {"first_error_minute": "16:40"}, GROUNDS),
            ("first_error_minute", "None", {"first_error_minute": None}, REFUSED),
        )
    ),
    _case(
        "code_error", METRICS, "timeout_seconds", "3", {"timeout_seconds": 3}, UNSUPPORTED
    ),  # not in the table
    _case(
        "bad_input",
        METRICS,
        "minutes.0.invocations",
        "6",
        {"minutes": [_minute(invocations=6, errors=3)]},
        GROUNDS,
    ),
    _case(
        "bad_input",
        METRICS,
        "minutes.0.invocations",
        "3",
        {"minutes": [_minute(invocations=3, errors=3)]},
        REFUSED,
    ),
    _case(
        "bad_input",
        METRICS,
        "minutes.0.invocations",
        "3",
        {"minutes": [_minute(invocations=3, errors=0)]},
        REFUSED,
    ),
    _case(
        "bad_input",
        SOURCES,
        "mappings.0.dead_letter_queue.ApproximateNumberOfMessages",
        "1",
        {"mappings": [{"dead_letter_queue": {"ApproximateNumberOfMessages": 1}}]},
        GROUNDS,
    ),
    _case(
        "bad_input",
        SOURCES,
        "mappings.0.dead_letter_queue.ApproximateNumberOfMessages",
        "0",
        {"mappings": [{"dead_letter_queue": {"ApproximateNumberOfMessages": 0}}]},
        REFUSED,
    ),
    _case(
        "bad_input",
        SOURCES,
        "mappings.0.queue.messages_deleted",
        "2",
        {"mappings": [{"queue": {"messages_deleted": 2.0}}]},
        GROUNDS,
    ),
    _case(
        "bad_input",
        SOURCES,
        "mappings.0.queue.messages_deleted",
        "0",
        {"mappings": [{"queue": {"messages_deleted": 0.0}}]},
        REFUSED,
    ),
    _case(
        "bad_input",
        SOURCES,
        "async_config.metrics.DeadLetterErrors",
        "1",
        {"async_config": {"metrics": {"DeadLetterErrors": 1.0}}},
        GROUNDS,
    ),
    _case(
        "bad_input",
        SOURCES,
        "async_config.metrics.DeadLetterErrors",
        "0",
        {"async_config": {"metrics": {"DeadLetterErrors": 0.0}}},
        REFUSED,
    ),
    _case(
        "bad_input",
        SOURCES,
        "subscriptions.0.notifications_failed",
        "2",
        {"subscriptions": [{"notifications_failed": 2}]},
        GROUNDS,
    ),
    _case(
        "bad_input",
        SOURCES,
        "subscriptions.0.notifications_failed",
        "0",
        {"subscriptions": [{"notifications_failed": 0}]},
        REFUSED,
    ),
    _case("timeout", METRICS, "duration_to_timeout", "1.0002", {"duration_to_timeout": 1.0002}, GROUNDS),
    _case("timeout", METRICS, "duration_to_timeout", "0.97", {"duration_to_timeout": 0.97}, REFUSED),
    _case(
        "timeout",
        METRICS,
        "max_duration_ms",
        "1000.2",
        {"max_duration_ms": 1000.2, "timeout_seconds": 1},
        GROUNDS,
    ),
    _case(
        "timeout",
        METRICS,
        "max_duration_ms",
        "500",
        {"max_duration_ms": 500.0, "timeout_seconds": 1},
        REFUSED,
    ),
    _case(
        "timeout",
        METRICS,
        "minutes.0.duration_max_ms",
        "2980",
        {"minutes": [_minute(duration_max_ms=2980)], "timeout_seconds": 3},
        GROUNDS,
    ),
    _case(
        "timeout",
        METRICS,
        "minutes.0.duration_max_ms",
        "2900",
        {"minutes": [_minute(duration_max_ms=2900)], "timeout_seconds": 3},
        REFUSED,
    ),
    _case(
        "timeout", METRICS, "timeout_seconds", "1", {"timeout_seconds": 1}, UNSUPPORTED
    ),  # context, not proof
    _case("out_of_memory", METRICS, "memory_to_size", "1.0", {"memory_to_size": 1.0}, GROUNDS),
    _case("out_of_memory", METRICS, "memory_to_size", "0.59", {"memory_to_size": 0.59}, REFUSED),
    _case(
        "out_of_memory",
        METRICS,
        "peak_memory_used_mb",
        "128",
        {"peak_memory_used_mb": 128, "memory_size_mb": 128},
        GROUNDS,
    ),
    _case(
        "out_of_memory",
        METRICS,
        "peak_memory_used_mb",
        "100",
        {"peak_memory_used_mb": 100, "memory_size_mb": 128},
        REFUSED,
    ),
    _case("network_block", NETWORK, "https_egress_allowed", "false", _network(BLOCKED), GROUNDS),
    _case("network_block", NETWORK, "https_egress_allowed", "true", _network(ALLOWED, https=True), REFUSED),
    _case("network_block", NETWORK, "egress.0.allowed", "false", _network(BLOCKED), GROUNDS),
    _case("network_block", NETWORK, "egress.1.allowed", "true", _network(BLOCKED, ALLOWED), REFUSED),
    _case("network_block", NETWORK, "egress.0.reasons.0", BLOCKED_REASON, _network(BLOCKED), GROUNDS),
    _case(
        "network_block",
        NETWORK,
        "egress.1.reasons.0",
        ALLOWED_REASON,
        _network(BLOCKED, ALLOWED),
        REFUSED,
    ),
    _case("network_block", NETWORK, "in_vpc", "true", _network(BLOCKED), GROUNDS),
    _case("network_block", NETWORK, "in_vpc", "true", _network(ALLOWED), REFUSED),
    _case("permission_loss", IAM, "inline_policies.access.Statement.0.Resource", "*", _iam(DENY), GROUNDS),
    _case("permission_loss", IAM, "inline_policies.access.Statement.0.Effect", "Deny", _iam(DENY), GROUNDS),
    # an Allow on * cited as if it denied something
    _case(
        "permission_loss",
        IAM,
        "inline_policies.access.Statement.0.Resource",
        "*",
        _iam(ON_EVERYTHING),
        REFUSED,
    ),
    _case(
        "permission_loss",
        IAM,
        "inline_policies.access.Statement.0.Effect",
        "Allow",
        _iam(ON_EVERYTHING),
        REFUSED,
    ),
    _case(  # the denied GetObject granted only on another bucket
        "permission_loss",
        IAM,
        "inline_policies.access.Statement.0.Resource",
        "arn:aws:s3:::other-bucket/*",
        _iam(SCOPED),
        GROUNDS,
        SentAnswer(
            "get_recent_logs",
            {},
            {
                "events": [
                    {"message": "An error occurred (AccessDenied) when calling the GetObject operation"}
                ]
            },
        ),
    ),
    _case(  # the same, with no denial of it in the logs sent: it refuses nothing shown
        "permission_loss",
        IAM,
        "inline_policies.access.Statement.0.Resource",
        "arn:aws:s3:::other-bucket/*",
        _iam(SCOPED),
        REFUSED,
    ),
    _case(  # the same beside a Deny: the Deny is what refuses
        "permission_loss",
        IAM,
        "inline_policies.access.Statement.0.Resource",
        "arn:aws:s3:::other-bucket/*",
        {"inline_policies": {"access": {"Statement": [SCOPED, _statement("Deny", "s3:*", "*")]}}},
        REFUSED,
        SentAnswer(
            "get_recent_logs",
            {},
            {
                "events": [
                    {"message": "An error occurred (AccessDenied) when calling the GetObject operation"}
                ]
            },
        ),
    ),
    _case("permission_loss", IAM, "inline_policies.access.Statement", "[]", _iam(), GROUNDS),
    _case("permission_loss", IAM, "inline_policies", "{}", {"inline_policies": {}}, GROUNDS),
    *(
        _case("permission_loss", IAM, field, json.dumps(value), answer, outcome)
        for answer, outcome in (
            (_policies(LOGS_ON_EVERYTHING), GROUNDS),
            (_policies(EVERY_S3_ACTION), REFUSED),
            ({"attached_policies": [{"document": {"Statement": [S3_ACTIONS_SCOPED]}}]}, GROUNDS),
            ({"attached_policies": [{"document": {"Statement": [EVERY_ACTION]}}]}, REFUSED),
        )
        for field in (
            "inline_policies.access",
            "inline_policies.access.Statement",
            "attached_policies.0",
            "attached_policies.0.document",
            "attached_policies.0.document.Statement",
        )
        for value in _values(answer, field)
    ),
    _case("permission_loss", IAM, "attached_policies", "[]", {"attached_policies": []}, GROUNDS),
    *(
        _case(
            "permission_loss",
            IAM,
            "inline_policies",
            json.dumps(policies["inline_policies"]),
            policies,
            outcome,
        )
        for policies, outcome in (
            (_policies(LOGS_ON_EVERYTHING), GROUNDS),
            (_policies(S3_ACTIONS_SCOPED), GROUNDS),
            (_policies(EVERY_ACTION), REFUSED),
            (_policies(EVERY_S3_ACTION), REFUSED),
        )
    ),
    _case(
        "permission_loss",
        IAM,
        "attached_policies",
        json.dumps([{"document": {"Statement": [EVERY_S3_ACTION]}}]),
        {"attached_policies": [{"document": {"Statement": [EVERY_S3_ACTION]}}]},
        REFUSED,
    ),
    _case(
        "permission_loss",
        IAM,
        "permissions_boundary.document.Statement.1.Effect",
        "Deny",
        _iam(boundary=[_statement("Allow", "*", "*"), DENY]),
        GROUNDS,
    ),
    _case(
        "permission_loss",
        IAM,
        "permissions_boundary.arn",
        "arn:aws:iam::1:policy/b",
        _iam(boundary=[_statement("Allow", "*", "*")]),
        REFUSED,
    ),
    _case(
        "permission_loss",
        IAM,
        "permissions_boundary.arn",
        "arn:aws:iam::1:policy/b",
        _iam(boundary=[LOGS_ON_EVERYTHING]),
        GROUNDS,
    ),
    _case("permission_loss", IAM, "permissions_boundary", "null", _iam(), REFUSED),
    _case("permission_loss", IAM, "role_name", "r", _iam(), UNSUPPORTED),
    _case(
        "permission_loss",
        SOURCES,
        "mappings.0.LastProcessingResult",
        "PROBLEM: Lambda does not have the required permissions",
        {"mappings": [{"LastProcessingResult": "PROBLEM: Lambda does not have the required permissions"}]},
        GROUNDS,
    ),
    _case(
        "permission_loss",
        SOURCES,
        "mappings.0.LastProcessingResult",
        "OK",
        {"mappings": [{"LastProcessingResult": "OK"}]},
        REFUSED,
    ),
    _case(
        "permission_loss",
        SOURCES,
        "subscriptions.0.invoke_allowed",
        "false",
        {"subscriptions": [{"invoke_allowed": False}]},
        GROUNDS,
    ),
    _case(
        "permission_loss",
        SOURCES,
        "subscriptions.0.invoke_allowed",
        "true",
        {"subscriptions": [{"invoke_allowed": True}]},
        REFUSED,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.State",
        "Disabled",
        {"mappings": [{"State": "Disabled"}]},
        GROUNDS,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.State",
        "Disabling",
        {"mappings": [{"State": "Disabling"}]},
        GROUNDS,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.State",
        "Enabled",
        {"mappings": [{"State": "Enabled"}]},
        REFUSED,
    ),
    _case("event_source_stopped", SOURCES, "mappings", "[]", {"mappings": []}, GROUNDS),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings",
        '[{"State": "Enabled"}]',
        {"mappings": [{"State": "Enabled"}]},
        REFUSED,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.queue.ApproximateNumberOfMessages",
        "3",
        {"mappings": [{"queue": {"ApproximateNumberOfMessages": 3}}]},
        GROUNDS,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.queue.ApproximateNumberOfMessages",
        "0",
        {"mappings": [{"queue": {"ApproximateNumberOfMessages": 0}}]},
        REFUSED,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.queue.oldest_message_age_seconds",
        "7",
        {"mappings": [{"queue": {"oldest_message_age_seconds": 7.0}}]},
        GROUNDS,
    ),
    _case(
        "event_source_stopped",
        SOURCES,
        "mappings.0.queue.oldest_message_age_seconds",
        "0",
        {"mappings": [{"queue": {"oldest_message_age_seconds": 0}}]},
        REFUSED,
    ),
    _case("configuration_error", CONFIG, "State", "Failed", {"State": "Failed"}, GROUNDS),
    _case("configuration_error", CONFIG, "State", "Active", {"State": "Active"}, REFUSED),
    _case(
        "configuration_error", CONFIG, "LastUpdateStatus", "Failed", {"LastUpdateStatus": "Failed"}, GROUNDS
    ),
    _case(
        "configuration_error",
        CONFIG,
        "LastUpdateStatus",
        "Successful",
        {"LastUpdateStatus": "Successful"},
        REFUSED,
    ),
    _case(
        "configuration_error",
        CONFIG,
        "StateReasonCode",
        "InvalidRuntime",
        {"StateReasonCode": "InvalidRuntime"},
        GROUNDS,
    ),
    _case("configuration_error", CONFIG, "StateReasonCode", "null", {"StateReasonCode": None}, REFUSED),
    _case("configuration_error", CONFIG, "Handler", "app.main", {"Handler": "app.main"}, GROUNDS, CHANGES),
    _case("configuration_error", CONFIG, "Handler", "app.main", {"Handler": "app.main"}, REFUSED),
    _case(
        "configuration_error", CONFIG, "Handler", "app.main", {"Handler": "app.main"}, REFUSED, FAILED_CHANGES
    ),
    _case(
        "configuration_error", CONFIG, "Handler", "app.main", {"Handler": "app.main"}, REFUSED, ROLE_CHANGES
    ),
    _case(
        "configuration_error",
        CONFIG,
        "EnvironmentVariableNames",
        '["REPORT_MB"]',
        {"EnvironmentVariableNames": ["REPORT_MB"]},
        GROUNDS,
        CHANGES,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "async_config.destinations",
        "[]",
        {"async_config": {"destinations": []}},
        GROUNDS,
        CHANGES,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "async_config.destinations",
        "[]",
        {"async_config": {"destinations": []}},
        REFUSED,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "mappings.0.visibility_timeout_below_function_timeout",
        "true",
        {"mappings": [{"visibility_timeout_below_function_timeout": True}]},
        GROUNDS,
        CHANGES,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "mappings.0.visibility_timeout_below_function_timeout",
        "false",
        {"mappings": [{"visibility_timeout_below_function_timeout": False}]},
        REFUSED,
        CHANGES,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "mappings.0.queue.VisibilityTimeout",
        "2",
        {"mappings": [{"queue": {"VisibilityTimeout": 2}}]},
        GROUNDS,
        CHANGES,
    ),
    _case(
        "configuration_error",
        SOURCES,
        "mappings.0.queue.VisibilityTimeout",
        "2",
        {"mappings": [{"queue": {"VisibilityTimeout": 2}}]},
        REFUSED,
    ),
    # a change that failed changed nothing: refused as support of any fault
    *(
        _case(
            fault,
            "get_recent_changes",
            "events.0.time",
            "16:39",
            {"events": [{"time": "16:39", "error_code": "X"}]},
            REFUSED,
        )
        for fault in sorted(MEANINGS)
    ),
    # the change history: a configuration change grounds configuration_error (leniently), nothing else alone
    _case(
        "configuration_error",
        "get_recent_changes",
        "events.0.event_name",
        CHANGE["event_name"],
        {"events": [CHANGE]},
        GROUNDS,
    ),
    _case(
        "configuration_error",
        "get_recent_changes",
        "events.0.event_name",
        CHANGE["event_name"],
        {"events": [CHANGE | {"error_code": "InvalidParameterValueException"}]},
        REFUSED,
    ),
    _case(
        "configuration_error",
        "get_recent_changes",
        "events.0.event_name",
        "PutRolePolicy",
        {"events": [{"event_name": "PutRolePolicy"}]},
        UNSUPPORTED,
    ),
    _case(
        "timeout",
        "get_recent_changes",
        "events.0.event_name",
        CHANGE["event_name"],
        {"events": [CHANGE]},
        UNSUPPORTED,
    ),
    _case(
        "permission_loss",
        "get_recent_logs",
        "events.0.error.message",
        MESSAGE,
        {
            "events": [
                {"message": "[ERROR] ClientError", "error": {"code": "AccessDenied", "message": MESSAGE}}
            ]
        },
        UNSUPPORTED,  # a log line never grounds a fault by itself
    ),
]


@pytest.mark.parametrize(("fault", "tool", "field", "quote", "answer", "outcome", "others"), SUPPORT_CASES)
def test_a_pointer_supports_a_fault_only_when_its_value_shows_it(
    fault: str,
    tool: str,
    field: str,
    quote: str,
    answer: dict[str, Any],
    outcome: str,
    others: list[SentAnswer],
) -> None:
    diagnosis = {"fault_types": [fault], "evidence": [_pointer(tool, field, quote, fault)]}
    grounding = judge(diagnosis, [SentAnswer(tool, {}, answer), *others])
    assert grounding.grounded is (outcome == GROUNDS), grounding.summary()
    if outcome == NOT_FOUND:
        assert not grounding.findings[0].found
    elif outcome != GROUNDS:
        assert grounding.findings[0].found
        assert any(outcome in claim for claim in grounding.ungrounded), grounding.ungrounded
    if outcome == UNSUPPORTED:
        assert not any(REFUSED in claim for claim in grounding.ungrounded), grounding.ungrounded


THROTTLED = SentAnswer(METRICS, {}, {"throttles": 3.0, "minutes": [_minute(throttles=0, errors=0)]})


def test_a_pointer_whose_value_does_not_show_its_fault_refutes_it_beside_an_honest_one() -> None:
    honest = _pointer(METRICS, "throttles", "3", "throttling")
    zero = _pointer(METRICS, "minutes.0.throttles", "0", "throttling")
    assert judge({"fault_types": ["throttling"], "evidence": [honest]}, [THROTTLED]).grounded
    grounding = judge({"fault_types": ["throttling"], "evidence": [honest, zero]}, [THROTTLED])
    assert grounding.ungrounded == [
        "fault throttling: pointer #1 (get_function_metrics minutes.0.throttles = 0) does not show it: "
        "counts only above zero"
    ]


DENIED_LOGS = SentAnswer(
    "get_recent_logs",
    {},
    {
        "events": [
            {"message": "[ERROR] ClientError", "error": {"code": "AccessDenied", "message": MESSAGE}},
            {"message": "User: arn:aws:sts::1:assumed-role/r/f is not authorized to perform: s3:GetObject"},
            {
                "message": "[ERROR] KeyError: 'INPUT_BUCKET'",
                "error": {"type": "KeyError", "message": "'INPUT_BUCKET'"},
            },
        ]
    },
)
NO_INLINE_POLICY = SentAnswer(IAM, {}, {"inline_policies": {}})


@pytest.mark.parametrize(
    ("detail", "others", "grounded"),
    [
        (_pointer("get_recent_logs", "events.0.error.code", "AccessDenied", "permission_loss"), [], True),
        (
            _pointer("get_recent_logs", "events.1.message", DENIED_LOGS.answer["events"][1]["message"]),
            [],
            True,
        ),
        (
            _pointer("get_recent_logs", "events.2.error.message", "'INPUT_BUCKET'", "permission_loss"),
            [],
            False,
        ),
        (
            _pointer("get_recent_changes", "events.0.event_name", "DeleteRolePolicy", "permission_loss"),
            [],
            True,
        ),
        (
            _pointer("get_recent_changes", "events.0.event_name", "DeleteRolePolicy", "permission_loss"),
            [{"error_code": "NoSuchEntity"}],
            False,
        ),
    ],
)
def test_a_detail_holds_beside_a_decisive_pointer_or_refutes_the_fault(
    detail: dict[str, Any], others: list[dict[str, Any]], grounded: bool
) -> None:
    detail["supports"] = "permission_loss"
    changes = SentAnswer(
        "get_recent_changes",
        {},
        {"events": [{"event_name": "DeleteRolePolicy", **extra} for extra in others or [{}]]},
    )
    decisive = _pointer(IAM, "inline_policies", "{}", "permission_loss")
    diagnosis = {"fault_types": ["permission_loss"], "evidence": [decisive, detail]}
    grounding = judge(diagnosis, [NO_INLINE_POLICY, DENIED_LOGS, changes])
    assert all(finding.found for finding in grounding.findings)
    assert grounding.grounded is grounded, grounding.ungrounded
    if not grounded:
        assert grounding.ungrounded[0].startswith("fault permission_loss: pointer #1 (")


# --- claims beyond pointers -------------------------------------------------------------------------------

FUNCTION = "data-processor"
ARN = "arn:aws:lambda:ca-central-1:123456789012:function"


def _with_command(command: str) -> dict[str, Any]:
    return {
        "fault_types": ["throttling"],
        "evidence": [_pointer(METRICS, "throttles", "3", "throttling")],
        "remediation_plan": [{"action": "-", "details": "-", "evidence_basis": [0], "command": command}],
    }


@pytest.mark.parametrize(
    ("command", "ungrounded"),
    [
        ("aws lambda delete-function-concurrency --function-name data-processor", None),
        ("aws lambda delete-function-concurrency --function-name orders-api", "targets ['orders-api']"),
        ("aws lambda delete-function-concurrency --function-name=data-processor", None),
        ("aws lambda delete-function-concurrency --function-name=orders-api", "targets ['orders-api']"),
        (
            f"aws lambda update-alias --function-name {ARN}:data-processor:live --name live",
            None,
        ),
        (
            f"aws lambda update-alias --function-name {ARN}:orders-api:live --name live",
            "targets ['orders-api']",
        ),
        ("aws lambda update-alias --function-name data-processor:live --name live", None),
        (
            "aws lambda update-alias --function-name data-processor-copy:live --name live",
            "['data-processor-copy']",
        ),
        (
            "aws lambda update-alias --function-name 123456789012:function:orders-api --name live",
            "['orders-api']",
        ),
        ("aws lambda update-function-configuration --function-name 'data-processor' --timeout 3", None),
        ("aws iam delete-role-policy --role-name data-processor-role --policy-name chaos-deny", None),
        (
            "aws lambda update-function-configuration --function-name data-processor --handler 'app",
            "cannot be read",
        ),
        (
            "aws lambda update-function-configuration --function-name data-processor "
            "--environment 'Variables={API_KEY=[REDACTED:aws_secret_key]}'",
            "quotes the redacted placeholder [REDACTED:aws_secret_key]",
        ),
        (
            "aws lambda update-function-configuration --function-name data-processor "
            "--environment 'Variables={OWNER=ops@example.com}'",
            None,
        ),
    ],
)
def test_a_remediation_command_targets_the_incidents_function_and_sets_no_placeholder(
    command: str, ungrounded: str | None
) -> None:
    grounding = judge(_with_command(command), [THROTTLED], function=FUNCTION)
    if ungrounded is None:
        assert grounding.grounded, grounding.ungrounded
    else:
        [claim] = grounding.ungrounded
        assert claim.startswith("remediation_plan.0.command: ")
        assert ungrounded in claim


def test_a_placeholder_is_refused_even_without_the_incidents_function() -> None:
    command = "aws ssm put-parameter --name /p --value [REDACTED:jwt] --overwrite"
    assert judge(_with_command(command), [THROTTLED]).ungrounded == [
        "remediation_plan.0.command: quotes the redacted placeholder [REDACTED:jwt]"
    ]


TRIGGER_TIME = "2026-11-28T16:40:00+00:00"


def _invocation(request_id: str, started: str, outcome: str) -> dict[str, Any]:
    return {"request_id": request_id, "started": f"2026-11-28T16:{started}+00:00", "outcome": outcome}


@pytest.mark.parametrize(
    ("invocations", "grounded"),
    [
        ([_invocation("a", "39:30", "no_error_seen"), _invocation("b", "40:05", "error_record")], True),
        ([_invocation("a", "40:30", "no_error_seen"), _invocation("b", "41:00", "timeout")], False),
        (
            [_invocation("a", "40:05", "no_error_seen"), _invocation("b", "40:20", "error_record")],
            True,
        ),  # slack
        (
            [_invocation("b", "40:20", "error_record"), _invocation("a", "40:40", "no_error_seen")],
            True,
        ),  # after
        (
            [_invocation("a", "40:30", "no_error_seen")],
            True,
        ),  # no failure after the trigger to place it before
        (
            [
                _invocation("z", "39:50", "error_record"),
                _invocation("a", "40:30", "no_error_seen"),
                _invocation("b", "41:00", "init_error"),
            ],
            False,
        ),
    ],
)
def test_a_trigger_before_the_last_success_is_ungrounded(
    invocations: list[dict[str, Any]], grounded: bool
) -> None:
    diagnosis = _with_command("aws lambda delete-function-concurrency --function-name data-processor") | {
        "trigger": {"event_name": "PutFunctionConcurrency20171031", "time": TRIGGER_TIME, "evidence": [0]}
    }
    logs = SentAnswer("get_recent_logs", {}, {"invocations": invocations})
    grounding = judge(diagnosis, [THROTTLED, logs], function=FUNCTION)
    assert grounding.grounded is grounded, grounding.ungrounded
    if not grounded:
        [claim] = grounding.ungrounded
        assert claim.startswith(f"trigger: {TRIGGER_TIME} lies before a success: invocation a started")
