"""``get_event_sources`` through the real MCP client, against the sandbox, as the read-only `mcp-server`
identity. The operator gives `report-builder` its own event paths: two SQS mappings (one enabled, one
disabled whose queue's visibility timeout was lowered below the function's timeout afterwards, as Lambda
refuses the mapping otherwise), an event invoke config with an SQS on-failure destination, a dead-letter
queue, a resource-policy statement for one SNS topic and subscriptions from two topics.

No message is sent to a mapped queue (the emulator may deliver them): depths are in unmapped queues.
Metric figures are put as AWS would publish them, with the names and statistics AWS documents:
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html,
https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html,
https://docs.aws.amazon.com/sns/latest/dg/sns-monitoring-using-cloudwatch.html.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import Client

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract.event_sources import (
    AsyncMetrics,
    EventSourcesResponse,
    GetEventSourcesArgs,
    PolicyStatement,
    QueueState,
)
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from mcp_server.tools.event_sources import destinations, event_sources, invoke_allowed
from mcp_server.tools.policy_statements import statement
from tests.queue_grants import grant_consumer
from tests.reduced_reader import reader_without
from tests.tool_support import call_tool

SETTINGS = ServerSettings()
FUNCTION = names.REPORT_FUNCTION
FUNCTION_ARN = f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{FUNCTION}"
LOWERED_VISIBILITY_SECONDS = 1


@dataclass(frozen=True)
class Paths:
    """What the operator set up, by ARN."""

    timeout: int
    source: str
    disabled_source: str
    redrive_dlq: str
    failed: str
    dead_letter: str
    topic: str
    other_topic: str
    enabled_uuid: str
    disabled_uuid: str
    statement_id: str
    subscription: str
    other_subscription: str


def _queue_arn(name: str) -> str:
    return f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{name}"


def _queues(sqs: Any, prefix: str, visibility: int) -> dict[str, str]:
    """The queues, by role; the source queues redrive to the DLQ after 2 receives."""
    urls = {
        role: sqs.create_queue(QueueName=f"{prefix}-{role}")["QueueUrl"]
        for role in ("dlq", "failed", "async-dlq")
    }
    redrive = json.dumps({"deadLetterTargetArn": _queue_arn(f"{prefix}-dlq"), "maxReceiveCount": "2"})
    for role in ("source", "disabled"):
        urls[role] = sqs.create_queue(
            QueueName=f"{prefix}-{role}",
            Attributes={"VisibilityTimeout": str(visibility), "RedrivePolicy": redrive},
        )["QueueUrl"]
    return urls


def _metrics(cloudwatch: Any, prefix: str, topic: str, now: datetime) -> None:
    """Datapoints for the source queue, the function's asynchronous invocations and the topic."""
    earlier, later = now - timedelta(minutes=10), now - timedelta(minutes=2)

    def put(namespace: str, dimension: tuple[str, str], points: list[tuple[str, datetime, float]]) -> None:
        cloudwatch.put_metric_data(
            Namespace=namespace,
            MetricData=[
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": dimension[0], "Value": dimension[1]}],
                    "Timestamp": stamp,
                    "Value": value,
                }
                for metric, stamp, value in points
            ],
        )

    put(
        "AWS/SQS",
        ("QueueName", f"{prefix}-source"),
        [
            ("ApproximateAgeOfOldestMessage", earlier, 500.0),
            ("ApproximateAgeOfOldestMessage", later, 120.0),  # the latest, though not the largest
            ("NumberOfMessagesSent", earlier, 4.0),
            ("NumberOfMessagesSent", later, 3.0),
            ("NumberOfMessagesReceived", later, 2.0),
            ("NumberOfMessagesDeleted", later, 1.0),
        ],
    )
    put(
        "AWS/Lambda",
        ("FunctionName", FUNCTION),
        [
            ("AsyncEventsReceived", earlier, 5.0),
            ("AsyncEventsReceived", later, 2.0),
            ("AsyncEventsDropped", later, 1.0),
            ("AsyncEventAge", earlier, 61000.0),
            ("AsyncEventAge", later, 900.0),
            ("DeadLetterErrors", later, 1.0),
            ("DestinationDeliveryFailures", later, 2.0),
        ],
    )
    put(
        "AWS/SNS",
        ("TopicName", topic.rsplit(":", 1)[-1]),
        [("NumberOfNotificationsFailed", later, 3.0), ("NumberOfNotificationsDelivered", later, 6.0)],
    )


