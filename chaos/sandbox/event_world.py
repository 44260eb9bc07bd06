"""The sandbox world's event-driven pipeline (docs/sandbox.md, "The world it provisions").

- ``orders-queue`` (redrive to ``orders-queue-dlq`` after ``ORDERS_MAX_RECEIVE_COUNT`` receives) feeds
  ``order-worker`` through an SQS event source mapping with partial batch responses; the worker stores
  each order in the ``orders`` table.
- The ``order-events`` SNS topic invokes ``order-notifier`` asynchronously, through a statement of the
  function's resource policy; no retries, and a failed event goes to ``order-notifier-dlq``.
- The ``clickstream`` Kinesis stream (two shards) feeds ``click-aggregator`` through an event source mapping
  with Lambda's stream defaults: no retry limit, no record age limit, no bisection, no on-failure destination.
- Alarms as a team would set them (deploy/alarms.py): the functions' own three, the source queue's age of
  oldest message, the stream consumer's iterator age, both dead-letter queues' depth, the asynchronous
  function's dropped events and failed deliveries, and the topic's failed notifications, all on the alerts
  topic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3

from chaos.sandbox import names
from deploy.alarms import (
    Alarm,
    async_alarms,
    caller_topic_alarms,
    dead_letter_queue_alarms,
    source_queue_alarms,
    stream_alarms,
    url_alarms,
)

# Lambda keeps an asynchronous event for up to this long (60 s to 6 h); the events are dropped only by
# age, so an hour is what a team that reads its dead-letter queue within the hour would choose.
ORDER_NOTIFIER_EVENT_AGE_SECONDS = 3600

MakeRole = Callable[..., str]  # (role name, function name, *inline statements) -> role ARN
MakeFunction = Callable[..., str]  # (function name, role ARN, module, **settings) -> function ARN


@dataclass(frozen=True)
class EventPipeline:
    """The identifiers of the pipeline's resources (World carries them under the same names)."""

    order_worker_arn: str
    order_notifier_arn: str
    orders_queue_url: str
    orders_queue_arn: str
    orders_dlq_url: str
    orders_dlq_arn: str
    order_notifier_dlq_url: str
    order_notifier_dlq_arn: str
    orders_mapping_uuid: str
    order_events_topic_arn: str
    order_events_subscription_arn: str
    click_aggregator_arn: str
    clickstream_arn: str
    click_mapping_uuid: str


def _queue(sqs: Any, name: str, **attributes: str) -> tuple[str, str]:
    url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn: str = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def _environment_key(session: boto3.Session) -> str:
    """A customer managed key for order-worker's environment variables (Lambda grants its role decryption)."""
    kms = session.client("kms")
    key: str = kms.create_key(Description="order-worker's environment variables")["KeyMetadata"]["Arn"]
    kms.create_alias(AliasName=names.ORDER_WORKER_KEY_ALIAS, TargetKeyId=key)
    return key


def _order_worker(
    session: boto3.Session, role: MakeRole, create: MakeFunction
) -> tuple[str, str, str, str, str, str]:
    """The queues, the worker and the mapping: the worker's ARN, the queues' URLs and ARNs, the mapping."""
    sqs = session.client("sqs")
    dlq_url, dlq_arn = _queue(sqs, names.ORDERS_DLQ)
    queue_url, queue_arn = _queue(
        sqs,
        names.ORDERS_QUEUE,
        VisibilityTimeout=str(names.ORDERS_QUEUE_VISIBILITY_SECONDS),
        RedrivePolicy=json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": names.ORDERS_MAX_RECEIVE_COUNT}
        ),
    )
    table_arn = session.client("dynamodb").describe_table(TableName=names.ORDERS_TABLE)["Table"]["TableArn"]
    role_arn = role(
        names.ORDER_WORKER_ROLE,
        names.ORDER_WORKER_FUNCTION,
        {
            "Sid": "ConsumeOrdersQueue",
            "Effect": "Allow",
            "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
            "Resource": queue_arn,
        },
        {"Sid": "PutOrders", "Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": table_arn},
    )
    arn = create(
        names.ORDER_WORKER_FUNCTION,
        role_arn,
        "order_worker",
        Description="Stores the orders that arrive on orders-queue",
        Timeout=names.ORDER_WORKER_TIMEOUT_SECONDS,
        MemorySize=256,
        Environment={"Variables": {"TABLE_NAME": names.ORDERS_TABLE}},
        KMSKeyArn=_environment_key(session),
    )
    mapping: str = session.client("lambda").create_event_source_mapping(
        EventSourceArn=queue_arn,
        FunctionName=names.ORDER_WORKER_FUNCTION,
        BatchSize=names.ORDERS_BATCH_SIZE,
        MaximumBatchingWindowInSeconds=0,
        FunctionResponseTypes=["ReportBatchItemFailures"],
        Enabled=True,
    )["UUID"]
    return arn, queue_url, queue_arn, dlq_url, dlq_arn, mapping


