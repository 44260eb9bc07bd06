"""What a cited value must say to support a fault: each source's predicate, shown accepting a value that
means the fault and refusing one that reads as evidence and means nothing; and every source of every fault
class is in the table, so a class cannot be declared without one."""

from __future__ import annotations

from typing import Any

import pytest

from supervisor.diagnosis.paths import resolve
from supervisor.faults import sources
from supervisor.faults.declaration import Source
from supervisor.faults.meanings import Reading
from supervisor.faults.registry import FAULT_CLASSES

ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/data-processor-role"
FUNCTION_ARN = f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:data-processor"
GROUP = "/aws/lambda/data-processor"
QUEUE = f"arn:aws:sqs:ca-central-1:{ACCOUNT}:orders-queue"
DENIED = "An error occurred (AccessDenied) when calling the GetObject operation: Access Denied"
WHEN = "2026-11-21T10:00:00+00:00"


def _metrics(**fields: Any) -> dict[str, Any]:
    minutes = [
        {"timestamp": "t0", "invocations": 4, "errors": 4, "throttles": 3, "concurrent_executions_max": 2},
        {"timestamp": "t1", "invocations": 6, "errors": 1, "throttles": 0, "concurrent_executions_max": 5},
    ]
    return {"minutes": minutes, "timeout_seconds": 3, "memory_size_mb": 128, "log_group": GROUP} | fields


def _statement(effect: str, action: str | list[str], resource: str) -> dict[str, Any]:
    return {"Effect": effect, "Action": action, "Resource": resource}


def _iam(*statements: dict[str, Any], attached: list[Any] | None = None) -> dict[str, Any]:
    group = f"arn:aws:logs:ca-central-1:{ACCOUNT}:log-group:{GROUP}:*"
    logs = _statement("Allow", ["logs:CreateLogStream", "logs:PutLogEvents"], group)
    return {
        "role_name": "data-processor-role",
        "inline_policies": {"access": {"Statement": [*statements, logs]}},
        "attached_policies": attached or [],
    }


DENIAL_LOGS = {  # a failed invocation whose terminal error is a denied GetObject
    "log_group": GROUP,
    "events": [{"kind": "error_record", "request_id": "r1", "message": f"[ERROR] ClientError: {DENIED}"}],
    "invocations": [{"request_id": "r1", "outcome": "error_record"}],
}
NO_SPACE_LOGS = {  # a failed invocation whose terminal error is Node.js's write to a full disk
    "log_group": GROUP,
    "events": [
        {
            "kind": "error_record",
            "request_id": "r1",
            "message": "ERROR Invoke Error",
            "error": {"type": "Error", "message": "ENOSPC: no space left on device, write"},
        }
    ],
    "invocations": [{"request_id": "r1", "outcome": "error_record"}],
}
DENIED_RUN: dict[str, list[Any]] = {
    "get_recent_logs": [DENIAL_LOGS],
    "get_lambda_config": [{"FunctionArn": FUNCTION_ARN}],
}


def _event(name: str, **fields: Any) -> dict[str, Any]:
    return {"events": [{"event_name": name, "time": "t", "service": "x"} | fields]}


def _changed(*fields: str) -> dict[str, Any]:
    return _event("UpdateFunctionConfiguration20150331v2", summary={"changed_fields": list(fields)})


def _sources(**fields: Any) -> dict[str, Any]:
    mapping = {
        "UUID": "u",
        "EventSourceArn": QUEUE,
        "State": "Enabled",
        "LastProcessingResult": "OK",
        "queue": {"ApproximateNumberOfMessages": 0, "VisibilityTimeout": 30, "DeadLetterTargetArn": None},
        "visibility_timeout_below_function_timeout": False,
    }
    return {
        "timeout_seconds": 3,
        "mappings": [mapping | fields.pop("mapping", {})],
        "subscriptions": [{"invoke_allowed": True, "notifications_failed": 0}],
        "async_config": {"destinations": [], "metrics": {"AsyncEventsReceived": 4, "AsyncEventsDropped": 0}},
    } | fields


