"""Queues, a dead-letter queue and a topic tied to the world's functions, created by the operator for one
test and removed after it: a disabled mapping (nothing is delivered; no message is ever sent), a redrive
policy, an on-failure destination and a lambda subscription."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import boto3

from chaos.sandbox import names
from tests.fixture_types import Undo
from tests.queue_grants import grant_consumer

REGION = names.DEFAULT_REGION
ACCOUNT = names.ACCOUNT_ID


@dataclass(frozen=True)
class Wiring:
    queue: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    mapping: str
    topic_arn: str
    subscription: str


def function_arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


def wire_sources(operator: boto3.Session, undo: Undo) -> Wiring:
    """A queue polled by data-processor (a disabled mapping) whose redrive policy ends in a DLQ, that DLQ as
    orders-api's on-failure destination, and a topic subscribed by orders-api."""
    sqs, lambda_, sns = operator.client("sqs"), operator.client("lambda"), operator.client("sns")
    tag = uuid.uuid4().hex[:8]
    dlq_url = sqs.create_queue(QueueName=f"sig-{tag}-dlq")["QueueUrl"]
    undo(lambda: sqs.delete_queue(QueueUrl=dlq_url))
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": "2"}}'
    queue_url = sqs.create_queue(
        QueueName=f"sig-{tag}-work", Attributes={"VisibilityTimeout": "900", "RedrivePolicy": redrive}
    )["QueueUrl"]
    undo(lambda: sqs.delete_queue(QueueUrl=queue_url))
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    undo(grant_consumer(operator, names.FUNCTION_NAME))
    mapping = lambda_.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=names.FUNCTION_NAME, Enabled=False, BatchSize=1
    )["UUID"]
    undo(lambda: lambda_.delete_event_source_mapping(UUID=mapping))
    lambda_.put_function_event_invoke_config(
        FunctionName=names.ORDERS_FUNCTION, DestinationConfig={"OnFailure": {"Destination": dlq_arn}}
    )
    undo(lambda: lambda_.delete_function_event_invoke_config(FunctionName=names.ORDERS_FUNCTION))
    topic_arn = sns.create_topic(Name=f"sig-{tag}-events")["TopicArn"]
    undo(lambda: sns.delete_topic(TopicArn=topic_arn))
    subscription = sns.subscribe(
        TopicArn=topic_arn, Protocol="lambda", Endpoint=function_arn(names.ORDERS_FUNCTION)
    )["SubscriptionArn"]
    undo(lambda: sns.unsubscribe(SubscriptionArn=subscription))
    return Wiring(f"sig-{tag}-work", queue_arn, dlq_url, dlq_arn, mapping, topic_arn, subscription)
