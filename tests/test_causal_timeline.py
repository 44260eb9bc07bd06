"""The causal timeline's rules on hand-made tool answers: the candidate window and its tolerance at the
edges, which candidate is the trigger, a fault undone by a later change, and the remedy that follows the
trigger. Whole diagnoses on the sandbox are in test_timeline_e2e.py and the drill."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from supervisor.diagnosis.causality import PROPAGATION, success_after
from supervisor.diagnosis.rules import timeline, trigger_remedy
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.diagnose import diagnose
from supervisor.diagnosis.rules.failures import failures, newest_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy
from supervisor.diagnosis.rules.triggers import change_events

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:orders-api"


def _at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def _event(seconds: float, event_name: str, **summary: Any) -> dict[str, Any]:
    return {
        "event_id": event_name + str(seconds),
        "time": _at(seconds),
        "event_name": event_name,
        "service": "lambda.amazonaws.com",
        "identity_arn": "arn:aws:iam::123456789012:user/operator",
        "summary": summary,
    }


def _invocation(seconds: float, outcome: str) -> dict[str, Any]:
    return {"request_id": f"r{seconds}", "started": _at(seconds), "outcome": outcome}


def _conversation(
    changes: list[dict[str, Any]], invocations: list[dict[str, Any]], **config: Any
) -> Conversation:
    newest_first = sorted(changes, key=lambda e: e["time"], reverse=True)
    return Conversation(
        function_name="orders-api",
        alarm={},
        results={
            "get_recent_changes": {"events": newest_first, "searched": ["function orders-api"]},
            "get_recent_logs": {"invocations": invocations},
            "get_function_metrics": {"first_error_minute": T0.isoformat(), "minutes": []},
            "get_lambda_config": {"FunctionName": "orders-api", "FunctionArn": FUNCTION_ARN, **config},
        },
    )


def _finding(c: Conversation, first: float, last: float | None = None, relevant: str = "") -> Finding:
    def pointer(seconds: float) -> tuple[datetime, Pointer]:
        when = T0 + timedelta(seconds=seconds)
        return when, Pointer("get_recent_logs", "invocations.0.started", when.isoformat(), "", None)

    return Finding(
        "out_of_memory",
        "runs out of memory",
        "high",
        [],
        Remedy("Raise the memory", "raise it"),
        relevant_change=lambda e: e.operation == relevant,
        first_failure=pointer(first),
        last_failure=pointer(last if last is not None else first),
    )


SUCCESS_AT = 100.0
FAILURE_AT = 200.0
EDGE = PROPAGATION.total_seconds()


@pytest.mark.parametrize(
    ("change_at", "candidate"),
    [
        (SUCCESS_AT - EDGE - 1, False),  # before the last success, beyond the propagation tolerance
        (SUCCESS_AT - EDGE + 1, True),  # a success this soon after may not have seen it yet
        (SUCCESS_AT + 1, True),
        (FAILURE_AT, True),  # made the instant the first failing invocation started
        (FAILURE_AT + 1, False),  # after the first failure: it cannot have started it
    ],
)
def test_a_change_is_a_candidate_only_between_the_last_success_and_the_first_failure(
    change_at: float, candidate: bool
) -> None:
    c = _conversation(
        [_event(change_at, "UpdateFunctionConfiguration20150331v2", changed_fields=["Environment"])],
        [
            _invocation(10, "no_error_seen"),
            _invocation(SUCCESS_AT, "no_error_seen"),
            _invocation(FAILURE_AT, "runtime_exit"),
        ],
    )
    finding = _finding(c, FAILURE_AT)
    assert [e.time for e in timeline.candidates(c, finding)] == (
        [T0 + timedelta(seconds=change_at)] if candidate else []
    )
    assert (timeline.trigger(c, finding) is not None) is candidate


def test_the_latest_candidate_is_the_trigger_unless_one_is_of_the_fault_s_own_kind() -> None:
    changes = [
        _event(120, "UpdateFunctionConfiguration20150331v2", changed_fields=["MemorySize"], memorySize=128),
        _event(150, "UpdateFunctionCode20150331v2"),
        _event(160, "UpdateAlias20150331", name="live", functionVersion="2"),
    ]
    c = _conversation(
        changes, [_invocation(SUCCESS_AT, "no_error_seen"), _invocation(FAILURE_AT, "runtime_exit")]
    )
    latest = timeline.trigger(c, _finding(c, FAILURE_AT))
    assert latest is not None
    assert latest.operation == "UpdateAlias"
    own_kind = timeline.trigger(c, _finding(c, FAILURE_AT, relevant="UpdateFunctionConfiguration"))
    assert own_kind is not None
    assert own_kind.operation == "UpdateFunctionConfiguration"
    assert [e.operation for e in timeline.candidates(c, _finding(c, FAILURE_AT))] == [
        "UpdateAlias",
        "UpdateFunctionCode",
        "UpdateFunctionConfiguration",
    ]


def test_without_a_success_only_changes_of_the_fault_s_own_kind_are_candidates() -> None:
    changes = [
        _event(150, "UpdateFunctionCode20150331v2"),
        _event(-3600, "UpdateFunctionConfiguration20150331v2"),
    ]
    c = _conversation(changes, [_invocation(FAILURE_AT, "runtime_exit")])
    assert timeline.trigger(c, _finding(c, FAILURE_AT)) is None
    chosen = timeline.trigger(c, _finding(c, FAILURE_AT, relevant="UpdateFunctionConfiguration"))
    assert chosen is not None
    assert chosen.time == T0 - timedelta(seconds=3600)


@pytest.mark.parametrize(
    ("last_failure_at", "resolved"),
    [(250, True), (300 + EDGE - 1, True), (300 + EDGE + 1, False)],
)
def test_a_fault_undone_by_a_later_change_to_the_same_thing_is_resolved(
    last_failure_at: float, resolved: bool
) -> None:
    changes = [
        _event(
            150, "PutFunctionConcurrency20171031", functionName="orders-api", reservedConcurrentExecutions=0
        ),
        _event(300, "DeleteFunctionConcurrency20171031", functionName="orders-api"),
        _event(400, "UpdateFunctionConfiguration20150331v2", changed_fields=["Timeout"]),  # another thing
    ]
    c = _conversation(
        changes, [_invocation(SUCCESS_AT, "no_error_seen"), _invocation(FAILURE_AT, "runtime_exit")]
    )
    finding = _finding(c, FAILURE_AT, last_failure_at, relevant="PutFunctionConcurrency")
    cause = timeline.trigger(c, finding)
    assert cause is not None
    assert cause.operation == "PutFunctionConcurrency"
    undo = timeline.undoing(c, finding, cause)
    assert (undo.operation if undo else None) == ("DeleteFunctionConcurrency" if resolved else None)


def _throttled(changes: list[dict[str, Any]], throttled_minutes: list[int]) -> Conversation:
    """orders-api throttled (reserved concurrency 0 now) in the given minutes after T0, with successes in
    the minutes between them; the metrics' first throttle minute is the earliest."""
    minutes = [
        {"timestamp": _at(60 * m), "invocations": 0.0 if m in throttled_minutes else 3.0, "errors": 0.0}
        | {"throttles": 2.0 if m in throttled_minutes else 0.0}
        for m in range(max(throttled_minutes) + 1)
    ]
    metrics = {
        "minutes": minutes,
        "throttles": 2.0 * len(throttled_minutes),
        "first_throttle_minute": _at(60 * min(throttled_minutes)),
        "timeout_seconds": 3,
    }
    return Conversation(
        function_name="orders-api",
        alarm={},
        results={
            "get_recent_changes": {
                "events": sorted(changes, key=lambda e: e["time"], reverse=True),
                "searched": ["function orders-api"],
            },
            "get_function_metrics": metrics,
            "get_lambda_config": {
                "FunctionName": "orders-api",
                "FunctionArn": FUNCTION_ARN,
                "ReservedConcurrentExecutions": 0,
            },
        },
    )