@pytest.fixture(scope="module")
def paths(sandbox: Sandbox) -> Iterator[Paths]:
    operator = sandbox.session(names.OPERATOR)
    sqs, sns, lambda_ = operator.client("sqs"), operator.client("sns"), operator.client("lambda")
    prefix = f"evsrc-{uuid.uuid4().hex[:6]}"
    timeout = lambda_.get_function_configuration(FunctionName=FUNCTION)["Timeout"]
    urls = _queues(sqs, prefix, visibility=timeout + 1)
    revoke = grant_consumer(operator, FUNCTION)
    enabled = lambda_.create_event_source_mapping(
        EventSourceArn=_queue_arn(f"{prefix}-source"),
        FunctionName=FUNCTION,
        BatchSize=5,
        MaximumBatchingWindowInSeconds=0,
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )["UUID"]
    disabled = lambda_.create_event_source_mapping(
        EventSourceArn=_queue_arn(f"{prefix}-disabled"), FunctionName=FUNCTION, BatchSize=10, Enabled=False
    )["UUID"]
    sqs.set_queue_attributes(
        QueueUrl=urls["disabled"], Attributes={"VisibilityTimeout": str(LOWERED_VISIBILITY_SECONDS)}
    )
    for body in ("a", "b"):
        sqs.send_message(QueueUrl=urls["async-dlq"], MessageBody=body)
    sqs.send_message(QueueUrl=urls["failed"], MessageBody="c")
    sqs.send_message(QueueUrl=urls["dlq"], MessageBody="d")  # as the redrive policy would move it
    lambda_.put_function_event_invoke_config(
        FunctionName=FUNCTION,
        MaximumRetryAttempts=0,
        MaximumEventAgeInSeconds=120,
        DestinationConfig={"OnFailure": {"Destination": _queue_arn(f"{prefix}-failed")}},
    )
    lambda_.update_function_configuration(
        FunctionName=FUNCTION, DeadLetterConfig={"TargetArn": _queue_arn(f"{prefix}-async-dlq")}
    )
    topic = sns.create_topic(Name=f"{prefix}-topic")["TopicArn"]
    other_topic = sns.create_topic(Name=f"{prefix}-other")["TopicArn"]
    statement_id = f"{prefix}-sns"
    lambda_.add_permission(
        FunctionName=FUNCTION,
        StatementId=statement_id,
        Action="lambda:InvokeFunction",
        Principal="sns.amazonaws.com",
        SourceArn=topic,
    )
    subscription = sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=FUNCTION_ARN)["SubscriptionArn"]
    other = sns.subscribe(TopicArn=other_topic, Protocol="lambda", Endpoint=f"{FUNCTION_ARN}:$LATEST")[
        "SubscriptionArn"
    ]
    sandbox.reset_cloudwatch()
    _metrics(operator.client("cloudwatch"), prefix, topic, datetime.now(UTC))
    yield Paths(
        timeout, _queue_arn(f"{prefix}-source"), _queue_arn(f"{prefix}-disabled"),
        _queue_arn(f"{prefix}-dlq"), _queue_arn(f"{prefix}-failed"), _queue_arn(f"{prefix}-async-dlq"), topic,
        other_topic, enabled, disabled, statement_id, subscription, other,
    )  # fmt: skip
    for arn in (subscription, other):
        sns.unsubscribe(SubscriptionArn=arn)
    for arn in (topic, other_topic):
        sns.delete_topic(TopicArn=arn)
    lambda_.remove_permission(FunctionName=FUNCTION, StatementId=statement_id)
    lambda_.update_function_configuration(FunctionName=FUNCTION, DeadLetterConfig={})
    lambda_.delete_function_event_invoke_config(FunctionName=FUNCTION)
    for mapping in (enabled, disabled):
        lambda_.delete_event_source_mapping(UUID=mapping)
    for url in urls.values():
        sqs.delete_queue(QueueUrl=url)
    revoke()
    sandbox.reset_cloudwatch()


