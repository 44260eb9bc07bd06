"""Tool answers around the runtimes' error records of tests/events/runtime_error_records.json, each built with
the contract's own models (``LogsResponse(...)`` for the logs, every other answer validated by its tool's
response model), for the rules brain's tests: a function whose invocations succeed and then fail with one
record, the changes made in between, and the metrics that count them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp_server.contract.logs import ErrorDetail, InvocationReport, LogEvent, LogsResponse
from mcp_server.contract.registry import TOOLS
from supervisor.diagnosis.rules.conversation import Conversation
from tests.agent_support import FUNCTION

RECORDS: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "events" / "runtime_error_records.json").read_text(encoding="utf-8")
)["records"]
ACCOUNT = "123456789012"
REGION = "ca-central-1"
ROLE = f"{FUNCTION}-role"
LOG_GROUP = f"/aws/lambda/{FUNCTION}"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders"
OPERATOR = f"arn:aws:iam::{ACCOUNT}:user/operator"
STREAM = "2026/11/25/[$LATEST]0a1b2c3d4e5f60718293a4b5c6d7e8f9"
T0 = datetime(2026, 11, 25, 14, 0, tzinfo=UTC)


def at(second: float) -> str:
    return (T0 + timedelta(seconds=second)).isoformat()


@dataclass(frozen=True)
class Run:
    """One invocation: when it started, and the record it failed with (None: it succeeded)."""

    second: int
    record: str | None = None
    attached: bool = True  # an init record carries the invocation's request id (else it has none)
    outcome: str | None = None  # default: the record's kind, or no_error_seen
    error_type: str | None = None  # the error type the invocation's report states


def _request(n: int, run: Run) -> str:
    if run.record is not None and RECORDS[run.record]["request_id"] and n == 0:
        return str(RECORDS[run.record]["request_id"])  # the first failure keeps the record's own id
    return f"00000000-0000-4000-8000-{n:012d}"


def logs(runs: list[Run]) -> LogsResponse:
    """START and the record of each run, the init record (when it has no request id) before its START, and
    the invocation summaries."""
    events: list[LogEvent] = []
    invocations: list[InvocationReport] = []
    failed = 0
    for n, run in enumerate(runs):
        record = RECORDS[run.record] if run.record is not None else None
        request = _request(failed if record is not None else n + 100, run)
        failed += record is not None
        event = None
        if record is not None:
            detached = record["kind"] == "init_error" and not run.attached
            event = LogEvent(
                timestamp=at(run.second),
                message=record["message"],
                log_stream=STREAM,
                request_id=None if detached else request,
                kind=record["kind"],
                error=ErrorDetail(**record["error"]),
            )
            if detached:
                events.append(event)
                event = None
        start = f"START RequestId: {request} Version: $LATEST"
        events.append(
            LogEvent(
                timestamp=at(run.second), message=start, log_stream=STREAM, request_id=request, kind="start"
            )
        )
        if event is not None:
            events.append(event)
        outcome = run.outcome or (record["kind"] if record is not None else "no_error_seen")
        invocations.append(
            InvocationReport(
                request_id=request,
                log_stream=STREAM,
                started=at(run.second),
                duration_ms=120.0,
                memory_size_mb=128,
                max_memory_used_mb=70,
                outcome=outcome,
                status="success" if outcome == "no_error_seen" else "error",
                error_type=run.error_type,
            )
        )
    runtime = next((RECORDS[r.record]["runtime"] for r in runs if r.record), None)
    log_format = next((RECORDS[r.record]["log_format"] for r in runs if r.record), None)
    return LogsResponse(
        log_group=LOG_GROUP,
        runtime=runtime,
        log_format=log_format,
        events=events,
        invocations=invocations,
        matched_events=len(events),
        returned_events=len(events),
    )


def change(
    second: int, event_name: str, service: str = "lambda.amazonaws.com", **summary: Any
) -> dict[str, Any]:
    return {
        "event_id": f"e-{event_name}-{second}",
        "time": at(second),
        "event_name": event_name,
        "service": service,
        "identity_arn": OPERATOR,
        "summary": summary,
    }


Change = tuple[str, str, dict[str, Any]]  # event name, service, summary
ENVIRONMENT_CHANGE: Change = (
    "UpdateFunctionConfiguration20150331v2",
    "lambda.amazonaws.com",
    {"changed_fields": ["environment"]},
)
DEPLOYMENT: Change = ("UpdateFunctionCode20150331v2", "lambda.amazonaws.com", {})
HANDLER_CHANGE: Change = (
    "UpdateFunctionConfiguration20150331v2",
    "lambda.amazonaws.com",
    {"changed_fields": ["handler"]},
)


def _role() -> dict[str, Any]:
    group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{LOG_GROUP}"
    return {
        "role_name": ROLE,
        "inline_policies": {
            "orders-access": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": TABLE},
                    {
                        "Effect": "Allow",
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                        "Resource": [f"{group}:*", f"{group}:log-stream:*"],
                    },
                ],
            }
        },
        "attached_policies": [],
    }


def world(
    runs: list[Run],
    changes: Sequence[tuple[int, Change]] = (),
    *,
    variables: list[str] | None = None,
    handler: str = "index.handler",
    iam: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every tool's answer, validated by its contract model, as JSON-ready data."""
    failures = sum(run.record is not None or run.outcome not in (None, "no_error_seen") for run in runs)
    minute = T0.isoformat()
    raw: dict[str, Any] = {
        "get_iam_state": iam if iam is not None else _role(),
        "get_lambda_config": {
            "FunctionName": FUNCTION,
            "FunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION}",
            "Runtime": logs(runs).runtime or "python3.11",
            "Role": f"arn:aws:iam::{ACCOUNT}:role/{ROLE}",
            "Handler": handler,
            "MemorySize": 128,
            "Timeout": 3,
            "State": "Active",
            "CodeSha256": "c2hhMjU2LW9mLXRoZS1jb2Rl",
            "EnvironmentVariableNames": ["ORDERS_TOPIC"] if variables is None else variables,
            "Versions": [{"Version": "$LATEST"}],
        },
        "get_network_state": {"function_name": FUNCTION, "in_vpc": False, "note": "not in a VPC"},
        "get_recent_changes": {
            "function_name": FUNCTION,
            "window_start": (T0 - timedelta(days=1)).isoformat(),
            "window_end": at(300),
            "searched": [f"function {FUNCTION}", f"role {ROLE}"],
            "matched_events": len(changes),
            "returned_events": len(changes),
            "events": [
                change(s, name, service, **summary) for s, (name, service, summary) in reversed(changes)
            ],
            "note": "CloudTrail delivers events minutes after the call: the newest changes may be missing.",
        },
        "get_function_metrics": {
            "function_name": FUNCTION,
            "window_start": (T0 - timedelta(minutes=59)).isoformat(),
            "window_end": (T0 + timedelta(minutes=1)).isoformat(),
            "minutes": [
                {"timestamp": minute, "invocations": len(runs), "errors": failures, "duration_max_ms": 120}
            ],
            "invocations": len(runs),
            "errors": failures,
            "throttles": 0,
            "error_rate": failures / len(runs),
            "first_error_minute": minute,
            "timeout_seconds": 3,
            "max_duration_ms": 120,
            "duration_to_timeout": 0.04,
            "memory_size_mb": 128,
            "peak_memory_used_mb": 70,
            "memory_to_size": 0.547,
            "log_group": LOG_GROUP,
            "report_lines": len(runs),
        },
    }
    answers = {
        name: TOOLS[name].response.model_validate(value).model_dump(mode="json")
        for name, value in raw.items()
    }
    answers["get_recent_logs"] = logs(runs).model_dump(mode="json")
    return answers


def responses(answers: dict[str, Any]) -> dict[str, str]:
    """The answers as the canned tool provider serves them."""
    return {name: json.dumps(answer) for name, answer in answers.items()}


def conversation(answers: dict[str, Any]) -> Conversation:
    """What the rules model reads, without the graph."""
    return Conversation(function_name=FUNCTION, alarm={}, results=dict(answers))