def _concurrency(seconds: float, value: int | None) -> dict[str, Any]:
    if value is None:
        return _event(seconds, "DeleteFunctionConcurrency20171031", functionName="orders-api")
    return _event(
        seconds,
        "PutFunctionConcurrency20171031",
        functionName="orders-api",
        reservedConcurrentExecutions=value,
    )


def test_a_fault_undone_then_made_again_is_current_from_the_change_that_brought_it_back() -> None:
    first, undone, again = _concurrency(130, 0), _concurrency(150, None), _concurrency(490, 0)
    diagnosis = diagnose(_throttled([first, undone, again], [2, 8]))
    assert diagnosis["fault_types"] == ["throttling"]
    assert diagnosis["trigger"]["time"] == again["time"]
    assert diagnosis["resolved"] == []
    [began] = [e for e in diagnosis["timeline"] if e["kind"] == "first_failure"]
    assert began["time"] == again["time"]  # in the minute from 8, after the change at 8:10
    assert diagnosis["evidence"][began["evidence"][0]]["field"] == "minutes.8.throttles"


def test_a_fault_never_undone_stays_dated_by_its_first_failure_and_its_first_cause() -> None:
    first, again = _concurrency(130, 0), _concurrency(490, 0)  # set twice, never lifted between
    diagnosis = diagnose(_throttled([first, again], [2, 8]))
    assert diagnosis["trigger"]["time"] == first["time"]
    [began] = [e for e in diagnosis["timeline"] if e["kind"] == "first_failure"]
    assert diagnosis["evidence"][began["evidence"][0]]["field"] == "first_throttle_minute"


