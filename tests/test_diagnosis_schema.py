"""The trigger, timeline, gaps, ruled-out hypotheses and resolved faults of a diagnosis, and the commands of
its remediation: what the schema refuses, and what the code verifies against the run's tool results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from supervisor.diagnosis.evidence import Responses, describe_failures, verify
from supervisor.diagnosis.standing import confidence, standing_claims
from supervisor.schemas import DiagnosisSubmission, Verification
from tests.agent_support import (
    CHANGE_TIME,
    CHANGES,
    COMMAND,
    CONFIG,
    FUNCTION,
    IAM,
    LOGS,
    METRICS,
    NETWORK,
    OPERATOR,
    POLICY_DELETED,
    POLICY_RESTORED,
    THROTTLED_MINUTE,
    UNDONE_CHANGES,
    pointer,
    submission,
    with_resolved,
)

RESPONSES: dict[str, list[Any]] = {
    "get_lambda_config": [CONFIG],
    "get_function_metrics": [METRICS],
    "get_recent_changes": [CHANGES],
    "get_recent_logs": [LOGS],
    "get_iam_state": [IAM],
    "get_network_state": [NETWORK],
}
EVENT_NAME = "PutFunctionConcurrency20171031"


def _full(**overrides: Any) -> dict[str, Any]:
    """A throttling diagnosis with every part filled, all of it holding against RESPONSES:
    evidence 0 the limit, 1 the throttles, 2 the change event, 3 its time, 4 the first throttled minute,
    5 a log line (context), 6 the network verdict."""
    payload = submission(
        evidence=[
            pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"),
            pointer("get_function_metrics", "throttles", "4.0"),
            pointer("get_recent_changes", "events.0.event_name", EVENT_NAME),
            pointer("get_recent_changes", "events.0.time", CHANGE_TIME, None),
            pointer("get_function_metrics", "first_throttle_minute", THROTTLED_MINUTE, None),
            pointer("get_recent_logs", "events.1.message", "AccessDenied", None),
            pointer("get_network_state", "in_vpc", "false", None),
        ],
        trigger={
            "event_name": EVENT_NAME,
            "identity": OPERATOR,
            "time": CHANGE_TIME,
            "seconds_before_first_failure": 30,
            "evidence": [2, 3],
        },
        timeline=[
            {"time": CHANGE_TIME, "kind": "change", "description": "Concurrency set to 0", "evidence": [2]},
            {"time": THROTTLED_MINUTE, "kind": "first_failure", "description": "Throttled", "evidence": [4]},
        ],
        gaps=[
            {"source": "get_recent_logs", "reason": "throttled requests leave no log lines", "evidence": [5]}
        ],
        ruled_out=[{"fault_type": "network_block", "reason": "Not in a VPC", "evidence": [6]}],
    )
    payload.update(overrides)
    return payload


def _checked(payload: dict[str, Any]) -> Verification:
    return verify(DiagnosisSubmission.model_validate(payload), RESPONSES, 0, FUNCTION)


def _stated(payload: dict[str, Any], responses: Responses = RESPONSES) -> float:
    """The confidence of what stands of ``payload``, computed from what remains."""
    submitted = DiagnosisSubmission.model_validate(payload)
    check = verify(submitted, responses, 0, FUNCTION)
    _, again, refused = standing_claims(submitted, check, responses, FUNCTION)
    return confidence(submitted.confidence, check, refused, again)


def _entries(verification: Verification) -> dict[str, tuple[bool, str]]:
    return {check.entry: (check.verified, check.reason) for check in verification.entries}


def test_a_complete_diagnosis_checks_out_entry_by_entry() -> None:
    verification = _checked(_full())
    assert [check.verified for check in verification.pointers] == [True] * 7  # every pointer of _full()
    assert _entries(verification) == {
        "remediation_plan.0": (True, ""),
        "trigger": (True, ""),
        "timeline.0": (True, ""),
        "timeline.1": (True, ""),
        "gaps.0": (True, ""),
        "ruled_out.0": (True, ""),
        "remediation_plan.0.command": (True, ""),
    }
    assert verification.passed
    assert _stated(_resolved(), UNDONE) == 0.9


def test_the_new_parts_are_optional() -> None:
    bare = DiagnosisSubmission.model_validate(submission())
    assert (bare.trigger, bare.timeline, bare.gaps, bare.ruled_out, bare.resolved) == (None, [], [], [], [])


# --------------------------------------------------------------------------- what the schema refuses


@dataclass(frozen=True)
class _Set:
    """A change to a payload: the value at a dotted path (list indices as segments)."""

    path: str
    value: Any

    def __call__(self, payload: dict[str, Any]) -> None:
        *parents, last = self.path.split(".")
        node: Any = payload
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = self.value
        else:
            node[last] = self.value

    def __str__(self) -> str:
        return f"{self.path}={self.value!r}"


def _set(path: str, value: Any) -> _Set:
    return _Set(path, value)


def _change_id(value: object) -> str | None:
    return str(value) if isinstance(value, _Set) else None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            _set("trigger.evidence", [7]),
            "trigger refers to evidence 7, but there are only 7 evidence pointers",
        ),
        (_set("timeline.1.evidence", [4, 9]), "timeline.1 refers to evidence 9"),
        (_set("gaps.0.evidence", [7]), "gaps.0 refers to evidence 7"),
        (_set("ruled_out.0.evidence", [70]), "ruled_out.0 refers to evidence 70"),
        (_set("remediation_plan.0.evidence_basis", [0, 7]), "remediation_plan.0 refers to evidence 7"),
        (_set("trigger.evidence", [-1]), "greater than or equal to 0"),
        (_set("timeline.0.evidence", [-2]), "greater than or equal to 0"),
        (_set("trigger.evidence", []), "at least 1 item"),
        (_set("timeline.0.evidence", []), "at least 1 item"),
        (_set("ruled_out.0.evidence", []), "at least 1 item"),
        (_set("trigger.event_name", ""), "at least 1 character"),
        (_set("trigger.seconds_before_first_failure", -1), "greater than or equal to 0"),
        (_set("timeline.0.kind", "rumour"), "Input should be 'change', 'first_failure'"),
        (_set("timeline.0.description", ""), "at least 1 character"),
        (_set("gaps.0.reason", ""), "at least 1 character"),
        (_set("ruled_out.0.reason", ""), "at least 1 character"),
        (_set("ruled_out.0.fault_type", "disk_full"), "Input should be 'permission_loss'"),
        (_set("trigger.surprise", True), "Extra inputs are not permitted"),
    ],
    ids=_change_id,
)
def test_malformed_parts_are_refused(change: _Set, message: str) -> None:
    payload = _full()
    change(payload)
    with pytest.raises(ValidationError, match=re.escape(message)):
        DiagnosisSubmission.model_validate(payload)


def test_a_timeline_out_of_order_is_refused() -> None:
    payload = _full()
    payload["timeline"].reverse()
    with pytest.raises(ValidationError, match="timeline entries must be in time order, oldest first"):
        DiagnosisSubmission.model_validate(payload)


def test_timeline_order_is_by_instant_not_by_text() -> None:
    payload = _full()
    payload["timeline"][1]["time"] = "2026-11-21T06:00:00-04:00"  # 10:00 UTC, after the change at 09:59:30
    assert DiagnosisSubmission.model_validate(payload).timeline[1].time == "2026-11-21T06:00:00-04:00"
    payload["timeline"][1]["time"] = "2026-11-21T10:59:00+01:00"  # 09:59 UTC: before the change
    with pytest.raises(ValidationError, match="time order"):
        DiagnosisSubmission.model_validate(payload)


def test_entries_at_the_same_instant_are_in_order() -> None:
    payload = _full()
    payload["timeline"][1]["time"] = CHANGE_TIME
    assert len(DiagnosisSubmission.model_validate(payload).timeline) == 2


@pytest.mark.parametrize("reported", ["throttling", "unknown"])
def test_ruled_out_cannot_list_a_reported_fault_or_unknown(reported: str) -> None:
    payload = _full()
    payload["ruled_out"][0]["fault_type"] = reported
    with pytest.raises(ValidationError, match=f"ruled_out lists '{reported}', which is also reported"):
        DiagnosisSubmission.model_validate(payload)


@pytest.mark.parametrize("where", ["trigger.time", "timeline.0.time"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2026-11-21T09:59:30", "time must carry its UTC offset"),
        ("2026-11-21 09:59", "time must carry its UTC offset"),
        ("yesterday at ten", "time must be ISO-8601 with its offset"),
        ("", "time must be ISO-8601 with its offset"),
    ],
)
def test_times_without_an_offset_or_not_iso_are_refused(where: str, value: str, message: str) -> None:
    payload = _full()
    _set(where, value)(payload)
    with pytest.raises(ValidationError, match=message):
        DiagnosisSubmission.model_validate(payload)


def test_times_with_z_or_an_offset_are_accepted() -> None:
    payload = _full()
    payload["trigger"]["time"] = "2026-11-21T09:59:30Z"
    payload["timeline"][0]["time"] = "2026-11-21T11:59:30+02:00"
    accepted = DiagnosisSubmission.model_validate(payload)
    assert accepted.trigger is not None
    assert accepted.trigger.time == "2026-11-21T09:59:30Z"


# --------------------------------------------------------------------------- what the code verifies


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            _set("trigger.time", "2026-11-21T09:58:00+00:00"),
            f"the event cited (evidence 2, events.0) is not a {EVENT_NAME} at 2026-11-21T09:58:00+00:00",
        ),
        (
            _set("trigger.event_name", "DeleteFunctionConcurrency20171031"),
            "the event cited (evidence 2, events.0) is not a DeleteFunctionConcurrency20171031 at "
            f"{CHANGE_TIME}",
        ),
        (
            _set("trigger.evidence", [0]),  # the configuration, not a change
            "a trigger must cite the change event it names: a get_recent_changes pointer into events.<n>",
        ),
        (
            _set("trigger.evidence", [4]),  # the metrics, not a change
            "a trigger must cite the change event it names: a get_recent_changes pointer into events.<n>",
        ),
    ],
    ids=["other-time", "other-event-name", "cites-config", "cites-metrics"],
)
def test_a_trigger_must_be_the_change_event_it_cites(change: _Set, reason: str) -> None:
    payload = _full(confidence=1.0)
    assert _stated(payload) == 1.0
    change(payload)
    verification = _checked(payload)
    assert [check.verified for check in verification.pointers] == [True] * 7  # every pointer holds ...
    assert _entries(verification)["trigger"] == (False, reason)  # ... the trigger does not
    assert not verification.passed
    assert _stated(payload) == round(14 / 15, 3)  # the trigger, of 7 pointers, 7 entries, 1 fault type
    assert f"- trigger: {reason}" in describe_failures(
        DiagnosisSubmission.model_validate(payload), verification
    )


def test_a_trigger_at_the_same_instant_written_otherwise_holds() -> None:
    payload = _full()
    payload["trigger"]["time"] = "2026-11-21T04:59:30-05:00"
    payload["timeline"][0]["time"] = "2026-11-21T09:59:30Z"
    assert _entries(_checked(payload))["trigger"] == (True, "")


def test_a_trigger_citing_a_change_event_that_is_not_there_fails_on_its_pointer() -> None:
    payload = _full()
    payload["evidence"][2] = pointer("get_recent_changes", "events.5.event_name", EVENT_NAME)
    verification = _checked(payload)
    assert not verification.pointers[2].verified
    assert _entries(verification)["trigger"] == (False, "cites evidence 2, not verified")


def test_ruled_out_citing_only_logs_is_not_verified() -> None:
    payload = _full()
    payload["ruled_out"][0]["evidence"] = [5]
    verification = _checked(payload)
    assert verification.pointers[5].verified
    assert _entries(verification)["ruled_out.0"] == (
        False,
        "log text cannot rule a hypothesis out: cite configuration, IAM, metrics or network",
    )
    assert not verification.passed


def test_ruled_out_citing_logs_and_a_verdict_holds() -> None:
    payload = _full()
    payload["ruled_out"][0]["evidence"] = [5, 6]
    assert _entries(_checked(payload))["ruled_out.0"] == (True, "")


TYPO = COMMAND.replace("concurrency", "concurency")


def test_a_command_with_a_typo_is_not_verified_and_lowers_the_confidence() -> None:
    payload = submission()  # two pointers, a step with its command and a fault type: five claims
    good, good_confidence = _checked(payload), _stated(payload)
    payload["remediation_plan"][0]["command"] = TYPO
    bad = _checked(payload)
    verified, reason = _entries(bad)["remediation_plan.0.command"]
    assert not verified
    assert reason.startswith("the command does not parse: unknown operation 'delete-function-concurency'")
    assert "did you mean delete-function-concurrency" in reason
    assert _entries(bad)["remediation_plan.0"] == (True, "")  # the step's evidence still holds
    assert [check.verified for check in bad.pointers] == [True, True]
    assert (good.passed, bad.passed) == (True, False)
    assert (good_confidence, _stated(payload)) == (0.9, 0.8)  # the step is refused


def test_a_command_that_quotes_a_redacted_value_is_not_verified() -> None:
    payload = submission()
    payload["remediation_plan"][0]["command"] = COMMAND + " --cli-input-json [REDACTED:aws_secret_key]"
    assert _entries(_checked(payload))["remediation_plan.0.command"][0] is False  # does not parse either
    payload["remediation_plan"][0]["command"] = (
        "aws lambda update-function-configuration --function-name data-processor "
        "--description 'postgres://admin:[REDACTED:url_password]@db.example.com'"
    )
    verified, reason = _entries(_checked(payload))["remediation_plan.0.command"]
    assert not verified
    assert reason.startswith("the command quotes a redacted value ([REDACTED:<kind>])")
    payload["remediation_plan"][0]["command"] = payload["remediation_plan"][0]["command"].replace(
        "[REDACTED:url_password]", "REDACTED"
    )
    assert _entries(_checked(payload))["remediation_plan.0.command"] == (True, "")


def test_a_command_with_a_typo_fails_a_complete_diagnosis_too() -> None:
    payload = _full(confidence=1.0)
    payload["remediation_plan"][0]["command"] = TYPO
    verification = _checked(payload)
    assert _entries(verification)["remediation_plan.0.command"][0] is False
    assert not verification.passed  # so the graph sends it back for a refinement turn
    assert _stated(payload) == round(14 / 15, 3)
    assert "- remediation_plan.0.command: the command does not parse" in describe_failures(
        DiagnosisSubmission.model_validate(payload), verification
    )


@pytest.mark.parametrize(
    "command",
    [
        COMMAND,
        f"{COMMAND} --region ca-central-1",
        "aws lambda put-function-concurrency --function-name data-processor "
        "--reserved-concurrent-executions 5",
    ],
)
def test_a_valid_command_is_verified(command: str) -> None:
    payload = _full()
    payload["remediation_plan"][0]["command"] = command
    assert _entries(_checked(payload))["remediation_plan.0.command"] == (True, "")


def test_a_step_without_a_command_has_no_command_entry() -> None:
    payload = _full()
    payload["remediation_plan"][0]["command"] = None
    assert "remediation_plan.0.command" not in _entries(_checked(payload))


@pytest.mark.parametrize("entry", ["trigger", "timeline.0", "gaps.0", "ruled_out.0", "remediation_plan.0"])
def test_an_entry_citing_an_unverified_pointer_fails(entry: str) -> None:
    payload = _full()
    payload["evidence"].append(
        pointer("get_recent_changes", "events.0.time", "2026-11-20T00:00:00+00:00", None)
    )
    where = {
        "trigger": "trigger.evidence",
        "timeline.0": "timeline.0.evidence",
        "gaps.0": "gaps.0.evidence",
        "ruled_out.0": "ruled_out.0.evidence",
        "remediation_plan.0": "remediation_plan.0.evidence_basis",
    }[entry]
    _set(where, [2, 7] if entry == "trigger" else [7])(payload)
    verification = _checked(payload)
    assert not verification.pointers[7].verified
    assert _entries(verification)[entry] == (False, "cites evidence 7, not verified")
    others = {name: check for name, check in _entries(verification).items() if name != entry}
    assert [verified for verified, _ in others.values()] == [True] * 6
    assert not verification.passed


# --------------------------------------------------------------------------- resolved faults

UNDONE: dict[str, list[Any]] = RESPONSES | {"get_recent_changes": [UNDONE_CHANGES]}


def _resolved(**overrides: Any) -> dict[str, Any]:
    """``_full()`` with a resolved permission_loss, all of it holding against UNDONE: evidence 7 the
    DeleteRolePolicy event that caused it, 8 the PutRolePolicy event that undid it, 9 no error since."""
    payload = with_resolved(_full())
    payload.update(overrides)
    return payload


def _checked_undone(payload: dict[str, Any]) -> Verification:
    return verify(DiagnosisSubmission.model_validate(payload), UNDONE, 0, FUNCTION)


def test_a_resolved_fault_citing_the_events_it_names_checks_out() -> None:
    accepted = DiagnosisSubmission.model_validate(_resolved())
    assert [(r.fault_type, r.caused_by.event_name, r.undone_by.event_name) for r in accepted.resolved] == [
        ("permission_loss", "DeleteRolePolicy", "PutRolePolicy")
    ]
    assert accepted.citations()[-3:] == [
        ("resolved.0", [9]),
        ("resolved.0.caused_by", [7]),
        ("resolved.0.undone_by", [8]),
    ]
    verification = _checked_undone(_resolved())
    assert [check.verified for check in verification.pointers] == [True] * 10  # every one of _resolved()
    assert _entries(verification) == {
        "remediation_plan.0": (True, ""),
        "trigger": (True, ""),
        "timeline.0": (True, ""),
        "timeline.1": (True, ""),
        "gaps.0": (True, ""),
        "ruled_out.0": (True, ""),
        "resolved.0": (True, ""),
        "resolved.0.caused_by": (True, ""),
        "resolved.0.undone_by": (True, ""),
        "remediation_plan.0.command": (True, ""),
    }
    assert [s.fault_type for s in verification.support] == ["throttling"]  # a resolved fault needs none
    assert verification.passed
    assert _stated(_resolved(), UNDONE) == 0.9


CONTRADICTION = (
    "resolved.0 lists 'throttling', which fault_types also reports: a fault is current or resolved, not "
    "both. If it has failed since the change that undid it, keep it in fault_types and drop it from "
    "resolved; otherwise remove it from fault_types"
)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("resolved.0.fault_type", "throttling"), CONTRADICTION),
        (
            _set("resolved.0.fault_type", "unknown"),
            "resolved.0 is 'unknown': only a named fault type can be resolved",
        ),
        (
            _set("resolved.0.undone_by.time", POLICY_DELETED),
            f"resolved.0: undone_by ({POLICY_DELETED}) must be later than caused_by ({POLICY_DELETED})",
        ),
        (
            _set("resolved.0.undone_by.time", "2026-11-21T05:39:59-04:00"),  # 09:39:59 UTC
            "resolved.0: undone_by (2026-11-21T05:39:59-04:00) must be later than caused_by "
            f"({POLICY_DELETED})",
        ),
        (_set("resolved.0.evidence", [10]), "resolved.0 refers to evidence 10, but there are only 10"),
        (_set("resolved.0.caused_by.evidence", [70]), "resolved.0.caused_by refers to evidence 70"),
        (_set("resolved.0.undone_by.evidence", [10]), "resolved.0.undone_by refers to evidence 10"),
        (_set("resolved.0.evidence", []), "at least 1 item"),
        (_set("resolved.0.caused_by.evidence", []), "at least 1 item"),
        (_set("resolved.0.undone_by.evidence", [-1]), "greater than or equal to 0"),
        (_set("resolved.0.reason", ""), "at least 1 character"),
        (_set("resolved.0.caused_by.event_name", ""), "at least 1 character"),
        (_set("resolved.0.undone_by.time", "2026-11-21T09:45:00"), "time must carry its UTC offset"),
        (_set("resolved.0.caused_by.time", "before lunch"), "time must be ISO-8601 with its offset"),
        (_set("resolved.0.fault_type", "disk_full"), "Input should be 'permission_loss'"),
        (_set("resolved.0.caused_by.identity", OPERATOR), "Extra inputs are not permitted"),
        (_set("resolved.0.surprise", True), "Extra inputs are not permitted"),
    ],
    ids=_change_id,
)
def test_malformed_resolved_faults_are_refused(change: _Set, message: str) -> None:
    payload = _resolved()
    assert DiagnosisSubmission.model_validate(payload).resolved
    change(payload)
    with pytest.raises(ValidationError, match=re.escape(message)):
        DiagnosisSubmission.model_validate(payload)


def test_a_fault_is_resolved_at_most_once() -> None:
    payload = _resolved()
    payload["resolved"].append(payload["resolved"][0] | {"reason": "again"})
    with pytest.raises(
        ValidationError,
        match=re.escape("resolved lists 'permission_loss' more than once: one entry per fault"),
    ):
        DiagnosisSubmission.model_validate(payload)


def test_unknown_as_the_current_verdict_beside_a_resolved_fault_is_accepted() -> None:
    """Nothing current but a fault undone: only a fault also in fault_types contradicts resolved."""
    payload = _resolved(fault_types=["unknown"])
    assert DiagnosisSubmission.model_validate(payload).resolved[0].fault_type == "permission_loss"


@pytest.mark.parametrize(
    ("change", "entry", "reason"),
    [
        (
            _set("resolved.0.caused_by.evidence", [8]),  # the PutRolePolicy event, named DeleteRolePolicy
            "resolved.0.caused_by",
            f"the event cited (evidence 8, events.1) is not a DeleteRolePolicy at {POLICY_DELETED}",
        ),
        (
            _set("resolved.0.undone_by.evidence", [2]),  # the concurrency change, named PutRolePolicy
            "resolved.0.undone_by",
            f"the event cited (evidence 2, events.0) is not a PutRolePolicy at {POLICY_RESTORED}",
        ),
        (
            _set("resolved.0.caused_by.time", "2026-11-21T09:41:00+00:00"),
            "resolved.0.caused_by",
            "the event cited (evidence 7, events.2) is not a DeleteRolePolicy at 2026-11-21T09:41:00+00:00",
        ),
        (
            _set("resolved.0.undone_by.event_name", "AttachRolePolicy"),
            "resolved.0.undone_by",
            f"the event cited (evidence 8, events.1) is not a AttachRolePolicy at {POLICY_RESTORED}",
        ),
        (
            _set("resolved.0.caused_by.evidence", [9]),  # the metrics, not a change
            "resolved.0.caused_by",
            "the change that caused a resolved fault must cite the change event it names: a "
            "get_recent_changes pointer into events.<n>",
        ),
        (
            _set("resolved.0.undone_by.evidence", [0]),  # the configuration, not a change
            "resolved.0.undone_by",
            "the change that undid a resolved fault must cite the change event it names: a "
            "get_recent_changes pointer into events.<n>",
        ),
        (
            _set("resolved.0.evidence", [5]),  # a log line alone
            "resolved.0",
            "log text cannot show that a fault is over: cite configuration, IAM, metrics or network",
        ),
    ],
    ids=["caused-by-other-event", "undone-by-other-event", "other-time", "other-name", "cites-metrics",
         "cites-config", "only-logs"],
)  # fmt: skip
def test_a_resolved_fault_must_be_the_changes_it_cites(change: _Set, entry: str, reason: str) -> None:
    payload = _resolved(confidence=1.0)
    assert _stated(payload, UNDONE) == 1.0
    change(payload)
    verification = _checked_undone(payload)
    assert [check.verified for check in verification.pointers] == [True] * 10  # every pointer holds ...
    failed = {name: check for name, check in _entries(verification).items() if not check[0]}
    assert failed == {entry: (False, reason)}  # ... this one entry does not
    assert not verification.passed
    assert _stated(payload, UNDONE) == round(
        20 / 21, 3
    )  # the resolved fault, of 10 pointers, 10 entries, 1 fault
    assert f"- {entry}: {reason}" in describe_failures(
        DiagnosisSubmission.model_validate(payload), verification
    )


def test_a_resolved_fault_citing_logs_and_the_metrics_holds() -> None:
    assert _entries(_checked_undone(_resolved()))["resolved.0"] == (True, "")
    payload = _resolved()
    payload["resolved"][0]["evidence"] = [5, 9]
    assert _entries(_checked_undone(payload))["resolved.0"] == (True, "")


def test_a_resolved_fault_citing_a_change_that_is_not_there_fails_on_its_pointer() -> None:
    payload = _resolved()
    assert _entries(_checked(payload))["resolved.0.caused_by"] == (False, "cites evidence 7, not verified")
    payload["evidence"][8] = pointer("get_recent_changes", "events.5.event_name", "PutRolePolicy", None)
    verification = _checked_undone(payload)
    assert [check.index for check in verification.pointers if not check.verified] == [8]
    assert _entries(verification)["resolved.0.undone_by"] == (False, "cites evidence 8, not verified")
    assert _entries(verification)["resolved.0.caused_by"] == (True, "")
