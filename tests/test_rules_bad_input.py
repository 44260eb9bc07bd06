"""The rules brain's bad_input check through the real graph, on canned tool answers: failures that follow
from the input are told from failures a change caused, by successes interleaved with the failures on the
same version since the latest change, corroborated by the metrics."""

from __future__ import annotations

import json
from typing import Any

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import FUNCTION, diagnose_with

ACCOUNT = "123456789012"
ROLE = f"{FUNCTION}-role"
LOG_GROUP = f"/aws/lambda/{FUNCTION}"
MINUTE = "2026-11-21T10:00:00+00:00"
NO_SUCH_KEY = (
    "[ERROR] NoSuchKey: An error occurred (NoSuchKey) when calling the GetObject operation: The specified "
    'key does not exist.\nTraceback (most recent call last):\n  File "/var/task/data_processor.py", line 29'
)
HEADLINE = (
    "NoSuchKey: An error occurred (NoSuchKey) when calling the GetObject operation: The specified key does "
    "not exist."
)
OPERATOR = f"arn:aws:iam::{ACCOUNT}:user/operator"
BUCKET = "data-processor-input"


def _stream(version: str) -> str:
    return f"2026/11/21/[{version}]0123456789abcdef"


def _request(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


# (second of the minute it started, whether it failed, the version it ran)
Run = tuple[int, bool, str]


def _logs(runs: list[Run], objects: dict[int, str]) -> dict[str, Any]:
    """Each invocation's START line, the function's line naming the object it reads (``objects``: by
    request number, from 1), the error record of each failed one, and its REPORT summary."""
    events, invocations = [], []
    for n, (second, failed, version) in enumerate(runs, start=1):
        request, stream, at = _request(n), _stream(version), f"2026-11-21T10:00:{second:02d}+00:00"
        events.append(
            {
                "timestamp": at,
                "message": f"START RequestId: {request} Version: {version}",
                "log_stream": stream,
                "request_id": request,
                "kind": "start",
            }
        )
        if n in objects:
            said = f"[INFO]\t{at}\t{request}\tprocessing s3://{BUCKET}/{objects[n]}\n"
            events.append(
                {
                    "timestamp": at,
                    "message": said,
                    "log_stream": stream,
                    "request_id": request,
                    "kind": "function",
                }
            )
        if failed:
            events.append(
                {
                    "timestamp": at,
                    "message": NO_SUCH_KEY,
                    "log_stream": stream,
                    "request_id": request,
                    "kind": "error_record",
                }
            )
        invocations.append(
            {
                "request_id": request,
                "log_stream": stream,
                "started": at,
                "duration_ms": 80.0,
                "memory_size_mb": 128,
                "max_memory_used_mb": 60,
                "outcome": "error_record" if failed else "no_error_seen",
            }
        )
    return {
        "log_group": LOG_GROUP,
        "events": events,
        "invocations": invocations,
        "matched_events": len(events),
        "returned_events": len(events),
    }


def _change(second: int) -> dict[str, Any]:
    """An environment change at 10:00:<second> (09:50 when negative)."""
    time = f"2026-11-21T10:00:{second:02d}+00:00" if second >= 0 else "2026-11-21T09:50:00+00:00"
    return {
        "event_id": f"e-{second}",
        "time": time,
        "event_name": "UpdateFunctionConfiguration20150331v2",
        "service": "lambda.amazonaws.com",
        "identity_arn": OPERATOR,
        "summary": {"functionName": FUNCTION, "changed_fields": ["environment"]},
    }


def _world(
    runs: list[Run],
    *,
    change_at: int = -1,
    invocations: int | None = None,
    objects: dict[int, str] | None = None,
) -> dict[str, str]:
    """A function whose role allows what it does, not in a VPC, with these invocations in the minute from
    10:00, one change, and the metrics counting them (``invocations``: what the metrics count instead)."""
    errors = sum(failed for _, failed, _ in runs)
    total = len(runs) if invocations is None else invocations
    bucket = f"arn:aws:s3:::{BUCKET}/*"
    group = f"arn:aws:logs:ca-central-1:{ACCOUNT}:log-group:{LOG_GROUP}"
    world: dict[str, Any] = {
        "get_recent_logs": _logs(runs, objects or {}),
        "get_iam_state": {
            "role_name": ROLE,
            "inline_policies": {
                "data-processor-access": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": bucket},
                        {
                            "Effect": "Allow",
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": [f"{group}:*", f"{group}:log-stream:*"],
                        },
                    ],
                }
            },
            "attached_policies": [],
        },
        "get_lambda_config": {
            "FunctionName": FUNCTION,
            "FunctionArn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
            "Runtime": "python3.12",
            "Handler": "data_processor.handler",
            "MemorySize": 128,
            "Timeout": 3,
            "State": "Active",
            "CodeSha256": "c2hhMjU2LW9mLXRoZS1jb2Rl",
            "EnvironmentVariableNames": ["INPUT_BUCKET"],
            "Versions": [{"Version": "$LATEST"}],
        },
        "get_network_state": {"function_name": FUNCTION, "in_vpc": False, "note": "not in a VPC"},
        "get_recent_changes": {
            "function_name": FUNCTION,
            "window_start": "2026-11-20T10:00:00+00:00",
            "window_end": "2026-11-21T10:05:00+00:00",
            "searched": [f"function {FUNCTION}", f"role {ROLE}"],
            "matched_events": 1,
            "returned_events": 1,
            "events": [_change(change_at)],
            "note": "CloudTrail delivers events minutes after the call.",
        },
        "get_function_metrics": {
            "function_name": FUNCTION,
            "window_start": "2026-11-21T09:05:00+00:00",
            "window_end": "2026-11-21T10:05:00+00:00",
            "minutes": [{"timestamp": MINUTE, "invocations": total, "errors": errors, "duration_max_ms": 80}],
            "invocations": total,
            "errors": errors,
            "throttles": 0,
            "error_rate": errors / total,
            "first_error_minute": MINUTE,
            "timeout_seconds": 3,
            "max_duration_ms": 80,
            "duration_to_timeout": 0.027,
            "memory_size_mb": 128,
            "peak_memory_used_mb": 60,
            "memory_to_size": 0.469,
            "log_group": LOG_GROUP,
            "report_lines": len(runs),
        },
    }
    return {tool: json.dumps(answer) for tool, answer in world.items()}


