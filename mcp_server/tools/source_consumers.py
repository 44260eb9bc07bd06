"""``get_source_consumers``: the Lambda functions an SQS queue or an SNS topic is tied to.

- A queue: the event source mappings that poll it (ListEventSourceMappings with its ARN), and those deleted
  in the last DELETED_MAPPING_HOURS (CloudTrail's DeleteEventSourceMapping events); the mappings of
  the queues whose redrive policy names it as their dead-letter queue (ListDeadLetterSourceQueues); the
  functions whose DeadLetterConfig or event invoke config destinations name it.
- A topic: its subscriptions with protocol ``lambda`` (ListSubscriptionsByTopic); the functions whose
  dead-letter queue or destinations name it.

Functions' own configurations are found by listing the account's functions (ListFunctions, each one's
ListFunctionEventInvokeConfigs): bounded by MAX_FUNCTIONS, and a gap says when the bound cut the list.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, Final

from mcp_server.contract.consumers import (
    DELETED_MAPPING_HOURS,
    GetSourceConsumersArgs,
    Relation,
    SourceConsumer,
    SourceConsumersResponse,
)
from mcp_server.lambda_names import function_name_of
from mcp_server.reads import Read
from mcp_server.source_names import SourceName, parse_source
from mcp_server.tools.context import ToolContext

MAX_FUNCTIONS: Final[int] = 200  # ListFunctions read at most; each costs one ListFunctionEventInvokeConfigs
MAX_SOURCE_QUEUES: Final[int] = 20  # queues whose dead-letter queue the source is, read at most
MAX_TRAIL_PAGES: Final[int] = 4  # LookupEvents pages of deleted mappings read at most (50 events each)
# Lambda names the event with its API version
# (https://docs.aws.amazon.com/lambda/latest/dg/logging-using-cloudtrail.html).
DELETE_MAPPING_EVENT: Final[str] = "DeleteEventSourceMapping20150331"
_DESTINATIONS: Final[dict[str, Relation]] = {
    "OnFailure": "on_failure_destination",
    "OnSuccess": "on_success_destination",
}


def source_consumers(ctx: ToolContext, args: GetSourceConsumersArgs) -> SourceConsumersResponse:
    source = parse_source(args.source)
    if source.kind == "sqs":
        url, arn = _queue(ctx, source)
        consumers = [
            *_mapped(ctx, arn, "event_source_mapping"),
            *_deleted_mappings(ctx, arn),
            *_redrive_sources(ctx, url),
        ]
    else:
        url, arn = None, args.source  # a topic is named by its ARN
        consumers = _subscribed(ctx, arn)
    configured, scanned = _configured(ctx, arn)
    return SourceConsumersResponse(
        source_type="sqs_queue" if source.kind == "sqs" else "sns_topic",
        source_arn=arn,
        queue_url=url,
        consumers=_unique(consumers + configured),
        functions_scanned=scanned,
        gaps=ctx.reads.gaps,
    )


def _queue(ctx: ToolContext, source: SourceName) -> tuple[str, str]:
    """The queue's URL and ARN; a queue that does not exist (or cannot be read) fails the tool."""
    sqs = ctx.clients.sqs
    owner = {"QueueOwnerAWSAccountId": source.account} if source.account else {}
    url: str = ctx.reads.required(
        Read(
            "sqs:GetQueueUrl",
            f"queue {source.name} ({ctx.target.account})",
            lambda: sqs.get_queue_url(QueueName=source.name, **owner)["QueueUrl"],
            "the queue is unknown",
        )
    )
    arn: str = ctx.reads.required(_queue_arn_read(sqs, url, "the queue's ARN is unknown"))
    return url, arn


def _queue_arn_read(sqs: Any, url: str, meaning: str) -> Read:
    def call() -> str:
        arn: str = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        return arn

    return Read("sqs:GetQueueAttributes", f"queue {url}", call, meaning)


def _invoke_configs_read(lambda_: Any, name: str) -> Read:
    pages = lambda_.get_paginator("list_function_event_invoke_configs")

    def call() -> list[dict[str, Any]]:
        return [c for page in pages.paginate(FunctionName=name) for c in page["FunctionEventInvokeConfigs"]]

    return Read(
        "lambda:ListFunctionEventInvokeConfigs",
        f"function {name}",
        call,
        "whether this function's asynchronous destinations name the source is unknown",
    )