def _memory(mb: int) -> dict[str, Any]:
    return {"functionName": "orders-api", "changed_fields": ["memorySize"], "memorySize": mb}


def test_a_fault_undone_then_touched_by_another_kind_of_change_has_not_come_back() -> None:
    changes = [
        _event(130, "UpdateFunctionConfiguration20150331v2", **_memory(128)),
        _event(250, "UpdateFunctionConfiguration20150331v2", **_memory(512)),
        _event(400, "UpdateFunctionConfiguration20150331v2", changed_fields=["Timeout"], timeout=9),
    ]
    invocations = [
        _invocation(SUCCESS_AT, "no_error_seen"),
        _invocation(FAILURE_AT, "runtime_exit"),
        _invocation(300, "no_error_seen"),
        _invocation(450, "runtime_exit"),
    ]
    c = _conversation(changes, invocations)
    finding = _finding(c, FAILURE_AT, 450)
    failed = Pointer("get_recent_logs", "invocations.1.started", _at(FAILURE_AT), "", None)
    finding = replace(
        finding,
        relevant_change=lambda e: "memorysize" in e.changed_fields,
        first_failure=(T0 + timedelta(seconds=FAILURE_AT), failed),
    )
    cause = timeline.trigger(c, finding)
    assert cause is not None
    assert cause.time == T0 + timedelta(seconds=130)
    assert timeline.recurrence(c, finding, cause) is None
    changes.append(_event(420, "UpdateFunctionConfiguration20150331v2", **_memory(128)))
    c = _conversation(changes, invocations)
    again = timeline.recurrence(c, finding, cause)
    assert again is not None
    undo, (began, pointer) = again
    assert undo.time == T0 + timedelta(seconds=250)
    assert (began, pointer.field) == (T0 + timedelta(seconds=450), "invocations.3.started")


def test_a_deployment_trigger_is_rolled_back_and_an_environment_change_is_a_named_gap() -> None:
    aliases = [{"Name": "live", "FunctionVersion": "3"}]
    versions = [{"Version": "$LATEST"}, {"Version": "2"}, {"Version": "3"}]
    moved = _event(160, "UpdateAlias20150331", name="live", functionVersion="3")
    c = _conversation([moved], [], Aliases=aliases, Versions=versions, EnvironmentVariableNames=["REPORT_MB"])
    alias_move = ChangeEvent(0, moved, T0)
    undo = trigger_remedy.undo(c, alias_move)
    assert undo is not None
    assert undo.gap is None
    assert undo.remedy.command is not None
    assert "update-alias" in undo.remedy.command
    assert "--function-version 2" in undo.remedy.command
    env = ChangeEvent(
        0, _event(160, "UpdateFunctionConfiguration20150331v2", changed_fields=["Environment"]), T0
    )
    named = trigger_remedy.undo(c, env)
    assert named is not None
    assert named.remedy.command is None
    assert named.gap == (
        f"the environment values before the change at {env.event['time']} are not recorded (CloudTrail hides "
        "them; variables set now: REPORT_MB): no command can restore them"
    )


@pytest.mark.parametrize(
    ("earlier", "current", "expected"),
    [
        ([("CreateAlias20150331", "3")], "2", "3"),  # moved back from 3 to a buggy 2: back to 3, not 1
        ([("CreateAlias20150331", "1"), ("UpdateAlias20150331", "3")], "2", "3"),  # the call just before
        ([], "3", "2"),  # no earlier call: a move forward to the newest goes back to the version before it
        ([], "2", None),  # no earlier call and not the newest: what it held is unknown, no command
    ],
)
def test_an_alias_rollback_returns_to_the_version_the_alias_held_just_before(
    earlier: list[tuple[str, str]], current: str, expected: str | None
) -> None:
    aliases = [{"Name": "live", "FunctionVersion": current}]
    versions = [{"Version": v} for v in ("$LATEST", "1", "2", "3")]
    calls = [
        _event(100 + 10 * n, name, name="live", functionVersion=v) for n, (name, v) in enumerate(earlier)
    ]
    moved = _event(160, "UpdateAlias20150331", name="live", functionVersion=current)
    c = _conversation([*calls, moved], [], Aliases=aliases, Versions=versions)
    trigger = next(e for e in change_events(c) if e.event is moved)
    undo = trigger_remedy.undo(c, trigger)
    assert undo is not None
    command = undo.remedy.command
    if expected is None:
        assert command is None
        assert undo.gap is not None
    else:
        assert command is not None
        assert f"--function-version {expected} " in f"{command} "
        assert f"--function-version {current} " not in f"{command} "


