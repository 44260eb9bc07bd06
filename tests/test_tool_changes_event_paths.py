"""``get_recent_changes`` on a function's event paths, against the sandbox's CloudTrail: mapping changes made
by UUID alone (update, delete), its source queue's attributes, a subscription removed from a topic its
resource policy names, and the function's own asynchronous configuration and permissions; a mapping of
another function is not listed.

The sandbox records a mapping updated or deleted by its UUID with no resource the function can be found by
(only ``FunctionName`` names a Lambda resource there), and an ``Unsubscribe`` with none at all; AWS
documents no ``resources`` for these events either, so the tool looks them up by event name and keeps
those whose request or response names the function, one of its mappings or one of its topics."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract import ChangeEventDetail, GetRecentChangesArgs, RecentChangesResponse
from mcp_server.settings import ServerSettings
from mcp_server.tools.changes import recent_changes
from tests.conftest import Undo
from tests.queue_grants import grant_consumer
from tests.tool_support import call_tool

FUNCTION = names.REPORT_FUNCTION
REGION = names.DEFAULT_REGION
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{names.ACCOUNT_ID}:function:{FUNCTION}"
FUNCTION_LABELS = [f"function {FUNCTION}", f"function {FUNCTION_ARN}"]
CREATE, UPDATE, DELETE = (
    f"{operation} of function {FUNCTION}"
    for operation in ("CreateEventSourceMapping", "UpdateEventSourceMapping", "DeleteEventSourceMapping")
)


@pytest.fixture
def aws(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


def _queue(sqs: Any, name: str, undo: Undo) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    undo(lambda: sqs.delete_queue(QueueUrl=url))
    return url, f"arn:aws:sqs:{REGION}:{names.ACCOUNT_ID}:{name}"


def _mapping(lambda_: Any, queue_arn: str, function: str, undo: Undo | None = None) -> str:
    mapping = str(
        lambda_.create_event_source_mapping(EventSourceArn=queue_arn, FunctionName=function, Enabled=False)[
            "UUID"
        ]
    )
    if undo is not None:
        undo(lambda: lambda_.delete_event_source_mapping(UUID=mapping))
    return mapping


def test_event_path_changes_show_and_another_function_s_mapping_does_not(
    operator: boto3.Session, aws: AwsClients, undo: Undo
) -> None:
    started = datetime.now(UTC)
    sqs, sns, lambda_ = operator.client("sqs"), operator.client("sns"), operator.client("lambda")
    prefix = f"changes-paths-{uuid.uuid4().hex[:6]}"
    # granted first: the grants are changes on the roles too, older than every change the test reads
    undo(grant_consumer(operator, FUNCTION))
    undo(grant_consumer(operator, names.ORDERS_FUNCTION))
    source_url, source = _queue(sqs, f"{prefix}-source", undo)
    _, deleted_source = _queue(sqs, f"{prefix}-gone", undo)
    _, other_source = _queue(sqs, f"{prefix}-other", undo)
    topic = sns.create_topic(Name=f"{prefix}-topic")["TopicArn"]
    undo(lambda: sns.delete_topic(TopicArn=topic))
    kept = _mapping(lambda_, source, FUNCTION, undo)
    lambda_.update_event_source_mapping(UUID=kept, BatchSize=7)
    sqs.set_queue_attributes(QueueUrl=source_url, Attributes={"VisibilityTimeout": "1"})
    statement = f"{prefix}-sns"
    lambda_.add_permission(
        FunctionName=FUNCTION,
        StatementId=statement,
        Action="lambda:InvokeFunction",
        Principal="sns.amazonaws.com",
        SourceArn=topic,
    )
    undo(lambda: lambda_.remove_permission(FunctionName=FUNCTION, StatementId=statement))
    subscription = sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=FUNCTION_ARN)["SubscriptionArn"]
    sns.unsubscribe(SubscriptionArn=subscription)
    lambda_.put_function_event_invoke_config(FunctionName=FUNCTION, MaximumRetryAttempts=0)
    undo(lambda: lambda_.delete_function_event_invoke_config(FunctionName=FUNCTION))
    gone = _mapping(lambda_, deleted_source, FUNCTION)
    lambda_.delete_event_source_mapping(UUID=gone)
    others = _mapping(lambda_, other_source, names.ORDERS_FUNCTION, undo)
    lambda_.update_event_source_mapping(UUID=others, BatchSize=3)

    arguments = GetRecentChangesArgs(lambda_name=FUNCTION, hours=1, limit=200, detail=True)
    answer = call_tool(aws, recent_changes, arguments)
    assert isinstance(answer, RecentChangesResponse)

    mine = [
        (e.event_name, e.matched)
        for e in answer.events
        if isinstance(e, ChangeEventDetail)
        and any(mark in json.dumps(e.summary) for mark in (prefix, kept, gone, FUNCTION))
    ]
    queue, topic_label = f"queue {source}", f"topic {topic}"
    unsubscribe = f"Unsubscribe of topics {topic}"
    assert mine[:10] == [
        ("DeleteEventSourceMapping20150331", [DELETE]),
        ("CreateEventSourceMapping20150331", [*FUNCTION_LABELS, CREATE]),
        ("PutFunctionEventInvokeConfig", FUNCTION_LABELS),
        ("Unsubscribe", [unsubscribe]),
        ("Subscribe", [topic_label]),
        ("AddPermission20150331v2", FUNCTION_LABELS),
        ("SetQueueAttributes", [queue]),
        ("UpdateEventSourceMapping20150331", [UPDATE]),  # the sandbox lists no resource for the UUID
        ("CreateEventSourceMapping20150331", [*FUNCTION_LABELS, CREATE]),
        ("CreateTopic", [topic_label]),
    ]
    assert ("CreateQueue", [queue]) in mine[10:]
    assert others not in answer.model_dump_json()
    assert [
        s for s in answer.searched if s not in FUNCTION_LABELS and not s.startswith(("role ", "policy "))
    ] == [
        f"event source mapping {kept}",
        CREATE,
        UPDATE,
        DELETE,
        queue,
        topic_label,
        unsubscribe,
        f"bucket arn:aws:s3:::{names.REPORT_BUCKET}",  # what the role grants by name
    ]
    # A busy session's history may outgrow the lookups' pages or the deadline: then each gap of the searches
    # read above says its search stopped before this test began, so nothing it changed was left unread.
    for gap in (g for g in answer.gaps if " of role " not in g.source and " of policy " not in g.source):
        stopped = re.fullmatch(
            r"stopped reading because .+: its changes before (\S+) were not searched", gap.meaning
        )
        assert stopped is not None, gap
        assert datetime.fromisoformat(stopped[1]) < started, gap