READER = "arn:aws:iam::210987654321:user/report-reader"
URL_GRANT_REMOVED = {  # newest first, as the tool lists them
    "events": [
        {
            "event_name": "RemovePermission20150331v2",
            "time": "2026-11-21T10:05:00Z",
            "summary": {"statementId": "s"},
        },
        {
            "event_name": "AddPermission20150331v2",
            "time": "2026-11-21T09:00:00Z",
            "summary": {"statementId": "s", "principal": READER, "functionUrlAuthType": "AWS_IAM"},
        },
    ]
}
Case = tuple[Source, str, dict[str, Any], dict[str, Any], dict[str, list[Any]]]
# (source, field, an answer in which the value means the fault, one in which it does not, the run's others)
MALFORMED = "(r) Execution failed due to configuration error: Malformed Lambda proxy response"
REFUSED = "(r) Execution failed due to configuration error: Invalid permissions on Lambda function"

CASES: list[Case] = [
    (sources.ERRORS, "errors", {"errors": 2.0}, {"errors": 0.0}, {}),
    (sources.ERRORS, "first_error_minute", {"first_error_minute": "t0"}, {"first_error_minute": None}, {}),
    (sources.THROTTLES, "minutes.0.throttles", _metrics(), _metrics() | {"minutes": [{"throttles": 0}]}, {}),
    (  # no reservation: the account's pool refused the throttled requests; against nothing throttled
        sources.LIMIT,
        "ReservedConcurrentExecutions",
        {"ReservedConcurrentExecutions": None},
        {"ReservedConcurrentExecutions": None},
        {"get_function_metrics": [_metrics(throttles=3.0)]},
    ),
    (
        sources.LIMIT,
        "ReservedConcurrentExecutions",
        {"ReservedConcurrentExecutions": 0},
        {"ReservedConcurrentExecutions": 7},
        {},
    ),
    (  # a limit of 5 that some minute reached, and one of 9 that none did
        sources.LIMIT,
        "ReservedConcurrentExecutions",
        {"ReservedConcurrentExecutions": 5},
        {"ReservedConcurrentExecutions": 9},
        {"get_function_metrics": [_metrics()]},
    ),
    (
        sources.CONCURRENCY,
        "minutes.0.concurrent_executions_max",
        _metrics(),
        _metrics(minutes=[{"throttles": 0, "concurrent_executions_max": 2}]),  # nothing refused that minute
        {},
    ),
    (
        sources.VERDICT,
        "egress.0.allowed",
        {"egress": [{"allowed": False}]},
        {"egress": [{"allowed": True}]},
        {},
    ),
    (
        sources.VERDICT,
        "https_egress_allowed",
        {"https_egress_allowed": False},
        {"https_egress_allowed": True},
        {},
    ),
    (
        sources.VERDICT,
        "security_groups.0.group_id",
        {"security_groups": [{"group_id": "sg-1"}], "egress": [{"allowed": False}]},
        {"security_groups": [{"group_id": "sg-1"}], "egress": [{"allowed": True}]},
        {},
    ),
    (
        sources.DURATIONS,
        "duration_to_timeout",
        {"duration_to_timeout": 1.0},
        {"duration_to_timeout": 0.9},
        {},
    ),
    (
        sources.DURATIONS,
        "max_duration_ms",
        _metrics(max_duration_ms=3001.0),
        _metrics(max_duration_ms=1392.0),
        {},
    ),
    (
        sources.MEMORY,
        "peak_memory_used_mb",
        _metrics(peak_memory_used_mb=128),
        _metrics(peak_memory_used_mb=64),
        {},
    ),
    (sources.MEMORY, "memory_to_size", {"memory_to_size": 1.0}, {"memory_to_size": 0.5}, {}),
    (sources.SETTINGS, "State", {"State": "Failed"}, {"State": "Active"}, {}),
    (
        sources.SETTINGS,
        "Handler",
        {"Handler": "app.handler"},
        {"Handler": "app.handler"},
        {"get_recent_changes": [_changed("handler")]},  # the honest run: a change set the handler
    ),
    (
        sources.SUCCEEDED_BESIDE,
        "minutes.1.invocations",
        _metrics(),
        _metrics() | {"minutes": [{}, {"invocations": 1, "errors": 1}]},  # all of that minute's failed
        {},
    ),
    (
        sources.PATH_REFUSED,
        "mappings.0.LastProcessingResult",
        _sources(mapping={"LastProcessingResult": "PROBLEM: Lambda does not have the required permissions"}),
        _sources(),
        {},
    ),
    (
        sources.PATH_REFUSED,
        "subscriptions.0.invoke_allowed",
        _sources(subscriptions=[{"invoke_allowed": False}]),
        _sources(),
        {},
    ),
    (sources.PATH_STOPPED, "mappings.0.State", _sources(mapping={"State": "Disabled"}), _sources(), {}),
    (sources.PATH_STOPPED, "mappings", _sources(mappings=[]), _sources(), {}),
    (
        sources.BACKLOG,
        "mappings.0.queue.ApproximateNumberOfMessages",
        _sources(mapping={"queue": {"ApproximateNumberOfMessages": 42}}),
        _sources(),
        {},
    ),
    (  # 4.5 s behind a 3 s timeout: waited; 2.9 s: one slow invocation, nothing waits behind it
        sources.STREAM_LAG,
        "mappings.0.iterator_age_ms",
        _sources(mapping={"iterator_age_ms": 4500.0}),
        _sources(mapping={"iterator_age_ms": 2900.0}),
        {},
    ),
    (
        sources.ASYNC_SETTINGS,
        "mappings.0.visibility_timeout_below_function_timeout",
        _sources(mapping={"visibility_timeout_below_function_timeout": True}),
        _sources(),
        {},
    ),
    (
        sources.ASYNC_SETTINGS,
        "async_config.destinations",
        _sources(async_config={"destinations": [], "metrics": {"AsyncEventsDropped": 3}}),
        _sources(),  # nothing was lost for want of a destination
        {},
    ),
    (
        sources.ASYNC_LOSSES,
        "async_config.metrics.AsyncEventsDropped",
        _sources(async_config={"metrics": {"AsyncEventsDropped": 3}}),
        _sources(),
        {},
    ),
    (
        sources.POLICIES,  # a Deny that decides the denied call, against the Allow it overrides
        "inline_policies.access.Statement.0.Effect",
        _iam(_statement("Deny", "s3:*", "*"), _statement("Allow", "s3:GetObject", "*")),
        _iam(_statement("Allow", "s3:GetObject", "*")),  # an Allow cited as if it were the Deny
        DENIED_RUN,
    ),
    (
        sources.POLICIES,  # the denied action granted only on another bucket by a policy a change rewrote,
        "inline_policies.access.Statement.0.Resource",  # against a grant of it all
        _iam(_statement("Allow", "s3:GetObject", "arn:aws:s3:::archive/*")),
        _iam(_statement("Allow", "s3:*", "*")),
        DENIED_RUN
        | {"get_recent_changes": [_event("PutRolePolicy", time=WHEN, summary={"policyName": "access"})]},
    ),
    (
        sources.POLICIES,  # no attached policy, and nothing inline grants the call; against a role that does
        "attached_policies",
        _iam(),
        _iam(_statement("Allow", "s3:GetObject", "*")),
        DENIED_RUN,
    ),
    (
        sources.IAM_CHANGE,
        "events.0.event_name",
        _event("DeleteRolePolicy"),
        _event("DeleteRolePolicy", error_code="NoSuchEntity"),  # it failed: nothing changed
        {},
    ),
    (
        sources.CONCURRENCY_CHANGE,
        "events.0",
        _event("PutFunctionConcurrency20171031"),
        _event("TagResource"),
        {},
    ),
    (
        sources.CONFIGURATION_CHANGE,
        "events.0.event_name",
        _changed("environment"),
        _event("PutFunctionConcurrency20171031"),
        {},
    ),
    (sources.QUEUE_CHANGE, "events.0.event_name", _event("SetQueueAttributes"), _event("TagQueue"), {}),
    (
        sources.NETWORK_CHANGE,
        "events.0.event_name",
        _event("RevokeSecurityGroupEgress"),
        _event("CreateTags"),
        {},
    ),
    (
        sources.MAPPING_CHANGE,
        "events.0.event_name",
        _event("DeleteEventSourceMapping20150331"),
        _event("UpdateFunctionCode20150331v2"),
        {},
    ),
    (sources.SUBSCRIPTION_CHANGE, "events.0.event_name", _event("Unsubscribe"), _event("Publish"), {}),
    (
        sources.ENVIRONMENT_KEY,  # a key pending deletion; against one that is enabled
        "EnvironmentKey.KeyState",
        {"Role": ROLE_ARN, "EnvironmentKey": {"KeyState": "PendingDeletion", "DecryptGrantees": [ROLE_ARN]}},
        {"Role": ROLE_ARN, "EnvironmentKey": {"KeyState": "Enabled", "DecryptGrantees": [ROLE_ARN]}},
        {},
    ),
    (
        sources.ENVIRONMENT_KEY,  # grants for another principal only; against grants that name the role
        "EnvironmentKey.DecryptGrantees",
        {
            "Role": ROLE_ARN,
            "EnvironmentKey": {"KeyState": "Enabled", "DecryptGrantees": ["arn:aws:iam::1:role/x"]},
        },
        {"Role": ROLE_ARN, "EnvironmentKey": {"KeyState": "Enabled", "DecryptGrantees": [ROLE_ARN]}},
        {},
    ),
    (
        sources.FUNCTION_STATE,  # Inactive; against Active
        "State",
        {"State": "Inactive", "StateReasonCode": "SubnetOutOfIPAddresses"},
        {"State": "Active"},
        {},
    ),
    (
        sources.FUNCTION_STATE,  # no address in a subnet; against an idle function Lambda can connect again
        "StateReasonCode",
        {"State": "Inactive", "StateReasonCode": "SubnetOutOfIPAddresses"},
        {"State": "Inactive", "StateReasonCode": "Idle"},
        {},
    ),
    (  # the size of /tmp while a failed write says the device is full; against logs that say nothing of it
        sources.STORAGE,
        "EphemeralStorageMb",
        {"EphemeralStorageMb": 512},
        {"EphemeralStorageMb": 512},
        {"get_recent_logs": [NO_SPACE_LOGS]},
    ),
    (
        sources.ANSWER_UNUSABLE,  # API Gateway's words for a malformed answer; against a refused invocation
        "apis.0.execution_errors.0.message",
        {"apis": [{"execution_errors": [{"message": MALFORMED}]}]},
        {"apis": [{"execution_errors": [{"message": REFUSED}]}]},
        {},
    ),
    (  # an HTTP API's 503 beside a route that waits less than the function ran; against one that waits more
        sources.ANSWER_UNUSABLE,
        "apis.0.execution_errors.0.status",
        {
            "apis": [
                {"protocol": "HTTP", "routes": [{"timeout_ms": 300}], "execution_errors": [{"status": 503}]}
            ]
        },
        {
            "apis": [
                {"protocol": "HTTP", "routes": [{"timeout_ms": 30000}], "execution_errors": [{"status": 503}]}
            ]
        },
        {"get_function_metrics": [{"max_duration_ms": 1004.5}]},
    ),
    (
        sources.PATH_REFUSED,
        "apis.0.routes.0.invoke_allowed",
        {"apis": [{"routes": [{"invoke_allowed": False}]}]},
        {"apis": [{"routes": [{"invoke_allowed": True}]}]},
        {},
    ),
    (  # an AWS_IAM URL's callers without the one whose statement the history shows written, then removed
        sources.PATH_REFUSED,
        "function_url.granted_callers",
        {"function_url": {"granted_callers": []}},
        {"function_url": {"granted_callers": [READER]}},
        {"get_recent_changes": [URL_GRANT_REMOVED]},
    ),
]