async def _diagnosis(responses: dict[str, str]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses)
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


INTERLEAVED: list[Run] = [
    (1, False, "$LATEST"),
    (2, True, "$LATEST"),
    (3, False, "$LATEST"),
    (4, True, "$LATEST"),
]


async def test_failures_interleaved_with_successes_on_one_version_are_bad_input() -> None:
    diagnosis = await _diagnosis(_world(INTERLEAVED))
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.root_cause == (
        f"{FUNCTION} fails on its own input: 2 of 4 invocations of version $LATEST read since the latest "
        "change (UpdateFunctionConfiguration at 2026-11-21T09:50:00+00:00) failed, interleaved with "
        "successes on the same version and configuration. The decisive error, request "
        f'{_request(4)}: "{HEADLINE}". The failing invocations\' input, not the function, its configuration '
        "or its permissions, is the cause."
    )
    assert diagnosis.trigger is None
    assert diagnosis.severity == "medium"
    assert diagnosis.affected_resources == [FUNCTION]
    [step] = diagnosis.remediation_plan
    assert step.command is None
    assert step.action == f"Find the caller that sends {FUNCTION} the input of request {_request(4)}"
    [gap] = [g for g in diagnosis.gaps if g.source == "remediation"]
    assert gap.reason == (
        f"No command can fix this: {FUNCTION} fails on what its callers send it (NoSuchKey in request "
        f"{_request(4)}), while the same version and configuration succeed on other input. Look at the "
        "caller that sent it (the event source, client or job that builds the event) and the object or "
        "record the event names."
    )
    [cited] = [diagnosis.evidence[i] for i in gap.evidence]
    assert (cited.tool, cited.field, cited.value) == (
        "get_recent_logs",
        "events.5.message",
        f"[ERROR] {HEADLINE}",
    )
    [support] = diagnosis.verification.support
    backing = [(diagnosis.evidence[i].field, diagnosis.evidence[i].value) for i in support.supported_by]
    assert backing == [("minutes.0.errors", "2.0"), ("minutes.0.invocations", "4.0")]
    assert [(e.kind, e.time) for e in diagnosis.timeline] == [("first_failure", "2026-11-21T10:00:02+00:00")]


