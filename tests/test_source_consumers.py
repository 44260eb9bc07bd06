"""``get_source_consumers`` against the sandbox: which functions a queue, a dead-letter queue or a topic is
tied to, through mappings, redrive policies, asynchronous destinations and subscriptions, created here by
the operator (disabled mappings, no message sent) and removed after each test."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from pydantic import ValidationError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients, TargetClients
from mcp_server.contract.common import Gap
from mcp_server.contract.consumers import (
    DELETED_MAPPING_HOURS,
    GetSourceConsumersArgs,
    SourceConsumer,
    SourceConsumersResponse,
)
from mcp_server.contract.registry import SERVED_TOOLS, TOOLS
from mcp_server.errors import DiagnosticToolError
from mcp_server.reads import Reads
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings
from mcp_server.source_names import SourceName, parse_source
from mcp_server.targets import Target
from mcp_server.tools.context import ToolContext
from mcp_server.tools.source_consumers import (
    DELETE_MAPPING_EVENT,
    MAX_FUNCTIONS,
    MAX_SOURCE_QUEUES,
    MAX_TRAIL_PAGES,
    source_consumers,
)
from tests.conftest import Undo
from tests.queue_grants import consumer
from tests.source_wiring import Wiring, function_arn, wire_sources

REGION = names.DEFAULT_REGION
ACCOUNT = names.ACCOUNT_ID


@pytest.fixture
def wiring(operator: boto3.Session, undo: Undo) -> Wiring:
    return wire_sources(operator, undo)


@pytest.fixture
def recorded(sandbox: Sandbox) -> tuple[ToolRunner, list[tuple[str, str]]]:
    """The tool as the server runs it, as the mcp-server identity, with every AWS call it makes."""
    session: boto3.Session = sandbox.session(names.MCP_SERVER)
    calls: list[tuple[str, str]] = []

    def record(model: Any, **_: Any) -> None:
        calls.append((model.service_model.service_name, model.name))

    session._session.register("before-call", record)
    settings = ServerSettings()
    return ToolRunner(settings, AwsClients.create(settings, session)), calls


def _ask(runner: ToolRunner, source: str) -> SourceConsumersResponse:
    answer = runner.run("get_source_consumers", GetSourceConsumersArgs(source=source))
    assert isinstance(answer, SourceConsumersResponse)
    return answer


def _functions(operator: boto3.Session) -> int:
    pages = operator.client("lambda").get_paginator("list_functions").paginate()
    return sum(len(page["Functions"]) for page in pages)


def test_a_queue_names_the_function_whose_mapping_polls_it(
    wiring: Wiring, recorded: tuple[ToolRunner, list[tuple[str, str]]], operator: boto3.Session
) -> None:
    runner, _ = recorded
    answer = _ask(runner, wiring.queue)
    assert answer.source_type == "sqs_queue"
    assert answer.source_arn == wiring.queue_arn
    assert answer.consumers == [
        SourceConsumer(
            function_name=names.FUNCTION_NAME,
            function_arn=function_arn(names.FUNCTION_NAME),
            relation="event_source_mapping",
            via=wiring.mapping,
            state="Disabled",
        )
    ]
    assert answer.functions_scanned == _functions(operator)
    assert answer.gaps == []


def test_a_queue_names_the_function_whose_mapping_of_it_was_deleted(
    recorded: tuple[ToolRunner, list[tuple[str, str]]], operator: boto3.Session, undo: Undo
) -> None:
    """CloudTrail's DeleteEventSourceMapping response names the queue and the function: the queue's alarm
    still leads to the function that no longer polls it."""
    sqs, lambda_ = operator.client("sqs"), operator.client("lambda")
    url = sqs.create_queue(QueueName=f"sig-{uuid.uuid4().hex[:8]}-orphan")["QueueUrl"]
    undo(lambda: sqs.delete_queue(QueueUrl=url))
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    with consumer(operator, names.ORDERS_FUNCTION):
        mapping = lambda_.create_event_source_mapping(
            EventSourceArn=arn, FunctionName=names.ORDERS_FUNCTION, Enabled=False
        )["UUID"]
    lambda_.delete_event_source_mapping(UUID=mapping)
    runner, _ = recorded
    answer = _ask(runner, url)
    assert answer.consumers == [
        SourceConsumer(
            function_name=names.ORDERS_FUNCTION,
            function_arn=function_arn(names.ORDERS_FUNCTION),
            relation="deleted_event_source_mapping",
            via=mapping,
        )
    ]
    assert answer.gaps == []


def test_a_dead_letter_queue_names_its_source_queues_consumer_and_the_function_it_is_the_destination_of(
    wiring: Wiring, recorded: tuple[ToolRunner, list[tuple[str, str]]]
) -> None:
    runner, _ = recorded
    answer = _ask(runner, wiring.dlq_url)  # by URL
    assert (answer.source_arn, answer.queue_url) == (wiring.dlq_arn, wiring.dlq_url)
    assert answer.consumers == [
        SourceConsumer(
            function_name=names.FUNCTION_NAME,
            function_arn=function_arn(names.FUNCTION_NAME),
            relation="redrive_dead_letter_queue",
            via=wiring.queue_arn,
            state="Disabled",
        ),
        SourceConsumer(
            function_name=names.ORDERS_FUNCTION,
            function_arn=function_arn(
                names.ORDERS_FUNCTION
            ),  # the config's FunctionArn, as the emulator says
            relation="on_failure_destination",
            via=function_arn(names.ORDERS_FUNCTION),
        ),
    ]
    assert answer.gaps == []
    assert _ask(runner, wiring.dlq_arn).consumers == answer.consumers  # by ARN: the same


def test_a_topic_names_the_function_it_delivers_to(
    wiring: Wiring, recorded: tuple[ToolRunner, list[tuple[str, str]]]
) -> None:
    runner, _ = recorded
    answer = _ask(runner, wiring.topic_arn)
    assert (answer.source_type, answer.source_arn, answer.queue_url) == ("sns_topic", wiring.topic_arn, None)
    assert answer.consumers == [
        SourceConsumer(
            function_name=names.ORDERS_FUNCTION,
            function_arn=function_arn(names.ORDERS_FUNCTION),
            relation="subscription",
            via=wiring.subscription,
        )
    ]
    assert answer.gaps == []


def test_the_tool_calls_exactly_the_aws_reads_it_declares(
    wiring: Wiring, recorded: tuple[ToolRunner, list[tuple[str, str]]]
) -> None:
    runner, calls = recorded
    for source in (wiring.queue, wiring.dlq_url, wiring.topic_arn):
        _ask(runner, source)
    assert set(calls) - {("sts", "GetCallerIdentity")} == set(SERVED_TOOLS["get_source_consumers"].reads)


def test_a_queue_or_topic_that_does_not_exist_fails_the_tool_naming_the_aws_error(
    recorded: tuple[ToolRunner, list[tuple[str, str]]],
) -> None:
    runner, _ = recorded
    with pytest.raises(DiagnosticToolError) as queue:
        _ask(runner, "sig-no-such-queue")
    assert str(queue.value).startswith(
        "AWS error AWS.SimpleQueueService.NonExistentQueue while reading queue "
    )
    with pytest.raises(DiagnosticToolError) as topic:
        _ask(runner, f"arn:aws:sns:{REGION}:{ACCOUNT}:sig-no-such-topic")
    assert str(topic.value).startswith("AWS error NotFound while reading topic ")


def test_a_source_of_an_unknown_account_is_refused_before_any_aws_read(
    recorded: tuple[ToolRunner, list[tuple[str, str]]],
) -> None:
    runner, calls = recorded
    with pytest.raises(DiagnosticToolError, match="the source ARN's account 999999999999 is neither"):
        _ask(runner, f"arn:aws:sqs:{REGION}:999999999999:orders-queue")
    with pytest.raises(DiagnosticToolError, match="region 'us-east-1' contradicts the queue URL's region"):
        runner.run(
            "get_source_consumers",
            GetSourceConsumersArgs(
                source=f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders-queue", region="us-east-1"
            ),
        )
    assert set(calls) <= {("sts", "GetCallerIdentity")}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("orders-queue", SourceName("sqs", "orders-queue")),
        ("jobs.fifo", SourceName("sqs", "jobs.fifo")),
        (
            "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
            SourceName("sqs", "MyQueue", "us-east-2", "123456789012", "aws"),
        ),
        (
            "https://eu-west-1.queue.amazonaws.com/123456789012/testqueue",
            SourceName("sqs", "testqueue", "eu-west-1", "123456789012", "aws"),
        ),
        ("http://localhost:4566/123456789012/q_1", SourceName("sqs", "q_1", None, "123456789012", None)),
        (
            "arn:aws:sqs:ca-central-1:123456789012:orders-dlq",
            SourceName("sqs", "orders-dlq", "ca-central-1", "123456789012", "aws"),
        ),
        (
            "arn:aws:sns:ca-central-1:123456789012:order-events",
            SourceName("sns", "order-events", "ca-central-1", "123456789012", "aws"),
        ),
    ],
)
def test_sources_are_read_as_aws_names_them(text: str, parsed: SourceName) -> None:
    assert parse_source(text) == parsed
    assert GetSourceConsumersArgs(source=text).source == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a" * 81,
        "orders queue",
        "arn:aws:sqs:ca-central-1:123456789012:",
        "arn:aws:lambda:ca-central-1:123456789012:function:fn",
        "arn:aws:sqs:ca-central-1:1234:orders",
        "https://sqs.ca-central-1.amazonaws.com/orders",
        "https://sqs.ca-central-1.amazonaws.com/123456789012/orders?x=1",
        "ftp://sqs.ca-central-1.amazonaws.com/123456789012/orders",
    ],
)
def test_anything_else_is_refused_as_a_source(text: str) -> None:
    with pytest.raises(ValueError, match=r"must be an SQS queue's name|does not end with a valid SQS name"):
        parse_source(text)
    with pytest.raises(ValidationError):
        GetSourceConsumersArgs(source=text)


def test_the_server_publishes_the_source_tool_and_the_agent_is_not_offered_it() -> None:
    assert "get_source_consumers" in SERVED_TOOLS
    assert "get_source_consumers" not in TOOLS
    offered = {name for name, tool in SERVED_TOOLS.items() if tool.about_function and tool.offered_to_agent}
    assert set(TOOLS) == offered


class _Pages:
    """A paginator over fixed pages, whatever it is asked."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return self.pages