def _name(source: Source) -> str:
    return next(name for name, value in vars(sources).items() if value is source)


def _means(source: Source, field: str, answer: dict[str, Any], run: dict[str, list[Any]]) -> str:
    return source.means(Reading(field, resolve(answer, field), answer, run))


@pytest.mark.parametrize(
    ("source", "field", "honest", "dishonest", "run"),
    CASES,
    ids=[f"{_name(case[0])}-{case[1]}" for case in CASES],
)
def test_a_value_supports_only_when_it_means_the_fault(
    source: Source, field: str, honest: dict[str, Any], dishonest: dict[str, Any], run: dict[str, list[Any]]
) -> None:
    assert source.fields.fullmatch(field)
    assert _means(source, field, honest, run) == ""
    # The dishonest reading has none of the other answers that made the honest one mean the fault.
    made_it = ("get_recent_changes", "get_function_metrics", "get_recent_logs")
    others = {k: v for k, v in run.items() if k not in made_it}
    refusal = _means(source, field, dishonest, others)
    assert refusal
    assert field.split(".")[0] in refusal  # says which value, so the model can act on it


@pytest.mark.parametrize(
    ("stage", "status", "longest"),
    [
        ({"protocol": "HTTP", "routes": [{"timeout_ms": 300}]}, 500, 1004.5),  # the function failed
        ({"routes": [{"timeout_ms": 300}]}, 503, 1004.5),  # a REST stage: its execution log says why
        ({"protocol": "HTTP", "routes": [{"timeout_ms": 1200}]}, 503, 1004.5),  # it waited long enough
        ({"protocol": "HTTP", "routes": [{"timeout_ms": 300}]}, "503", 1004.5),  # not a status read
        ({"protocol": "HTTP", "routes": [{"timeout_ms": 300}]}, 503, None),  # the run's length unknown
    ],
)
def test_an_http_api_s_status_means_a_timeout_only_beside_a_route_shorter_than_the_function_ran(
    stage: dict[str, Any], status: Any, longest: float | None
) -> None:
    answer = {"apis": [stage | {"execution_errors": [{"status": status}]}]}
    run = {"get_function_metrics": [{"max_duration_ms": longest}]}
    assert _means(sources.ANSWER_UNUSABLE, "apis.0.execution_errors.0.status", answer, run)
    if status == 503 and longest is None:  # with the run's length the same value means the timeout
        run = {"get_function_metrics": [{"max_duration_ms": 1004.5}]}
        assert _means(sources.ANSWER_UNUSABLE, "apis.0.execution_errors.0.status", answer, run) == ""