async def test_every_invocation_failing_since_the_latest_change_is_not_bad_input() -> None:
    """Interleaved before an environment change at 10:00:30, then every invocation fails: the change, not
    the input (the same error, and successes before, change nothing)."""
    runs = [*INTERLEAVED, (40, True, "$LATEST"), (50, True, "$LATEST")]
    diagnosis = await _diagnosis(_world(runs, change_at=30))
    assert diagnosis.fault_types == ["unknown"]
    [ruled_out] = [r for r in diagnosis.ruled_out if r.fault_type == "bad_input"]
    assert ruled_out.reason == (
        "No invocation of version $LATEST read since the latest change (UpdateFunctionConfiguration at "
        f"2026-11-21T10:00:30+00:00) succeeded after the first failure (request {_request(5)}): failures of "
        "every input are not an input's"
    )
    assert not any(g.source == "remediation" for g in diagnosis.gaps)


async def test_failures_on_another_version_than_the_successes_are_not_bad_input() -> None:
    """Version 2 fails on every invocation while version 1 succeeds (an alias splitting traffic): the new
    version's fault, not the input."""
    runs: list[Run] = [(1, False, "1"), (2, True, "2"), (3, False, "1"), (4, True, "2"), (5, False, "1")]
    diagnosis = await _diagnosis(_world(runs))
    assert diagnosis.fault_types == ["unknown"]
    assert [r.fault_type for r in diagnosis.ruled_out if r.fault_type == "bad_input"] == ["bad_input"]


async def test_successes_only_the_logs_show_are_not_bad_input() -> None:
    """The logs show successes between the failures, the metrics count only failures: the successes are
    lines the function printed (whoever writes its input can forge them), not invocations."""
    diagnosis = await _diagnosis(_world(INTERLEAVED, invocations=2))
    assert diagnosis.fault_types == ["unknown"]


async def test_a_success_before_the_change_in_its_minute_does_not_corroborate() -> None:
    """The change at 10:00:30 falls inside the only minute: its one success the metrics count is the one
    before the change, so the success the logs show after the first failure is not one the metrics saw."""
    runs: list[Run] = [
        (10, False, "$LATEST"),
        (40, True, "$LATEST"),
        (45, False, "$LATEST"),
        (50, True, "$LATEST"),
    ]
    diagnosis = await _diagnosis(_world(runs, change_at=30, invocations=3))
    assert diagnosis.fault_types == ["unknown"]


async def test_a_version_that_fails_on_every_input_beside_one_with_bad_input_is_not_bad_input() -> None:
    """$LATEST fails and succeeds in turn, while version 2 fails every time: version 2's failures are not an
    input's, and bad_input must not stand for them."""
    runs = [*INTERLEAVED, (5, True, "2"), (6, True, "2")]
    diagnosis = await _diagnosis(_world(runs))
    assert diagnosis.fault_types == ["unknown"]
    [ruled_out] = [r for r in diagnosis.ruled_out if r.fault_type == "bad_input"]
    assert ruled_out.reason.startswith(
        "No invocation of version 2 read since the latest change (UpdateFunctionConfiguration at "
        f"2026-11-21T09:50:00+00:00) succeeded after the first failure (request {_request(5)})"
    )


