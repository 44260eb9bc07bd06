"""``get_event_sources``: how the function is invoked besides direct calls, and what is waiting or lost on
each path. The function's configuration first; then, concurrently, its event source mappings, asynchronous
invocation settings, resource policy and SNS subscriptions; then, concurrently, every SQS queue they name
(source queues, destinations, the dead-letter queue) and one GetMetricData request for all their metrics.
Every read that fails is a gap; the rest is answered."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import partial
from typing import Any

from mcp_server.contract.event_sources import (
    AsyncConfig,
    AsyncMetrics,
    Destination,
    EventSourceMapping,
    EventSourcesResponse,
    FunctionUrl,
    GetEventSourcesArgs,
    PolicyStatement,
    QueueState,
    Subscription,
)
from mcp_server.reads import Read
from mcp_server.tools import api_callers, http_api_callers
from mcp_server.tools import event_source_metrics as metrics
from mcp_server.tools.context import ToolContext
from mcp_server.tools.iam import listed
from mcp_server.tools.lambda_config import event_invoke_config, function_configuration
from mcp_server.tools.metrics import metric_window
from mcp_server.tools.policy_statements import arn_like, statements

# Lambda's defaults without an event invoke config:
# https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_EVENT_AGE_SECONDS = 21600
SQS_ARN = re.compile(r"arn:[\w-]+:sqs:(?P<region>[\w-]+):(?P<account>\d{12}):(?P<name>[\w.-]+)")
QUEUE_ATTRIBUTES = (
    "QueueArn",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "RedrivePolicy",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
)
SNS_PRINCIPALS = frozenset({"sns.amazonaws.com", "*"})
INVOKE_ACTIONS = frozenset({"lambda:invokefunction", "lambda:*", "*"})
_ABSENT = object()  # no event invoke config, unlike a read that failed (None)


def unqualified(function_arn: str) -> str:
    """arn:aws:lambda:<region>:<account>:function:<name>, without a version or alias."""
    return ":".join(function_arn.split(":")[:7])


def _invoke_config(ctx: ToolContext) -> Any:
    found = event_invoke_config(ctx)
    return _ABSENT if found is None else found


def _qualified(ctx: ToolContext) -> dict[str, str]:
    target = ctx.target
    return {"FunctionName": target.function_name} | (
        {"Qualifier": target.qualifier} if target.qualifier else {}
    )


def resource_policy(ctx: ToolContext) -> list[PolicyStatement]:
    """The statements of the target's resource policy; none when it has no policy."""
    lambda_client = ctx.clients.lambda_
    try:
        return statements(lambda_client.get_policy(**_qualified(ctx))["Policy"])
    except lambda_client.exceptions.ResourceNotFoundException:
        return []


def function_url(ctx: ToolContext) -> Any:
    """The target's URL configuration, or _ABSENT when it has none."""
    lambda_client = ctx.clients.lambda_
    try:
        return lambda_client.get_function_url_config(**_qualified(ctx))
    except lambda_client.exceptions.ResourceNotFoundException:
        return _ABSENT


def subscriptions_to(sns: Any, function_arn: str) -> list[dict[str, Any]]:
    """Every subscription whose endpoint is the function, qualified or not."""
    base = unqualified(function_arn)
    return [
        s
        for s in listed(sns, "list_subscriptions", "Subscriptions")
        if s.get("Endpoint") == base or str(s.get("Endpoint", "")).startswith(base + ":")
    ]