def test_a_setting_is_put_back_to_its_value_before_the_trigger_never_to_the_trigger_s_own() -> None:
    """Cut to 1, put back to 3, cut to 1 again: the last cut is undone with 3. The first cut, undone by the
    put-back, is undone with 3 as well: the value it replaced (the creation's), not 1, its own new value."""
    changes = [
        _event(10, "CreateFunction20150331", timeout=3),
        _event(100, "UpdateFunctionConfiguration20150331v2", changed_fields=["Timeout"], timeout=1),
        _event(150, "UpdateFunctionConfiguration20150331v2", changed_fields=["Timeout"], timeout=3),
        _event(170, "UpdateFunctionConfiguration20150331v2", changed_fields=["Timeout"], timeout=1),
    ]
    c = _conversation(changes, [])
    by_time = {e.time: e for e in change_events(c)}
    for cut in (T0 + timedelta(seconds=100), T0 + timedelta(seconds=170)):
        undo = trigger_remedy.undo(c, by_time[cut])
        assert undo is not None
        assert undo.remedy.command is not None
        assert "--timeout 3" in undo.remedy.command
        assert "--timeout 1" not in undo.remedy.command
    unchanged = _conversation([_event(10, "CreateFunction20150331", timeout=1), changes[1]], [])
    newest = change_events(unchanged)[0]
    assert trigger_remedy.undo(unchanged, newest) is None  # it set what was there: nothing to put back


def test_a_change_of_a_setting_no_undo_is_recorded_for_leaves_the_finding_s_own_remedy() -> None:
    changes = [
        _event(10, "CreateFunction20150331", ephemeralStorage={"size": 1024}),
        _event(100, "UpdateFunctionConfiguration20150331v2", changed_fields=["ephemeralStorage"]),
    ]
    c = _conversation(changes, [])
    assert trigger_remedy.undo(c, change_events(c)[0]) is None


def test_a_fault_that_builds_up_is_bounded_by_the_success_before_its_newest_cause_not_by_later_ones() -> None:
    """Deployed at 10 and 100; runs succeeded at 50 (the old build) and 150 (the new one, before /tmp was
    full); the first failure at 200. The 100 deployment is the only candidate."""
    changes = [_event(10, "UpdateFunctionCode20150331v2"), _event(100, "UpdateFunctionCode20150331v2")]
    c = _conversation(changes, [_invocation(50, "no_error_seen"), _invocation(150, "no_error_seen")])
    finding = _finding(c, first=200, relevant="UpdateFunctionCode")
    assert timeline.trigger(c, finding) is None  # bounded by the success at 150, nothing after it
    building = replace(finding, accumulates=True)
    assert [e.time for e in timeline.candidates(c, building)] == [T0 + timedelta(seconds=100)]
    assert timeline.trigger(c, building) == change_events(c)[0]


@pytest.mark.parametrize("record_read", [True, False])
def test_what_fails_now_is_the_newest_failed_invocation_not_the_newest_record_read(record_read: bool) -> None:
    """Forged invocations (planted before the real one) carry denials; the real one timed out. When the
    answer holds the real one's report but not its record, no older record stands in for it."""
    forged = [_invocation(50 + n, "error_record") | {"request_id": f"dead{n}"} for n in range(2)]
    real = _invocation(FAILURE_AT, "timeout")
    events = [
        {"kind": "error_record", "request_id": f"dead{n}", "message": "[ERROR] AccessDeniedException: no"}
        for n in range(2)
    ]
    if record_read:
        events.append({"kind": "timeout", "request_id": real["request_id"], "message": "Task timed out"})
    c = _conversation([], [*forged, real])
    c.results["get_recent_logs"]["events"] = events
    c.results["get_function_metrics"]["first_error_minute"] = T0.isoformat()
    newest = newest_failure(c)
    assert (newest.request_id if newest else None) == (real["request_id"] if record_read else None)
    assert [f.request_id for f in failures(c)][-1] == (real["request_id"] if record_read else "dead1")


@pytest.mark.parametrize(
    ("success_at", "refused"),
    [(30 - EDGE + 1, False), (30 + EDGE + 1, True), (FAILURE_AT + 1, False)],
)
def test_verification_refuses_a_trigger_a_later_success_clears(success_at: float, refused: bool) -> None:
    logs = {
        "invocations": [_invocation(success_at, "no_error_seen"), _invocation(FAILURE_AT, "runtime_exit")]
    }
    reason = success_after(T0 + timedelta(seconds=30), [logs])
    assert bool(reason) is refused, reason
    if refused:
        assert _at(success_at) in reason
        assert "last successful invocation" in reason