# --- one bad request: the newest invocation asked for an object that does not exist ------------------------
TWO_THEN_ONE: list[Run] = [(20, False, "$LATEST"), (30, False, "$LATEST"), (40, True, "$LATEST")]
READ = {1: "incoming/a.json", 2: "incoming/b.json"}


async def test_one_request_for_an_object_no_success_named_is_bad_input() -> None:
    diagnosis = await _diagnosis(_world(TWO_THEN_ONE, objects=READ | {3: "incoming/missing.json"}))
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.root_cause == (
        f"{FUNCTION} fails on its own input: request {_request(3)} asked for "
        f"s3://{BUCKET}/incoming/missing.json, which does not exist (S3 answered NoSuchKey), after "
        f"request {_request(2)} succeeded on the same version ($LATEST) with nothing changed since, and no "
        "successful request named it. The request's input, not the function, its configuration or its "
        "permissions, is the cause."
    )
    assert diagnosis.trigger is None
    assert [s.command for s in diagnosis.remediation_plan] == [None]
    [gap] = [g for g in diagnosis.gaps if g.source == "remediation"]
    assert f"(NoSuchKey in request {_request(3)})" in gap.reason
    named = [p for p in diagnosis.evidence if p.value.endswith("incoming/missing.json\n")]
    assert [p.field for p in named] == ["events.5.message"]
    [support] = diagnosis.verification.support
    backing = [(diagnosis.evidence[i].field, diagnosis.evidence[i].value) for i in support.supported_by]
    assert backing == [("errors", "1.0"), ("minutes.0.invocations", "3.0")]


async def test_an_object_a_success_read_before_is_no_bad_input_when_it_is_missing_now() -> None:
    """It existed when a request read it: deleted since (no data event is in the change history), not the
    input's."""
    diagnosis = await _diagnosis(_world(TWO_THEN_ONE, objects=READ | {3: READ[1]}))
    assert diagnosis.fault_types == ["unknown"]


async def test_one_missing_object_after_a_change_is_no_bad_input() -> None:
    """An environment change 5 s before the last success may not have applied yet (a prefix, a bucket):
    the key may be the configuration's."""
    diagnosis = await _diagnosis(
        _world(TWO_THEN_ONE, change_at=25, objects=READ | {3: "incoming/missing.json"})
    )
    assert "bad_input" not in diagnosis.fault_types


async def test_one_missing_object_no_line_names_is_no_bad_input() -> None:
    diagnosis = await _diagnosis(_world(TWO_THEN_ONE, objects=READ))
    assert diagnosis.fault_types == ["unknown"]


async def test_one_missing_object_is_no_bad_input_when_the_metrics_count_no_success() -> None:
    """The successes are lines the function printed, not invocations the metrics counted."""
    diagnosis = await _diagnosis(_world(TWO_THEN_ONE, invocations=1, objects=READ | {3: "incoming/x.json"}))
    assert diagnosis.fault_types == ["unknown"]


STREAM = f"arn:aws:kinesis:ca-central-1:{ACCOUNT}:stream/clickstream"
MAPPING = "6c330add-a65f-4d68-b8d0-acb5f237039b"


def _on_a_stream(runs: list[Run] = INTERLEAVED, change_at: int = -1, **mapping: Any) -> dict[str, str]:
    """The failures (interleaved by default), with the function reading a Kinesis stream through a
    mapping."""
    world = _world(runs, change_at=change_at)
    sources = {
        "function_name": FUNCTION,
        "function_arn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
        "timeout_seconds": 3,
        "window_start": "2026-11-21T09:05:00+00:00",
        "window_end": "2026-11-21T10:05:00+00:00",
        "mappings": [
            {
                "UUID": MAPPING,
                "EventSourceArn": STREAM,
                "FunctionArn": f"arn:aws:lambda:ca-central-1:{ACCOUNT}:function:{FUNCTION}",
                "State": "Enabled",
                "LastProcessingResult": "PROBLEM: Function call failed",
                "BatchSize": 10,
                "StartingPosition": "LATEST",
                "MaximumRetryAttempts": -1,
                "MaximumRecordAgeInSeconds": -1,
                "BisectBatchOnFunctionError": False,
                "iterator_age_ms": 4500.0,
                "iterator_age_max_ms": 4500.0,
            }
            | mapping
        ],
        "async_config": {"configured": False, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 21600},
        "policy_statements": [],
        "subscriptions": [],
    }
    return world | {"get_event_sources": json.dumps(sources)}