def _mapping_read(ctx: ToolContext, queue_arn: str) -> Read:
    pages = ctx.clients.lambda_.get_paginator("list_event_source_mappings")
    return Read(
        "lambda:ListEventSourceMappings",
        f"mappings of {queue_arn}",
        lambda: [m for page in pages.paginate(EventSourceArn=queue_arn) for m in page["EventSourceMappings"]],
        "functions polling this queue may be missing",
    )


def _as_consumers(
    mappings: list[dict[str, Any]] | None, relation: Relation, via: str | None
) -> list[SourceConsumer]:
    return [
        SourceConsumer(
            function_name=function_name_of(m["FunctionArn"]),
            function_arn=m["FunctionArn"],
            relation=relation,
            via=via or m["UUID"],
            state=m.get("State"),
        )
        for m in mappings or []
    ]


def _mapped(ctx: ToolContext, queue_arn: str, relation: Relation) -> list[SourceConsumer]:
    return _as_consumers(ctx.reads.one(_mapping_read(ctx, queue_arn)), relation, None)


def _redrive_sources(ctx: ToolContext, url: str) -> list[SourceConsumer]:
    """The mappings of every queue whose dead-letter queue this is (up to MAX_SOURCE_QUEUES of them)."""
    sqs = ctx.clients.sqs
    pages = sqs.get_paginator("list_dead_letter_source_queues")
    listed = ctx.reads.one(
        Read(
            "sqs:ListDeadLetterSourceQueues",
            f"queue {url}",
            lambda: list(
                islice(
                    (u for p in pages.paginate(QueueUrl=url) for u in p.get("queueUrls", [])),
                    MAX_SOURCE_QUEUES + 1,
                )
            ),
            "functions whose source queue moves failed messages here may be missing",
        )
    )
    if not listed:
        return []
    if len(listed) > MAX_SOURCE_QUEUES:
        ctx.reads.gap(
            f"sqs:ListDeadLetterSourceQueues of queue {url}",
            f"more than {MAX_SOURCE_QUEUES} queues use it as their dead-letter queue: only the first "
            f"{MAX_SOURCE_QUEUES} were followed to their functions",
        )
    meaning = "the functions polling this redrive source queue are unknown"
    arns = ctx.reads.many([_queue_arn_read(sqs, source, meaning) for source in listed[:MAX_SOURCE_QUEUES]])
    found = [arn for arn in arns if isinstance(arn, str)]
    mappings = ctx.reads.many([_mapping_read(ctx, arn) for arn in found])
    return [
        consumer
        for arn, listed_mappings in zip(found, mappings, strict=True)
        for consumer in _as_consumers(listed_mappings, "redrive_dead_letter_queue", arn)
    ]


def _subscribed(ctx: ToolContext, topic_arn: str) -> list[SourceConsumer]:
    """The topic's lambda subscriptions; a topic that does not exist fails the tool."""
    pages = ctx.clients.sns.get_paginator("list_subscriptions_by_topic")
    subscriptions: list[dict[str, Any]] = ctx.reads.required(
        Read(
            "sns:ListSubscriptionsByTopic",
            f"topic {topic_arn}",
            lambda: [s for page in pages.paginate(TopicArn=topic_arn) for s in page.get("Subscriptions", [])],
            "the functions the topic invokes are unknown",
        )
    )
    return [
        SourceConsumer(
            function_name=function_name_of(s["Endpoint"]),
            function_arn=s["Endpoint"],
            relation="subscription",
            via=s["SubscriptionArn"],
        )
        for s in subscriptions
        if s.get("Protocol") == "lambda" and _is_function_arn(s.get("Endpoint"))
    ]


def _is_function_arn(value: object) -> bool:
    if not isinstance(value, str) or not value.startswith("arn:"):
        return False
    try:
        function_name_of(value)
    except ValueError:
        return False
    return True