def test_every_source_of_every_fault_class_is_shown_refusing_a_value() -> None:
    declared = {_name(s) for fault in FAULT_CLASSES.values() for group in fault.corroboration for s in group}
    shown = {_name(case[0]) for case in CASES}
    assert declared == shown
    for fault in FAULT_CLASSES.values():
        for group in fault.corroboration:
            assert all(callable(s.means) and s.means.__doc__ for s in group), fault.name


def test_an_allow_beside_the_deny_that_decides_the_call_is_no_support() -> None:
    """S3's "Access Denied" names no service or resource: the role is judged for ``*:GetObject``, which a
    Deny and an Allow may both decide; only the Deny refuses it, and an Allow scoped elsewhere counts only
    when a change rewrote its policy."""
    iam = _iam(
        _statement("Deny", "s3:GetObject", "*"), _statement("Allow", "s3:GetObject", "arn:aws:s3:::in/*")
    )
    deny, allow = "inline_policies.access.Statement.0.Effect", "inline_policies.access.Statement.1.Resource"
    assert _means(sources.POLICIES, deny, iam, DENIED_RUN) == ""
    assert "refuses none of the calls" in _means(sources.POLICIES, allow, iam, DENIED_RUN)
    elsewhere = _iam(_statement("Allow", "s3:GetObject", "arn:aws:s3:::archive/*"))
    field = "inline_policies.access.Statement.0.Resource"
    assert "refuses none of the calls" in _means(sources.POLICIES, field, elsewhere, DENIED_RUN)  # no change