@pytest.fixture(scope="module")
def clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(SETTINGS, sandbox.session(names.MCP_SERVER))


async def _through_mcp(clients: AwsClients, **arguments: Any) -> EventSourcesResponse:
    async with Client(build_server(SETTINGS, clients)) as client:
        result = await client.call_tool("get_event_sources", {"lambda_name": FUNCTION, **arguments})
    assert not result.is_error, result.content
    return EventSourcesResponse.model_validate(result.structured_content)


def _url(sandbox: Sandbox, arn: str) -> str:
    return str(
        sandbox.session(names.OPERATOR)
        .client("sqs")
        .get_queue_url(QueueName=arn.rsplit(":", 1)[-1])["QueueUrl"]
    )


def _dead_letter_kept(sandbox: Sandbox) -> bool:
    """moto 5.2.5 neither keeps nor returns DeadLetterConfig; the sandbox's asynchronous invocation may."""
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    return "DeadLetterConfig" in lambda_.get_function_configuration(FunctionName=FUNCTION)


async def test_mappings_with_their_source_queues(sandbox: Sandbox, paths: Paths, clients: AwsClients) -> None:
    answer = await _through_mcp(clients)

    assert answer.gaps == []
    assert (answer.function_name, answer.function_arn, answer.timeout_seconds) == (
        FUNCTION,
        FUNCTION_ARN,
        paths.timeout,
    )
    by_uuid = {m.UUID: m for m in answer.mappings}
    assert set(by_uuid) == {paths.enabled_uuid, paths.disabled_uuid}
    enabled, disabled = by_uuid[paths.enabled_uuid], by_uuid[paths.disabled_uuid]
    assert (enabled.State, enabled.EventSourceArn, enabled.BatchSize) == ("Enabled", paths.source, 5)
    assert (enabled.MaximumBatchingWindowInSeconds, enabled.FunctionResponseTypes) == (
        0,
        ["ReportBatchItemFailures"],
    )
    assert enabled.visibility_timeout_below_function_timeout is False
    assert enabled.queue == QueueState(
        QueueArn=paths.source,
        QueueUrl=_url(sandbox, paths.source),
        VisibilityTimeout=paths.timeout + 1,
        MessageRetentionPeriod=345600,  # SQS's default, four days
        DeadLetterTargetArn=paths.redrive_dlq,
        MaxReceiveCount=2,
        ApproximateNumberOfMessages=0,
        ApproximateNumberOfMessagesNotVisible=0,
        oldest_message_age_seconds=120.0,
        messages_sent=7.0,
        messages_received=2.0,
        messages_deleted=1.0,
    )
    # The source queue's redrive dead-letter queue, read after the source queue names it. Its metrics
    # are whatever the emulator's per-second sampler wrote by then, if it ran: not compared.
    sampled = {"oldest_message_age_seconds", "messages_sent", "messages_received", "messages_deleted"}
    assert enabled.dead_letter_queue is not None
    assert enabled.dead_letter_queue.model_dump(exclude=sampled) == QueueState(
        QueueArn=paths.redrive_dlq,
        QueueUrl=_url(sandbox, paths.redrive_dlq),
        VisibilityTimeout=30,  # SQS's default
        MessageRetentionPeriod=345600,
        ApproximateNumberOfMessages=1,
        ApproximateNumberOfMessagesNotVisible=0,
    ).model_dump(exclude=sampled)
    assert disabled.dead_letter_queue == enabled.dead_letter_queue
    assert (disabled.State, disabled.EventSourceArn, disabled.BatchSize) == (
        "Disabled",
        paths.disabled_source,
        10,
    )
    assert disabled.queue is not None
    assert disabled.queue.VisibilityTimeout == LOWERED_VISIBILITY_SECONDS
    assert disabled.visibility_timeout_below_function_timeout is True
    # nothing was ever sent to it: no age, and no message counted (no datapoint yet, or the sampler's 0)
    assert disabled.queue.oldest_message_age_seconds is None
    assert disabled.queue.messages_sent in (None, 0.0)


