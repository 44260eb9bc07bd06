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


HTTP_API, INTEGRATION = "h7j8k9", "i4x5"


def _v2(minutes: int, ms: int, integration: str = INTEGRATION) -> dict[str, Any]:
    summary = {"apiId": HTTP_API, "integrationId": integration, "timeoutInMillis": ms}
    return _event(minutes, "UpdateIntegration", summary)


def _http_check(*changes: dict[str, Any], wait: int = 300, status: Any = 503, longest: Any = 1004.5) -> Any:
    """callers.check on an HTTP API stage whose access log shows one request answered ``status``, its
    route waiting ``wait`` ms, the function's longest run ``longest`` ms."""
    line = {"at": FAILED.isoformat(), "message": f'{{"status":"{status}"}}', "status": status}
    stage = {
        "api_id": HTTP_API,
        "api_name": "orders-http",
        "stage": "prod",
        "protocol": "HTTP",
        "routes": [
            {"route": "GET /orders/{id}", "timeout_ms": 30_000},
            {"route": "POST /orders", "timeout_ms": wait},
        ],
        "server_errors": 2,
        "execution_errors": [line],
    }
    answers: dict[str, dict[str, Any]] = {
        "get_lambda_config": {"FunctionName": "orders-api", "FunctionArn": FUNCTION_ARN},
        "get_function_metrics": {"max_duration_ms": longest},
        "get_event_sources": {"function_arn": FUNCTION_ARN, "apis": [stage]},
        "get_recent_changes": {"events": sorted(changes, key=lambda e: e["time"], reverse=True)},
    }
    return callers.check(Conversation(function_name="orders-api", alarm={}, results=answers))


def test_an_http_api_s_503_beside_a_route_shorter_than_the_run_gets_its_earlier_timeout_back() -> None:
    finding = _http_check(_v2(60, 10_000), _v2(30, 5_000, integration="other"), _v2(5, 300))
    assert isinstance(finding, Finding)
    assert finding.fault == "invocation_contract"
    assert finding.remedy.command is not None
    command = parse_command(finding.remedy.command, {"apigatewayv2 update-integration"})
    assert command.params == {"ApiId": HTTP_API, "IntegrationId": INTEGRATION, "TimeoutInMillis": 10_000}
    cited = {(p.tool, p.field): p.value for p in finding.pointers}
    assert cited[("get_event_sources", "apis.0.execution_errors.0.status")] == 503
    assert cited[("get_event_sources", "apis.0.routes.1.timeout_ms")] == 300  # the short route, not the other
    assert cited[("get_function_metrics", "max_duration_ms")] == 1004.5
    assert finding.resources == (f"arn:aws:apigateway:{REGION}::/apis/{HTTP_API}",)


@pytest.mark.parametrize(
    ("wait", "status", "longest"),
    [
        (1200, 503, 1004.5),  # every route waits longer than the function ran
        (300, 500, 1004.5),  # a 500: the function's own failure, or a refused invocation
        (300, 503, None),  # how long the function ran is unknown
    ],
)
def test_an_http_api_s_5xx_is_not_a_timeout_without_a_route_shorter_than_the_run(
    wait: int, status: int, longest: float | None
) -> None:
    assert _http_check(_v2(5, 300), wait=wait, status=status, longest=longest) is None


def test_an_http_api_timeout_whose_earlier_value_is_not_in_the_history_keeps_its_gap() -> None:
    finding = _http_check(_v2(30, 10_000, integration="other"), _v2(5, 300))
    assert isinstance(finding, Finding)
    assert finding.remedy.command is None
    (gap,) = finding.gaps
    assert gap.reason.startswith(
        "Raise the integration timeout of stage prod of HTTP API orders-http (up to 30,000 ms)"
    )