def test_a_zero_a_boolean_or_what_was_received_counts_nothing() -> None:
    assert (
        _means(sources.THROTTLES, "throttles", {"throttles": 0.0}, {}) == "throttles is 0.0: it counts none"
    )
    assert _means(sources.ERRORS, "errors", {"errors": True}, {}) == "errors is True: it counts none"
    received = _sources(async_config={"metrics": {"AsyncEventsReceived": 40, "AsyncEventsDropped": 3}})
    field = "async_config.metrics.AsyncEventsReceived"
    assert _means(sources.ASYNC_LOSSES, field, received, {}) == (
        "AsyncEventsReceived counts events received or their age, not events lost"
    )


def test_an_allow_scoped_elsewhere_supports_only_after_a_rewrite_that_could_have_started_the_failures() -> (
    None
):
    """The denied GetObject is granted only on another bucket; its policy was put again at 10:00. With an
    invocation succeeding at 10:01, the put started nothing (the bucket the function reads changed, say)."""
    logs = DENIAL_LOGS | {
        "invocations": [
            {"request_id": "r0", "started": "2026-11-21T10:01:00+00:00", "outcome": "no_error_seen"},
            {"request_id": "r1", "started": "2026-11-21T10:05:00+00:00", "outcome": "error_record"},
        ]
    }
    elsewhere = _iam(_statement("Allow", "s3:GetObject", "arn:aws:s3:::archive/*"))
    field = "inline_policies.access.Statement.0.Resource"

    def run(at: str) -> dict[str, list[Any]]:
        put = _event("PutRolePolicy", time=at, summary={"policyName": "access"})
        return DENIED_RUN | {"get_recent_logs": [logs], "get_recent_changes": [put]}

    assert "refuses none of the calls" in _means(sources.POLICIES, field, elsewhere, run(WHEN))
    assert _means(sources.POLICIES, field, elsewhere, run("2026-11-21T10:03:00+00:00")) == ""


@pytest.mark.parametrize(
    "changes",
    [
        {"events": URL_GRANT_REMOVED["events"][1:]},  # written, never removed
        {"events": URL_GRANT_REMOVED["events"][:1]},  # removed, but who it let in is not in the history
        {
            "events": [
                {**e, "error_code": "AccessDenied"} if i == 0 else e
                for i, e in enumerate(URL_GRANT_REMOVED["events"])
            ]
        },
        {  # the statement written for a public URL's callers, not a signed one's
            "events": [
                URL_GRANT_REMOVED["events"][0],
                {
                    **URL_GRANT_REMOVED["events"][1],
                    "summary": {"statementId": "s", "principal": "*", "functionUrlAuthType": "NONE"},
                },
            ]
        },
    ],
    ids=["never-removed", "never-written", "removal-failed", "public-url"],
)
def test_granted_callers_mean_a_refused_caller_only_after_its_url_statement_was_written_then_removed(
    changes: dict[str, Any],
) -> None:
    answer: dict[str, Any] = {"function_url": {"granted_callers": []}}
    assert _means(
        sources.PATH_REFUSED, "function_url.granted_callers", answer, {"get_recent_changes": [changes]}
    )