async def test_a_stream_stalled_behind_the_failures_gets_a_retry_limit_with_bisection() -> None:
    diagnosis = await _diagnosis(_on_a_stream())
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.trigger is None
    [step] = diagnosis.remediation_plan
    assert step.command == (
        f"aws lambda update-event-source-mapping --uuid {MAPPING} --bisect-batch-on-function-error "
        "--maximum-retry-attempts 2 --region ca-central-1"
    )
    assert "no on-failure destination: the record it gives up on is lost" in step.details
    assert not [g for g in diagnosis.gaps if g.source == "remediation"]
    assert [(f.kind, f.resource, f.value) for f in diagnosis.impact] == [("record_age_ms", STREAM, 4500.0)]
    [support] = diagnosis.verification.support
    backing = {diagnosis.evidence[i].field for i in support.supported_by}
    assert "mappings.0.iterator_age_ms" in backing


async def test_a_stream_that_gives_up_or_keeps_up_gets_no_command() -> None:
    for mapping in (
        {"MaximumRetryAttempts": 3},  # Lambda gives up on the batch by itself
        {"MaximumRecordAgeInSeconds": 60},
        {"iterator_age_ms": 2900.0},  # no record waited longer than an invocation may run
        {"State": "Disabled"},
    ):
        diagnosis = await _diagnosis(_on_a_stream(**mapping))
        assert diagnosis.fault_types == ["bad_input"], mapping
        [step] = diagnosis.remediation_plan
        assert step.command is None, mapping
        assert [g for g in diagnosis.gaps if g.source == "remediation"], mapping


# Two successes, then the batch that follows them failing on every resend (a shard sends one batch at a time).
RESENT: list[Run] = [
    (1, False, "$LATEST"),
    (2, False, "$LATEST"),
    (20, True, "$LATEST"),
    (40, True, "$LATEST"),
]


async def test_one_batch_resent_alone_after_successes_on_a_stalled_stream_is_bad_input() -> None:
    diagnosis = await _diagnosis(_on_a_stream(RESENT))
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.trigger is None
    [step] = diagnosis.remediation_plan
    assert step.command is not None
    assert "update-event-source-mapping" in step.command
    assert [(f.kind, f.resource) for f in diagnosis.impact] == [("record_age_ms", STREAM)]


def _second_error_differs(world: dict[str, str]) -> dict[str, str]:
    logs = json.loads(world["get_recent_logs"])
    records = [e for e in logs["events"] if e["kind"] == "error_record"]
    records[-1]["message"] = "[ERROR] KeyError: 'amount'\nTraceback (most recent call last):"
    return world | {"get_recent_logs": json.dumps(logs)}


async def test_failures_after_successes_are_no_resent_batch_unless_the_stream_stalls_on_one_error() -> None:
    for world, why in (
        (_on_a_stream(RESENT, State="Disabled"), "no stream holds records back"),
        (_on_a_stream(RESENT, iterator_age_ms=2900.0), "no record waited longer than an invocation runs"),
        (_on_a_stream(RESENT, change_at=10), "a change between the successes and the failures"),
        (_on_a_stream(RESENT[:3]), "one failure: nothing was resent"),
        (_second_error_differs(_on_a_stream(RESENT)), "two errors: not one batch failing alike"),
    ):
        diagnosis = await _diagnosis(world)
        assert "bad_input" not in diagnosis.fault_types, why