def _configured(ctx: ToolContext, target_arn: str) -> tuple[list[SourceConsumer], int]:
    """Functions whose dead-letter queue or asynchronous destinations are ``target_arn``, and how many
    functions were compared."""
    functions = _functions(ctx)
    found = [
        SourceConsumer(
            function_name=f["FunctionName"],
            function_arn=f["FunctionArn"],
            relation="dead_letter_config",
            via=f["FunctionArn"],
        )
        for f in functions
        if (f.get("DeadLetterConfig") or {}).get("TargetArn") == target_arn
    ]
    lambda_ = ctx.clients.lambda_
    configs = ctx.reads.many([_invoke_configs_read(lambda_, f["FunctionName"]) for f in functions])
    for function, listed in zip(functions, configs, strict=True):
        for config in listed or []:
            destinations = config.get("DestinationConfig") or {}
            for key, relation in _DESTINATIONS.items():
                if (destinations.get(key) or {}).get("Destination") == target_arn:
                    arn = config.get("FunctionArn") or function["FunctionArn"]
                    found.append(
                        SourceConsumer(
                            function_name=function["FunctionName"],
                            function_arn=arn,
                            relation=relation,
                            via=arn,
                        )
                    )
    return found, len(functions)


def _functions(ctx: ToolContext) -> list[dict[str, Any]]:
    """The account's functions in the region, up to MAX_FUNCTIONS (a gap says when there are more)."""
    pages = ctx.clients.lambda_.get_paginator("list_functions")
    listed = ctx.reads.one(
        Read(
            "lambda:ListFunctions",
            f"functions in {ctx.target.region} ({ctx.target.account})",
            lambda: list(
                islice((f for page in pages.paginate() for f in page["Functions"]), MAX_FUNCTIONS + 1)
            ),
            "functions whose dead-letter queue or destinations name the source are unknown",
        )
    )
    if listed is not None and len(listed) > MAX_FUNCTIONS:
        ctx.reads.gap(
            f"lambda:ListFunctions in {ctx.target.region}",
            f"the account has more than {MAX_FUNCTIONS} functions: only the first {MAX_FUNCTIONS} had their "
            "dead-letter queue and destinations compared with the source",
        )
        listed = listed[:MAX_FUNCTIONS]
    return listed or []


def _unique(consumers: list[SourceConsumer]) -> list[SourceConsumer]:
    seen: dict[tuple[str, str, str], SourceConsumer] = {}
    for consumer in consumers:
        seen.setdefault((consumer.function_arn, consumer.relation, consumer.via), consumer)
    return list(seen.values())


def _deleted_mappings(ctx: ToolContext, queue_arn: str) -> list[SourceConsumer]:
    """The mappings of ``queue_arn`` deleted in the last DELETED_MAPPING_HOURS: CloudTrail's
    DeleteEventSourceMapping events, whose response is the deleted mapping's configuration."""
    trail = ctx.clients.cloudtrail
    start = datetime.now(UTC) - timedelta(hours=DELETED_MAPPING_HOURS)

    def call() -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "LookupAttributes": [{"AttributeKey": "EventName", "AttributeValue": DELETE_MAPPING_EVENT}],
            "StartTime": start,
            "MaxResults": 50,
        }
        records: list[dict[str, Any]] = []
        for _ in range(MAX_TRAIL_PAGES):
            page = trail.lookup_events(**params)
            records += [json.loads(e["CloudTrailEvent"]) for e in page.get("Events", [])]
            if not page.get("NextToken"):
                return records
            params["NextToken"] = page["NextToken"]
        ctx.reads.gap(
            f"cloudtrail:LookupEvents of {DELETE_MAPPING_EVENT}",
            f"more than {MAX_TRAIL_PAGES * 50} mappings were deleted in the last {DELETED_MAPPING_HOURS} "
            "hours: only the newest were compared with the queue",
        )
        return records

    records = ctx.reads.one(
        Read(
            "cloudtrail:LookupEvents",
            f"{DELETE_MAPPING_EVENT} in {ctx.target.region}",
            call,
            "functions whose mapping of this queue was deleted may be missing",
        )
    )
    found = []
    for record in records or []:
        mapping = record.get("responseElements") or {}
        function = mapping.get("functionArn")
        if (
            mapping.get("eventSourceArn") == queue_arn
            and isinstance(function, str)
            and _is_function_arn(function)
        ):
            found.append(
                SourceConsumer(
                    function_name=function_name_of(function),
                    function_arn=function,
                    relation="deleted_event_source_mapping",
                    via=str(
                        next((v for k, v in mapping.items() if k.lower() == "uuid"), record.get("eventID"))
                    ),
                )
            )
    return found
