"""invocation_contract's fix for an integration timeout (supervisor/diagnosis/rules/callers.py): the timeout
the API's change history shows the integration had before the change that cut it, put back; no command when
the history does not show one, shows it on another integration, or the change did not lower it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.drill.apply_command import parse_command
from supervisor.diagnosis.rules import callers
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.findings import Finding

REGION, API, RESOURCE = "ca-central-1", "a1b2c3", "r9"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:123456789012:function:orders-api"
FAILED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TIMED_OUT = "(r-1) Execution failed due to a timeout error"
OPERATOR = "arn:aws:iam::123456789012:user/operator"


def _put(minutes: int, ms: int | None, resource: str = RESOURCE) -> dict[str, Any]:
    summary = {"restApiId": API, "resourceId": resource, "httpMethod": "POST", "type": "AWS_PROXY"}
    return _event(minutes, "PutIntegration", summary | ({"timeoutInMillis": ms} if ms is not None else {}))


def _update(minutes: int, *operations: Any) -> dict[str, Any]:
    summary = {"restApiId": API, "resourceId": RESOURCE, "httpMethod": "POST", "patchOperations": operations}
    return _event(minutes, "UpdateIntegration", summary)


def _timeout(ms: str) -> dict[str, str]:
    return {"op": "replace", "path": "/timeoutInMillis", "value": ms}


def _event(minutes: int, name: str, summary: dict[str, Any]) -> dict[str, Any]:
    at = FAILED - timedelta(minutes=minutes)
    return {"time": at.isoformat(), "event_name": name, "identity_arn": OPERATOR, "summary": summary}


def _finding(*changes: dict[str, Any]) -> Finding:
    errors = [{"at": FAILED.isoformat(), "message": TIMED_OUT}]
    stage = {
        "api_id": API,
        "api_name": "orders",
        "stage": "prod",
        "server_errors": 2,
        "execution_errors": errors,
    }
    answers: dict[str, dict[str, Any]] = {
        "get_lambda_config": {"FunctionName": "orders-api", "FunctionArn": FUNCTION_ARN},
        "get_event_sources": {"function_arn": FUNCTION_ARN, "apis": [stage]},
        "get_recent_changes": {"events": sorted(changes, key=lambda e: e["time"], reverse=True)},
    }
    found = callers.check(Conversation(function_name="orders-api", alarm={}, results=answers))
    assert isinstance(found, Finding)
    return found


@pytest.mark.parametrize(
    ("history", "restored"),
    [
        ([_put(60, 29_000), _update(5, _timeout("300"))], "29000"),
        ([_put(60, 29_000), _update(30, _timeout("5000")), _update(5, _timeout("300"))], "5000"),
        (
            [_put(60, 29_000), _update(5, {"op": "replace", "path": "/uri", "value": "x"}, _timeout("300"))],
            "29000",
        ),
        ([_put(60, 29_000), _put(5, 300)], "29000"),
    ],
)
def test_a_cut_integration_timeout_gets_back_the_value_the_history_shows_before(
    history: list[dict[str, Any]], restored: str
) -> None:
    finding = _finding(*history)
    assert finding.remedy.command is not None
    command = parse_command(finding.remedy.command, {"apigateway update-integration"})
    assert command.params == {
        "restApiId": API,
        "resourceId": RESOURCE,
        "httpMethod": "POST",
        "patchOperations": [{"op": "replace", "path": "/timeoutInMillis", "value": restored}],
    }
    assert not finding.gaps
    changes = {"events": sorted(history, key=lambda e: e["time"], reverse=True)}
    cited = [_at(changes, p.field) for p in finding.pointers if p.tool == "get_recent_changes"]
    assert restored in map(str, cited), cited  # the earlier value is quoted from the answer itself


def _at(answer: Any, field: str) -> Any:
    for part in field.split("."):
        answer = answer[int(part)] if isinstance(answer, list | tuple) else answer[part]
    return answer


@pytest.mark.parametrize(
    "history",
    [
        [_update(5, _timeout("300"))],  # nothing before it in the window
        [_put(60, 29_000, resource="other"), _update(5, _timeout("300"))],  # another integration's timeout
        [_put(60, None), _update(5, _timeout("300"))],  # created without one: not recorded
        [_put(60, 200), _update(5, _timeout("300"))],  # raised, not cut
        [_put(60, 29_000), _update(5, "replace /timeoutInMillis 300")],  # not an operation object
    ],
)
def test_without_an_earlier_larger_timeout_of_the_same_integration_the_gap_stays(
    history: list[dict[str, Any]],
) -> None:
    finding = _finding(*history)
    assert finding.remedy.command is None
    assert len(finding.gaps) == 1
    assert "Raise the integration timeout" in finding.gaps[0].reason