async def test_asynchronous_invocation_destinations_and_dead_letter_queue(
    sandbox: Sandbox, paths: Paths, clients: AwsClients
) -> None:
    answer = await _through_mcp(clients)

    config = answer.async_config
    assert (config.configured, config.MaximumRetryAttempts, config.MaximumEventAgeInSeconds) == (True, 0, 120)
    failed = config.destinations[0]
    assert (failed.kind, failed.Destination) == ("on_failure", paths.failed)
    assert failed.queue is not None
    assert (failed.queue.QueueUrl, failed.queue.ApproximateNumberOfMessages) == (
        _url(sandbox, paths.failed),
        1,
    )
    # moto 5.2.5 neither keeps nor returns DeadLetterConfig; the sandbox's asynchronous invocation may add it.
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    kept = (
        lambda_.get_function_configuration(FunctionName=FUNCTION).get("DeadLetterConfig", {}).get("TargetArn")
    )
    assert [(d.kind, d.Destination) for d in config.destinations[1:]] == (
        [("dead_letter_queue", paths.dead_letter)] if kept else []
    )
    if kept:
        dead_letter = config.destinations[1].queue
        assert dead_letter is not None
        assert (dead_letter.ApproximateNumberOfMessages, dead_letter.DeadLetterTargetArn) == (2, None)
    assert config.metrics == AsyncMetrics(
        AsyncEventsReceived=7.0,
        AsyncEventsDropped=1.0,
        AsyncEventAgeMaxMs=61000.0,
        DeadLetterErrors=1.0,
        DestinationDeliveryFailures=2.0,
    )


async def test_resource_policy_and_subscriptions(paths: Paths, clients: AwsClients) -> None:
    answer = await _through_mcp(clients)

    ours = [s for s in answer.policy_statements if s.Sid == paths.statement_id]
    assert ours == [
        PolicyStatement(
            Sid=paths.statement_id,
            Effect="Allow",
            Principal="sns.amazonaws.com",
            Action="lambda:InvokeFunction",
            SourceArn=paths.topic,
            SourceAccount=None,
        )
    ]
    by_arn = {s.SubscriptionArn: s for s in answer.subscriptions}
    assert set(by_arn) == {paths.subscription, paths.other_subscription}
    allowed, refused = by_arn[paths.subscription], by_arn[paths.other_subscription]
    assert (allowed.TopicArn, allowed.invoke_allowed) == (paths.topic, True)
    assert (allowed.notifications_failed, allowed.notifications_delivered) == (3.0, 6.0)
    assert (refused.TopicArn, refused.invoke_allowed) == (paths.other_topic, False)
    assert (refused.notifications_failed, refused.notifications_delivered) == (None, None)


async def test_a_function_with_no_event_paths_answers_lambda_s_defaults(clients: AwsClients) -> None:
    async with Client(build_server(SETTINGS, clients)) as client:
        result = await client.call_tool("get_event_sources", {"lambda_name": names.ORDERS_FUNCTION})
    answer = EventSourcesResponse.model_validate(result.structured_content)

    assert (answer.mappings, answer.subscriptions, answer.gaps) == ([], [], [])
    config = answer.async_config
    assert (config.configured, config.MaximumRetryAttempts, config.MaximumEventAgeInSeconds) == (
        False,
        2,
        21600,
    )
    assert config.destinations == []