def _queue(sqs: Any, arn: str) -> dict[str, Any]:
    """GetQueueUrl then GetQueueAttributes of the queue ``arn`` names."""
    parts = SQS_ARN.fullmatch(arn)
    assert parts is not None  # only SQS ARNs are read
    url = sqs.get_queue_url(QueueName=parts["name"], QueueOwnerAWSAccountId=parts["account"])["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(QUEUE_ATTRIBUTES))
    return {"QueueUrl": url, **attributes.get("Attributes", {})}


def _first_reads(ctx: ToolContext, function_arn: str) -> list[Read]:
    name, where = ctx.target.function_name, f"function {ctx.target.function} ({ctx.target.account})"
    return [
        Read(
            "lambda:ListEventSourceMappings",
            where,
            lambda: listed(
                ctx.clients.lambda_, "list_event_source_mappings", "EventSourceMappings", FunctionName=name
            ),
            "the function's event source mappings, their state and their source queues are unknown",
        ),
        Read(
            "lambda:GetFunctionEventInvokeConfig",
            where,
            lambda: _invoke_config(ctx),
            "the asynchronous retries, maximum event age and destinations are unknown",
        ),
        Read(
            "lambda:GetPolicy",
            where,
            lambda: resource_policy(ctx),
            "who may invoke the function (its resource policy) is unknown, and so is whether its SNS "
            "subscriptions may",
        ),
        Read(
            "lambda:GetFunctionUrlConfig",
            where,
            lambda: function_url(ctx),
            "whether the function has a URL, and how its callers fared, is unknown",
        ),
        Read(
            "sns:ListSubscriptions",
            f"subscriptions with endpoint {unqualified(function_arn)} ({ctx.target.account})",
            lambda: subscriptions_to(ctx.clients.sns, function_arn),
            "the SNS subscriptions that deliver to the function are unknown",
        ),
    ]


def _queue_arns(mappings: list[dict[str, Any]], destinations: list[Destination]) -> list[str]:
    arns = [m.get("EventSourceArn", "") for m in mappings] + [d.Destination for d in destinations]
    return list(dict.fromkeys(arn for arn in arns if SQS_ARN.fullmatch(arn)))


def destinations(config: dict[str, Any], invoke: Any) -> list[Destination]:
    """The event invoke config's destinations and the function's dead-letter queue (without their queues)."""
    found = {} if invoke is None or invoke is _ABSENT else invoke.get("DestinationConfig") or {}
    listed = [
        ("on_failure", (found.get("OnFailure") or {}).get("Destination")),
        ("on_success", (found.get("OnSuccess") or {}).get("Destination")),
        ("dead_letter_queue", (config.get("DeadLetterConfig") or {}).get("TargetArn")),
    ]
    return [Destination(kind=kind, Destination=arn) for kind, arn in listed if arn]


def _lets_topic_invoke(found: PolicyStatement, topic_arn: str) -> bool:
    actions = {action.strip().lower() for action in found.Action.split(",")}
    account = topic_arn.split(":")[4] if topic_arn.count(":") >= 5 else ""
    return (
        found.Principal in SNS_PRINCIPALS
        and bool(actions & INVOKE_ACTIONS)
        and (
            found.SourceArn is None or any(arn_like(topic_arn, p.strip()) for p in found.SourceArn.split(","))
        )
        and found.SourceAccount in (None, account)
    )


def invoke_allowed(statements: list[PolicyStatement], topic_arn: str) -> bool:
    """Whether the policy lets the topic invoke the function: an Allow that matches and no Deny that does."""
    matching = [s.Effect for s in statements if _lets_topic_invoke(s, topic_arn)]
    return "Allow" in matching and "Deny" not in matching


_URL_ACTIONS = ("lambda:invokefunctionurl", "lambda:invokefunction")  # URLs made since October 2025 need both


def _applies_to_the_url(found: PolicyStatement, action: str, auth_type: str) -> bool:
    """A statement of ``action`` whose URL condition, if any, is the one a URL of ``auth_type`` needs; a
    statement with any other condition does not apply to its callers."""
    actions = {a.strip().lower() for a in found.Action.split(",")}
    url = action == "lambda:invokefunctionurl"
    condition = (found.FunctionUrlAuthType or auth_type) if url else (found.InvokedViaFunctionUrl or "true")
    return (
        bool(actions & {action, "lambda:*", "*"})
        and found.SourceArn is None
        and found.SourceAccount is None
        and condition.lower() == (auth_type.lower() if url else "true")
    )


def _principals(found: PolicyStatement) -> set[str]:
    return {p.strip() for p in found.Principal.split(",")}


def _granted(statements: list[PolicyStatement], principal: str, auth_type: str) -> bool:
    """An Allow of both actions naming ``principal`` (or everyone), and no Deny of either that does."""
    for action in _URL_ACTIONS:
        matching = [
            s.Effect
            for s in statements
            if _principals(s) & {principal, "*"} and _applies_to_the_url(s, action, auth_type)
        ]
        if "Allow" not in matching or "Deny" in matching:
            return False
    return True


def url_allowed(statements: list[PolicyStatement]) -> bool:
    """Whether an anonymous caller may use a NONE-auth URL: an Allow of both actions for everyone (URLs made
    since October 2025 need both), and no Deny of either."""
    return _granted(statements, "*", "NONE")


def url_grantees(statements: list[PolicyStatement]) -> list[str]:
    """The principals the policy lets call an AWS_IAM URL: each one some statement names, granted both
    actions and denied neither."""
    named = {p for s in statements for p in _principals(s) if ":" in p or p == "*" or p.isdigit()}
    return sorted(p for p in named if _granted(statements, p, "AWS_IAM"))


def _function_url(
    raw: Any, statements: list[PolicyStatement] | None, figures: dict[Any, Any]
) -> FunctionUrl | None:
    if raw is None or raw is _ABSENT:
        return None
    auth = str(raw.get("AuthType", ""))
    readable = statements is not None
    return FunctionUrl(
        FunctionUrl=str(raw.get("FunctionUrl", "")),
        AuthType=auth,
        invoke_allowed=url_allowed(statements or []) if auth == "NONE" and readable else None,
        granted_callers=url_grantees(statements or []) if auth == "AWS_IAM" and readable else None,
        **{field: figures.get((metrics.FUNCTION, field)) for field, *_ in metrics.URL_METRICS},
    )


def _json_object(text: Any) -> dict[str, Any]:
    """A JSON object attribute (SQS's RedrivePolicy); empty when absent or not an object."""
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _queue_state(arn: str, attributes: dict[str, Any] | None, figures: dict[Any, float | None]) -> QueueState:
    found = attributes or {}
    redrive = _json_object(found.get("RedrivePolicy"))
    numbers = {
        key: int(found[key])
        for key in (
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
        )
        if found.get(key) is not None
    }
    return QueueState(
        QueueArn=arn,
        QueueUrl=found.get("QueueUrl"),
        DeadLetterTargetArn=redrive.get("deadLetterTargetArn"),
        MaxReceiveCount=int(redrive["maxReceiveCount"]) if "maxReceiveCount" in redrive else None,
        **numbers,
        **{field: figures.get((arn, field)) for field, *_ in metrics.QUEUE_METRICS},
    )


def _redrive_arns(mappings: list[dict[str, Any]], read: dict[str, dict[str, Any] | None]) -> list[str]:
    """The dead-letter queues the mappings' source queues redrive to, not read yet."""
    sources = [read.get(m.get("EventSourceArn", "")) or {} for m in mappings]
    found = [str(_json_object(q.get("RedrivePolicy")).get("deadLetterTargetArn") or "") for q in sources]
    return list(dict.fromkeys(a for a in found if SQS_ARN.fullmatch(a) and a not in read))


def is_stream(arn: str) -> bool:
    """A Kinesis stream's or a DynamoDB table stream's ARN."""
    return arn.split(":")[2:3] in (["kinesis"], ["dynamodb"])


def _stream_fields(raw: dict[str, Any], figures: dict[Any, float | None]) -> dict[str, Any]:
    """What a stream mapping shows beside the common fields: how it gives up on records, and its lag."""
    if not is_stream(str(raw.get("EventSourceArn", ""))):
        return {}
    failure = ((raw.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    settings = ("StartingPosition", "MaximumRetryAttempts", "MaximumRecordAgeInSeconds")
    return {key: raw.get(key) for key in settings} | {
        "BisectBatchOnFunctionError": raw.get("BisectBatchOnFunctionError"),
        "on_failure_destination": failure,
        **{field: figures.get((metrics.FUNCTION, field)) for field, *_ in metrics.STREAM_METRICS},
    }


def _mapping(
    raw: dict[str, Any], queues: dict[str, QueueState], timeout: int, figures: dict[Any, float | None]
) -> EventSourceMapping:
    queue = queues.get(raw.get("EventSourceArn", ""))
    modified = raw.get("LastModified")
    visibility = queue.VisibilityTimeout if queue else None
    return EventSourceMapping(
        UUID=raw["UUID"],
        EventSourceArn=raw.get("EventSourceArn", ""),
        FunctionArn=raw.get("FunctionArn", ""),
        State=raw.get("State", ""),
        StateTransitionReason=raw.get("StateTransitionReason"),
        LastProcessingResult=raw.get("LastProcessingResult"),
        LastModified=modified.astimezone(UTC).isoformat() if isinstance(modified, datetime) else modified,
        BatchSize=raw.get("BatchSize"),
        MaximumBatchingWindowInSeconds=raw.get("MaximumBatchingWindowInSeconds"),
        FunctionResponseTypes=raw.get("FunctionResponseTypes") or [],
        queue=queue,
        dead_letter_queue=queues.get(queue.DeadLetterTargetArn or "") if queue else None,
        visibility_timeout_below_function_timeout=None if visibility is None else visibility < timeout,
        **_stream_fields(raw, figures),
    )


def _async_config(
    invoke: Any, destinations: list[Destination], figures: dict[Any, float | None]
) -> AsyncConfig:
    async_metrics = AsyncMetrics(
        **{field: figures.get((metrics.FUNCTION, field)) for field, *_ in metrics.ASYNC_METRICS}
    )
    if invoke is None:  # unreadable: a gap says so
        return AsyncConfig(
            configured=None,
            MaximumRetryAttempts=None,
            MaximumEventAgeInSeconds=None,
            destinations=destinations,
            metrics=async_metrics,
        )
    found = {} if invoke is _ABSENT else invoke
    return AsyncConfig(
        configured=invoke is not _ABSENT,
        MaximumRetryAttempts=found.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS),
        MaximumEventAgeInSeconds=found.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_SECONDS),
        destinations=destinations,
        metrics=async_metrics,
    )


def _queue_reads(ctx: ToolContext, arns: list[str]) -> list[Read]:
    return [
        Read(
            "sqs:GetQueueUrl/GetQueueAttributes",
            f"queue {arn}",
            partial(_queue, ctx.clients.sqs, arn),
            f"queue {arn}'s visibility timeout, redrive policy and depth are unknown",
        )
        for arn in arns
    ]


def _subscription(
    raw: dict[str, Any], statements: list[PolicyStatement] | None, figures: dict[Any, Any]
) -> Subscription:
    topic = raw.get("TopicArn", "")
    return Subscription(
        SubscriptionArn=raw.get("SubscriptionArn", ""),
        TopicArn=topic,
        invoke_allowed=None if statements is None else invoke_allowed(statements, topic),
        notifications_failed=figures.get((topic, "notifications_failed")),
        notifications_delivered=figures.get((topic, "notifications_delivered")),
    )


def _last_reads(
    ctx: ToolContext,
    redrive_arns: list[str],
    wanted: list[metrics.Query],
    found: api_callers.Callers,
    start: datetime,
    end: datetime,
) -> list[Any]:
    """Concurrently: the dead-letter queues' attributes, then the one metrics read, then the API stages'
    logged failures (by stage)."""
    stages, failure_reads = found.failure_reads(ctx, start, end)
    *read, figures = ctx.reads.many(
        [
            *_queue_reads(ctx, redrive_arns),
            *failure_reads,
            Read(
                "cloudwatch:GetMetricData",
                f"the event paths' and APIs' metrics ({ctx.target.account})",
                lambda: metrics.read(ctx.clients.cloudwatch, wanted, start, end),
                "the queues' age of oldest message and message counts, the asynchronous event counts, the "
                "topics' deliveries and the APIs' request and error counts are unknown",
            ),
        ]
    )
    split = len(redrive_arns)
    return [*read[:split], figures or {}, dict(zip(stages, read[split:], strict=True))]


def event_sources(
    ctx: ToolContext, args: GetEventSourcesArgs, *, now: datetime | None = None
) -> EventSourcesResponse:
    """Every path that invokes the function, over the last ``args.minutes`` minutes up to ``now``."""
    config = function_configuration(ctx)
    start, end = metric_window(now or datetime.now(UTC), args.minutes)
    mappings, invoke, statements, url, subscribed, apis, http_apis = ctx.reads.many(
        [
            *_first_reads(ctx, config["FunctionArn"]),
            api_callers.apis_read(ctx),
            http_api_callers.apis_read(ctx),
        ]
    )
    found = api_callers.callers(ctx, apis, http_apis, config["FunctionArn"])
    targets = destinations(config, invoke)
    queue_arns = _queue_arns(mappings or [], targets)
    attributes = ctx.reads.many(_queue_reads(ctx, queue_arns))
    redrive_arns = _redrive_arns(mappings or [], dict(zip(queue_arns, attributes, strict=True)))
    queue_arns += redrive_arns
    topics = list(dict.fromkeys(s.get("TopicArn", "") for s in subscribed or []))
    wanted = metrics.queries(
        ctx.target,
        queue_arns,
        topics,
        url=url not in (None, _ABSENT),
        api_stages=found.metric_stages(),
        stream=any(is_stream(str(m.get("EventSourceArn", ""))) for m in mappings or []),
    )
    *redrive_attributes, figures, errors = _last_reads(ctx, redrive_arns, wanted, found, start, end)
    figures = figures or {}
    read = [*attributes, *redrive_attributes]
    queues = {arn: _queue_state(arn, got, figures) for arn, got in zip(queue_arns, read, strict=True)}
    targets = [d.model_copy(update={"queue": queues.get(d.Destination)}) for d in targets]
    return EventSourcesResponse(
        function_name=ctx.target.function,
        function_arn=config["FunctionArn"],
        timeout_seconds=config["Timeout"],
        window_start=start.isoformat(),
        window_end=end.isoformat(),
        mappings=[_mapping(m, queues, config["Timeout"], figures) for m in mappings or []],
        async_config=_async_config(invoke, targets, figures),
        policy_statements=statements or [],
        subscriptions=[_subscription(s, statements, figures) for s in subscribed or []],
        function_url=_function_url(url, statements, figures),
        apis=api_callers.api_stages(ctx, config["FunctionArn"], found, figures, errors),
        gaps=ctx.reads.gaps,
    )
