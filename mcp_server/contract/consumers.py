"""``get_source_consumers``: which Lambda functions an SQS queue or an SNS topic is tied to, and how. What
the supervisor asks when an alarm names a queue, a dead-letter queue or a topic instead of a function."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, SourceArguments
from mcp_server.contract.declaration import ToolDeclaration

Relation = Literal[
    "event_source_mapping",
    "deleted_event_source_mapping",
    "redrive_dead_letter_queue",
    "dead_letter_config",
    "on_failure_destination",
    "on_success_destination",
    "subscription",
]


DELETED_MAPPING_HOURS = 24  # how far back CloudTrail is searched for a queue's deleted mappings


class GetSourceConsumersArgs(SourceArguments):
    """Arguments of ``get_source_consumers``: the queue or topic, and optionally where."""


class SourceConsumer(ContractModel):
    """One function tied to the source, and what ties them."""

    function_name: str
    function_arn: str = Field(description="As the tie names it (a qualifier included, if it has one).")
    relation: Relation = Field(
        description="event_source_mapping: the function polls the queue; deleted_event_source_mapping: "
        "the function polled it through a mapping deleted within the last "
        f"{DELETED_MAPPING_HOURS} hours (CloudTrail); redrive_dead_letter_queue: the "
        "queue is the dead-letter queue of a queue the function polls; dead_letter_config, "
        "on_failure_destination, on_success_destination: the function's asynchronous invocations end "
        "there; subscription: the topic invokes the function."
    )
    via: str = Field(
        description="The tie: the mapping's UUID (a deleted one's too), the redrive source queue's ARN, "
        "the function's ARN (its own configuration) or the subscription's ARN."
    )
    state: str | None = Field(
        default=None,
        description="The mapping's State (Enabled, Disabled, ...); None for other ties and deleted mappings.",
    )


class SourceConsumersResponse(ContractModel):
    """Answer of ``get_source_consumers``."""

    source_type: Literal["sqs_queue", "sns_topic"]
    source_arn: str
    queue_url: str | None = Field(default=None, description="The queue's URL; None for a topic.")
    consumers: list[SourceConsumer] = Field(
        default_factory=list, description="Every function tied to the source; empty: none was found."
    )
    functions_scanned: int = Field(
        description="How many of the account's functions had their dead-letter queue and destinations "
        "compared with the source (ListFunctions is read up to a bound, stated in gaps when reached)."
    )
    gaps: Gaps = Field(default_factory=list)


GET_SOURCE_CONSUMERS = ToolDeclaration(
    name="get_source_consumers",
    title="Functions tied to a queue or topic",
    description=(
        "Which Lambda functions an SQS queue (name, URL or ARN) or an SNS topic (ARN) is tied to, and how: "
        "event source mappings that poll the queue (or did, until deleted in the last day), mappings of "
        "the queues whose dead-letter queue it is, "
        "functions whose dead-letter queue or on-failure/on-success destination it is, and the topic's "
        "lambda subscriptions. Read it when an alarm names a queue or a topic and not a function."
    ),
    arguments=GetSourceConsumersArgs,
    response=SourceConsumersResponse,
    implementation="mcp_server.tools.source_consumers:source_consumers",
    reads=(
        ("sqs", "GetQueueUrl"),
        ("sqs", "GetQueueAttributes"),
        ("sqs", "ListDeadLetterSourceQueues"),
        ("lambda", "ListEventSourceMappings"),
        ("cloudtrail", "LookupEvents"),
        ("lambda", "ListFunctions"),
        ("lambda", "ListFunctionEventInvokeConfigs"),
        ("sns", "ListSubscriptionsByTopic"),
    ),
    order=80,
)
