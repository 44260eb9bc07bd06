"""Tool answers for an event-driven function, for the rules brain's tests: ``tests.runtime_worlds`` answers
(logs, metrics, configuration, IAM, changes) plus a ``get_event_sources`` answer validated by its contract
model. ``orders-queue`` feeds the function through one SQS mapping, with ``orders-dlq`` as its redrive
dead-letter queue; ``order-events`` is an SNS topic that may deliver to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_server.contract.event_sources import EventSourcesResponse
from mcp_server.contract.logs import LogsResponse
from tests.agent_support import FUNCTION
from tests.runtime_worlds import ACCOUNT, REGION, Change, Run, at, world

FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION}"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-queue"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders-queue"
DLQ = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq"
ASYNC_DLQ = f"arn:aws:sqs:{REGION}:{ACCOUNT}:order-events-dlq"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:order-events"
SUBSCRIPTION = f"{TOPIC}:5f0c3e7a-8d1b-4c2e-9a6f-0b1c2d3e4f50"
UUID = "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
TIMEOUT = 3  # the function's Timeout in tests.runtime_worlds

# What a changed mapping or caller looks like in get_recent_changes: CloudTrail's event names for Lambda carry
# the API version (https://docs.aws.amazon.com/lambda/latest/dg/logging-using-cloudtrail.html), and the
# sandbox writes request members lower-camel-cased as CloudTrail does ('uUID').
DISABLED: Change = (
    "UpdateEventSourceMapping20150331",
    "lambda.amazonaws.com",
    {"uUID": UUID, "enabled": False},
)
DELETED: Change = (
    "DeleteEventSourceMapping20150331",
    "lambda.amazonaws.com",
    {"eventSourceArn": QUEUE, "functionArn": FUNCTION_ARN, "uUID": UUID},
)
UNSUBSCRIBED: Change = ("Unsubscribe", "sns.amazonaws.com", {"subscriptionArn": SUBSCRIPTION})
PERMISSION_REMOVED: Change = (
    "RemovePermission20150331v2",
    "lambda.amazonaws.com",
    {"functionName": FUNCTION, "statementId": "order-events-invoke"},
)
VISIBILITY_SET: Change = (
    "SetQueueAttributes",
    "sqs.amazonaws.com",
    {"queueUrl": QUEUE_URL, "attributes": {"VisibilityTimeout": "2"}},
)


def queue(
    arn: str = QUEUE,
    *,
    depth: int = 0,
    age: float | None = None,
    visibility: int = 18,
    counts: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    """A queue as get_event_sources shows it (orders-queue redrives to orders-dlq after 2 receives);
    ``counts``: the messages sent, received and deleted in the window."""
    name = arn.rsplit(":", 1)[1]
    redrive = {"DeadLetterTargetArn": DLQ, "MaxReceiveCount": 2} if arn == QUEUE else {}
    sent, received, deleted = counts or (None, None, None)
    return {
        "QueueArn": arn,
        "QueueUrl": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}",
        "VisibilityTimeout": visibility,
        "ApproximateNumberOfMessages": depth,
        "ApproximateNumberOfMessagesNotVisible": 0,
        "oldest_message_age_seconds": age,
        "messages_sent": sent,
        "messages_received": received,
        "messages_deleted": deleted,
        **redrive,
    }


def mapping(
    state: str = "Enabled",
    *,
    depth: int = 0,
    age: float | None = None,
    visibility: int = 18,
    last: str = "OK",
    dlq_depth: int = 0,
    counts: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    return {
        "UUID": UUID,
        "EventSourceArn": QUEUE,
        "FunctionArn": FUNCTION_ARN,
        "State": state,
        "StateTransitionReason": "USER_INITIATED",
        "LastProcessingResult": last,
        "LastModified": at(20),
        "BatchSize": 10,
        "MaximumBatchingWindowInSeconds": 0,
        "queue": queue(depth=depth, age=age, visibility=visibility, counts=counts),
        "dead_letter_queue": queue(DLQ, depth=dlq_depth),
        "visibility_timeout_below_function_timeout": visibility < TIMEOUT,
    }


def subscription(*, allowed: bool = True, failed: float = 0, delivered: float = 0) -> dict[str, Any]:
    return {
        "SubscriptionArn": SUBSCRIPTION,
        "TopicArn": TOPIC,
        "invoke_allowed": allowed,
        "notifications_failed": failed,
        "notifications_delivered": delivered,
    }


def event_sources(
    mappings: Sequence[dict[str, Any]] = (),
    *,
    subscriptions: Sequence[dict[str, Any]] = (),
    statements: Sequence[dict[str, Any]] = (),
    async_config: dict[str, Any] | None = None,
    apis: Sequence[dict[str, Any]] = (),
    function_url: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A get_event_sources answer, validated by its contract model, as JSON-ready data."""
    raw = {
        "function_name": FUNCTION,
        "function_arn": FUNCTION_ARN,
        "timeout_seconds": TIMEOUT,
        "window_start": at(-3540),
        "window_end": at(60),
        "mappings": list(mappings),
        "async_config": async_config
        or {"configured": False, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 21600},
        "policy_statements": list(statements),
        "subscriptions": list(subscriptions),
        **({"apis": list(apis)} if apis else {}),
        **({"function_url": function_url} if function_url else {}),
    }
    return EventSourcesResponse.model_validate(raw).model_dump(mode="json")


def event_world(
    sources: dict[str, Any],
    changes: Sequence[tuple[int, Change]] = (),
    *,
    runs: Sequence[Run] = (Run(5), Run(10)),
    iam: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every tool's answer: the function succeeded when invoked, ``changes`` were made, and
    ``sources`` is what get_event_sources shows."""
    answers = world(list(runs), list(changes), iam=iam)
    answers["get_event_sources"] = sources
    return answers


def with_lines(answers: dict[str, Any], lines: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """``answers`` with lines the function wrote: (the index of the invocation in the logs, the text), each
    after that invocation's START, validated by the logs tool's contract."""
    logs = dict(answers["get_recent_logs"])
    events = list(logs["events"])
    for index, text in lines:
        invocation = logs["invocations"][index]
        start = next(n for n, e in enumerate(events) if e["request_id"] == invocation["request_id"])
        line = {
            "timestamp": invocation["started"],
            "message": text,
            "log_stream": invocation["log_stream"],
            "request_id": invocation["request_id"],
            "kind": "function",
        }
        events.insert(start + 1, line)
    logs |= {"events": events, "matched_events": len(events), "returned_events": len(events)}
    return answers | {"get_recent_logs": LogsResponse.model_validate(logs).model_dump(mode="json")}