def _order_notifier(
    session: boto3.Session, role: MakeRole, create: MakeFunction
) -> tuple[str, str, str, str, str]:
    """The notifier, its dead-letter queue, the topic, its subscription and the permission that lets it
    invoke: the function's ARN, the queue's URL and ARN, the topic's and the subscription's ARNs."""
    dlq_url, dlq_arn = _queue(session.client("sqs"), names.ORDER_NOTIFIER_DLQ)
    role_arn = role(
        names.ORDER_NOTIFIER_ROLE,
        names.ORDER_NOTIFIER_FUNCTION,
        {"Sid": "SendFailedEvents", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": dlq_arn},
    )
    arn = create(
        names.ORDER_NOTIFIER_FUNCTION,
        role_arn,
        "order_notifier",
        Description="Tells customers about the order events published on order-events",
        Timeout=3,
        MemorySize=128,
        DeadLetterConfig={"TargetArn": dlq_arn},
    )
    lambda_, sns = session.client("lambda"), session.client("sns")
    lambda_.put_function_event_invoke_config(
        FunctionName=names.ORDER_NOTIFIER_FUNCTION,
        MaximumRetryAttempts=names.ORDER_NOTIFIER_RETRIES,
        MaximumEventAgeInSeconds=ORDER_NOTIFIER_EVENT_AGE_SECONDS,
    )
    topic_arn: str = sns.create_topic(Name=names.ORDER_EVENTS_TOPIC)["TopicArn"]
    lambda_.add_permission(
        FunctionName=names.ORDER_NOTIFIER_FUNCTION,
        StatementId=names.ORDER_EVENTS_STATEMENT,
        Action="lambda:InvokeFunction",
        Principal="sns.amazonaws.com",
        SourceArn=topic_arn,
    )
    subscription: str = sns.subscribe(TopicArn=topic_arn, Protocol="lambda", Endpoint=arn)["SubscriptionArn"]
    return arn, dlq_url, dlq_arn, topic_arn, subscription


def _click_aggregator(session: boto3.Session, role: MakeRole, create: MakeFunction) -> tuple[str, str, str]:
    """The stream, the consumer and the mapping: the consumer's ARN, the stream's, the mapping's UUID."""
    kinesis = session.client("kinesis")
    kinesis.create_stream(StreamName=names.CLICK_STREAM, ShardCount=names.CLICK_STREAM_SHARDS)
    stream_arn: str = kinesis.describe_stream_summary(StreamName=names.CLICK_STREAM)[
        "StreamDescriptionSummary"
    ]["StreamARN"]
    role_arn = role(
        names.CLICK_ROLE,
        names.CLICK_FUNCTION,
        {
            "Sid": "ReadClickstream",
            "Effect": "Allow",
            # What Lambda's poller calls with the function's role (with-kinesis.html, "Execution role
            # permissions"), as AWSLambdaKinesisExecutionRole grants it.
            "Action": [
                "kinesis:DescribeStream",
                "kinesis:DescribeStreamSummary",
                "kinesis:GetRecords",
                "kinesis:GetShardIterator",
                "kinesis:ListShards",
                "kinesis:ListStreams",
            ],
            "Resource": stream_arn,
        },
    )
    arn = create(
        names.CLICK_FUNCTION,
        role_arn,
        "click_aggregator",
        Description="Counts page views from the clickstream",
        Timeout=names.CLICK_TIMEOUT_SECONDS,
        MemorySize=128,
    )
    mapping: str = session.client("lambda").create_event_source_mapping(
        EventSourceArn=stream_arn,
        FunctionName=names.CLICK_FUNCTION,
        StartingPosition="LATEST",
        BatchSize=names.CLICK_BATCH_SIZE,
    )["UUID"]
    return arn, stream_arn, mapping


def pipeline_alarms(alerts_topic_arn: str) -> list[Alarm]:
    """The event path's alarms (the functions' own three are made with the other functions')."""
    return [
        *source_queue_alarms(names.ORDERS_QUEUE, alerts_topic_arn, names.QUEUE_AGE_ALARM_SECONDS),
        *stream_alarms(names.CLICK_FUNCTION, alerts_topic_arn, names.ITERATOR_AGE_ALARM_MS),
        *dead_letter_queue_alarms(names.ORDERS_DLQ, alerts_topic_arn),
        *dead_letter_queue_alarms(names.ORDER_NOTIFIER_DLQ, alerts_topic_arn),
        *async_alarms(names.ORDER_NOTIFIER_FUNCTION, alerts_topic_arn),
        *caller_topic_alarms(names.ORDER_EVENTS_TOPIC, alerts_topic_arn),
        *url_alarms(names.ORDER_INTAKE_FUNCTION, alerts_topic_arn),  # order-intake's public URL
        *url_alarms(names.REPORT_FUNCTION, alerts_topic_arn),  # report-builder's AWS_IAM URL
    ]


def provision_pipeline(
    session: boto3.Session, role: MakeRole, create: MakeFunction, alerts_topic_arn: str
) -> EventPipeline:
    """Create the pipeline in ``session``'s account, after the ``orders`` table. ``role(name, function,
    *statements)`` makes an execution role and ``create(name, role_arn, module, **settings)`` a function,
    as for the world's other functions."""
    worker_arn, queue_url, queue_arn, dlq_url, dlq_arn, mapping = _order_worker(session, role, create)
    notifier_arn, notifier_dlq_url, notifier_dlq_arn, topic_arn, subscription = _order_notifier(
        session, role, create
    )
    click_arn, stream_arn, click_mapping = _click_aggregator(session, role, create)
    cloudwatch = session.client("cloudwatch")
    for alarm in pipeline_alarms(alerts_topic_arn):
        cloudwatch.put_metric_alarm(**alarm)
    return EventPipeline(
        order_worker_arn=worker_arn,
        order_notifier_arn=notifier_arn,
        orders_queue_url=queue_url,
        orders_queue_arn=queue_arn,
        orders_dlq_url=dlq_url,
        orders_dlq_arn=dlq_arn,
        order_notifier_dlq_url=notifier_dlq_url,
        order_notifier_dlq_arn=notifier_dlq_arn,
        orders_mapping_uuid=mapping,
        order_events_topic_arn=topic_arn,
        order_events_subscription_arn=subscription,
        click_aggregator_arn=click_arn,
        clickstream_arn=stream_arn,
        click_mapping_uuid=click_mapping,
    )