@pytest.fixture(scope="module")
def narrow(sandbox: Sandbox) -> Iterator[AwsClients]:
    """The MCP server's reads, less sqs:GetQueueAttributes and lambda:GetPolicy."""
    with reader_without(sandbox, "sqs:GetQueueAttributes", "lambda:GetPolicy") as session:
        yield AwsClients.create(SETTINGS, session)


def test_reads_refused_are_gaps_and_the_rest_is_answered(
    sandbox: Sandbox, paths: Paths, narrow: AwsClients
) -> None:
    answer = call_tool(narrow, event_sources, GetEventSourcesArgs(lambda_name=FUNCTION))

    queues = [paths.source, paths.disabled_source, paths.failed] + [paths.dead_letter] * _dead_letter_kept(
        sandbox
    )
    denied = "the MCP server's identity is not allowed to read it"
    assert [(g.source, g.error_code, g.meaning) for g in answer.gaps] == [
        (
            f"lambda:GetPolicy of function {FUNCTION} (the server's account)",
            "AccessDeniedException",
            f"{denied}: who may invoke the function (its resource policy) is unknown, and so is whether its "
            "SNS subscriptions may",
        ),
        *(
            (
                f"sqs:GetQueueUrl/GetQueueAttributes of queue {arn}",
                "AccessDeniedException",
                f"{denied}: queue {arn}'s visibility timeout, redrive policy and depth are unknown",
            )
            for arn in queues
        ),
    ]
    assert {m.UUID for m in answer.mappings} == {paths.enabled_uuid, paths.disabled_uuid}
    assert all(m.visibility_timeout_below_function_timeout is None for m in answer.mappings)
    enabled = next(m for m in answer.mappings if paths.enabled_uuid == m.UUID)
    assert enabled.queue is not None
    assert (enabled.queue.VisibilityTimeout, enabled.queue.oldest_message_age_seconds) == (None, 120.0)
    assert answer.policy_statements == []
    assert {s.SubscriptionArn: s.invoke_allowed for s in answer.subscriptions} == {
        paths.subscription: None,
        paths.other_subscription: None,
    }
    assert answer.async_config.MaximumRetryAttempts == 0


def test_arn_like_conditions_and_deny_statements() -> None:
    topic = f"arn:aws:sns:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:orders"

    def allow(**condition: Any) -> PolicyStatement:
        return statement(
            {
                "Sid": "s",
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "lambda:InvokeFunction",
                "Condition": condition,
            }
        )

    wildcard = allow(ArnLike={"AWS:SourceArn": f"arn:aws:sns:{names.DEFAULT_REGION}:*:ord*"})
    across_parts = allow(ArnLike={"AWS:SourceArn": "arn:aws:sns:*"})  # one part: matches no six-part ARN
    account = allow(StringEquals={"AWS:SourceAccount": names.SECOND_ACCOUNT_ID})
    deny = PolicyStatement(**(allow().model_dump() | {"Effect": "Deny"}))
    assert (wildcard.SourceArn, account.SourceAccount) == (
        f"arn:aws:sns:{names.DEFAULT_REGION}:*:ord*",
        names.SECOND_ACCOUNT_ID,
    )
    assert invoke_allowed([wildcard], topic) is True
    assert invoke_allowed([across_parts], topic) is False
    assert invoke_allowed([account], topic) is False
    assert invoke_allowed([allow()], topic) is True
    assert invoke_allowed([allow(), deny], topic) is False


def test_the_dead_letter_queue_is_read_from_the_function_s_configuration() -> None:
    dlq = _queue_arn("async-dlq")
    config = {"DeadLetterConfig": {"TargetArn": dlq}}
    invoke = {"DestinationConfig": {"OnSuccess": {"Destination": "arn:aws:sns:ca-central-1:123456789012:t"}}}

    assert [(d.kind, d.Destination) for d in destinations(config, invoke)] == [
        ("on_success", "arn:aws:sns:ca-central-1:123456789012:t"),
        ("dead_letter_queue", dlq),
    ]
    assert destinations({}, None) == []