class _Fake:
    """A client whose paginators serve fixed pages and whose GetQueueAttributes names a queue by its URL."""

    def __init__(self, pages: dict[str, list[dict[str, Any]]]) -> None:
        self.pages = pages

    def get_paginator(self, operation: str) -> _Pages:
        return _Pages(self.pages[operation])

    def get_queue_url(self, QueueName: str) -> dict[str, str]:
        return {"QueueUrl": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{QueueName}"}

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        return {"Attributes": {"QueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QueueUrl.rsplit('/', 1)[1]}"}}


class _EndlessTrail:
    """CloudTrail that always has an older page of (other queues') deleted mappings."""

    def lookup_events(self, **_: Any) -> dict[str, Any]:
        return {"Events": [], "NextToken": "older"}


def test_the_bounds_on_functions_redrive_sources_and_deleted_mappings_are_stated_as_gaps() -> None:
    functions = [
        {"FunctionName": f"fn-{n}", "FunctionArn": function_arn(f"fn-{n}")} for n in range(MAX_FUNCTIONS + 5)
    ]
    sources = [f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/src-{n}" for n in range(MAX_SOURCE_QUEUES + 3)]
    lambda_ = _Fake(
        {
            "list_functions": [{"Functions": functions}],
            "list_function_event_invoke_configs": [{"FunctionEventInvokeConfigs": []}],
            "list_event_source_mappings": [{"EventSourceMappings": []}],
        }
    )
    sqs = _Fake({"list_dead_letter_source_queues": [{"queueUrls": sources}]})
    settings = ServerSettings()
    target = Target("", None, REGION, None, source="dlq")
    clients = TargetClients(target, lambda_, None, None, None, None, _EndlessTrail(), None, sqs, None)
    reads = Reads(ThreadPoolExecutor(4), settings.mcp_tool_deadline_seconds, REGION)
    answer = source_consumers(ToolContext(clients, reads, settings), GetSourceConsumersArgs(source="dlq"))
    assert (answer.consumers, answer.functions_scanned) == ([], MAX_FUNCTIONS)
    assert answer.gaps == [
        Gap(
            source=f"cloudtrail:LookupEvents of {DELETE_MAPPING_EVENT}",
            meaning=f"more than {MAX_TRAIL_PAGES * 50} mappings were deleted in the last "
            f"{DELETED_MAPPING_HOURS} hours: only the newest were compared with the queue",
        ),
        Gap(
            source=f"sqs:ListDeadLetterSourceQueues of queue https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/dlq",
            meaning=f"more than {MAX_SOURCE_QUEUES} queues use it as their dead-letter queue: only the first "
            f"{MAX_SOURCE_QUEUES} were followed to their functions",
        ),
        Gap(
            source=f"lambda:ListFunctions in {REGION}",
            meaning=f"the account has more than {MAX_FUNCTIONS} functions: only the first {MAX_FUNCTIONS} "
            "had their dead-letter queue and destinations compared with the source",
        ),
    ]
