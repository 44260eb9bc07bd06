"""The path to a real account: generated files current, both templates deployed into the sandbox's
CloudFormation and the resources inspected, and the bundles importing in a clean virtual environment."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import secrets
import string
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import httpx
import pytest
from starlette.testclient import TestClient

from chaos.aws_actions import on_each_action
from chaos.loopback import free_port, wait_healthy
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from console.app import create_app
from console.auth import sign_in
from console.permissions import DECISION_ACTIONS as CONSOLE_DECISION_ACTIONS
from console.permissions import QUEUE_ACTIONS as CONSOLE_QUEUE_ACTIONS
from console.permissions import TABLE_ACTIONS as CONSOLE_TABLE_ACTIONS
from console.settings import ConsoleSettings
from deploy import build, executor_stack, mcp_service, policies, template
from deploy.alarms import QUEUE_AGE_THRESHOLD_SECONDS
from deploy.bundles import EXECUTOR, MCP_SERVER, SUPERVISOR, WATCHDOG, Bundle
from deploy.console_service import CONSOLE_PORT, SESSION_SECRET
from deploy.fargate import LOAD_BALANCER_SOURCES
from deploy.mcp_parameters import HAS_CONSOLE, HAS_CONSOLE_DECISIONS
from deploy.package import build as build_bundle
from executor.permissions import PARAMETER_ACTIONS as EXECUTOR_PARAMETER_ACTIONS
from executor.permissions import QUEUE_ACTIONS as EXECUTOR_QUEUE_ACTIONS
from executor.permissions import TABLE_ACTIONS as EXECUTOR_TABLE_ACTIONS
from executor.permissions import TOPIC_ACTIONS as EXECUTOR_TOPIC_ACTIONS
from executor.permissions import WRITE_ACTIONS
from mcp_server.contract.history import FUNCTION_INDEX, HISTORY_INDEX
from mcp_server.oauth import oauth_mode
from mcp_server.permissions import required_iam_actions
from mcp_server.settings import ServerSettings
from supervisor.incident.resources import APPROVALS_TABLE, REMEDIATION_QUEUE
from supervisor.incident.store import INDEXES, RECENT_INDEX, STATUS_INDEX, IncidentStore
from supervisor.permissions import (
    NOTIFY_ACTIONS,
    PARAMETER_ACTIONS,
    PLAN_READ_ACTIONS,
    RECHECK_ACTIONS,
    RECHECK_POLL_ACTIONS,
    REMEDIATION_ACTIONS,
    TABLE_ACTIONS,
)
from tests.cfn_support import LOAD_BALANCER_NAME, PSEUDO, ResolvedStack
from watchdog.permissions import QUEUE_ACTIONS as WATCHDOG_QUEUE_ACTIONS
from watchdog.permissions import TABLE_ACTIONS as WATCHDOG_TABLE_ACTIONS
from watchdog.permissions import TOPIC_ACTIONS as WATCHDOG_TOPIC_ACTIONS

ROOT = Path(__file__).resolve().parents[1]
# moto 5.2.5's CloudFormation skips these types (it warns and creates nothing; a Ref to one is null),
# ignores the tables' PointInTimeRecoverySpecification, the function's DeadLetterConfig, the target
# group's attributes and the template's Rules, and keeps AWS::NoValue in a list as null (CloudFormation
# drops it): those are checked in the template document instead.
NOT_MODELLED_BY_MOTO = {"AWS::CloudWatch::Alarm", "AWS::SecretsManager::Secret"}


def _parameters(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"ParameterKey": key, "ParameterValue": value} for key, value in values.items()]


def _policy(iam: Any, role_arn: str) -> dict[str, Any]:
    """The role's one inline policy (moto's CloudFormation stores it as a Python repr, AWS as JSON)."""
    role = role_arn.rsplit("/", 1)[1]
    (name,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
    parsed: dict[str, Any] = ast.literal_eval(document) if isinstance(document, str) else document
    return parsed


def _granted(document: dict[str, Any]) -> dict[str, list[Any]]:
    """action -> resources, over every statement."""
    granted: dict[str, list[Any]] = {}
    for statement in document["Statement"]:
        for action in statement["Action"]:
            granted.setdefault(action, []).extend(statement["Resource"])
    return granted


# An alarm's definition: the PutMetricAlarm fields (also AWS::CloudWatch::Alarm's properties) that say what
# is watched and when it fires; its actions are compared apart (a Ref in the template, an ARN deployed).
DEFINITION = (
    "AlarmName",
    "AlarmDescription",
    "Namespace",
    "MetricName",
    "Dimensions",
    "Statistic",
    "Period",
    "EvaluationPeriods",
    "DatapointsToAlarm",
    "Threshold",
    "ComparisonOperator",
    "TreatMissingData",
    "Metrics",
)


def _definition(alarm: dict[str, Any]) -> dict[str, Any]:
    """``alarm``'s definition, from a template (its properties resolved) or from DescribeAlarms (which
    shows an absent ``Dimensions`` or ``Metrics`` as ``[]``, and a threshold as a float)."""
    return {
        key: float(alarm[key]) if key == "Threshold" else alarm[key]
        for key in DEFINITION
        if alarm.get(key) not in (None, [])
    }


def _metric_alarm(
    name: str, description: str, metric: tuple[str, str, str, str], statistic: str, threshold: float
) -> dict[str, Any]:
    """One metric, one dimension, over one minute: fires on the first minute at or above ``threshold``."""
    namespace, metric_name, dimension, value = metric
    return {
        "AlarmName": name,
        "AlarmDescription": description,
        "Namespace": namespace,
        "MetricName": metric_name,
        "Dimensions": [{"Name": dimension, "Value": value}],
        "Statistic": statistic,
        "Period": 60,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": threshold,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }


def _metric_stat(query_id: str, namespace: str, metric: str, dimension: str, value: str) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": dimension, "Value": value}],
            },
            "Period": 60,
            "Stat": "Sum",
        },
        "ReturnData": False,
    }


# The three alarms of the watched function (the sandbox's data-processor, the template's default), written
# out.
WORKLOAD_ALARMS = {
    "data-processor-errors": _metric_alarm(
        "data-processor-errors",
        "Errors of Lambda function data-processor",
        ("AWS/Lambda", "Errors", "FunctionName", "data-processor"),
        "Sum",
        1.0,
    ),
    "data-processor-throttles": _metric_alarm(
        "data-processor-throttles",
        "Throttles of Lambda function data-processor",
        ("AWS/Lambda", "Throttles", "FunctionName", "data-processor"),
        "Sum",
        1.0,
    ),
    "data-processor-log-silence": {  # invoked, yet nothing reaches the log group: metric math
        "AlarmName": "data-processor-log-silence",
        "AlarmDescription": (
            "Lambda function data-processor is invoked but /aws/lambda/data-processor receives no events"
        ),
        "Metrics": [
            _metric_stat("invocations", "AWS/Lambda", "Invocations", "FunctionName", "data-processor"),
            _metric_stat(
                "logevents", "AWS/Logs", "IncomingLogEvents", "LogGroupName", "/aws/lambda/data-processor"
            ),
            {
                "Id": "silent",
                "Label": "invoked without log events",
                "Expression": "IF(invocations > 0 AND FILL(logevents, 0) == 0, 1, 0)",
                "ReturnData": True,
            },
        ],
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    },
}


def test_the_generated_deploy_files_are_current() -> None:
    assert build.stale() == [], "run: python -m deploy.build"


@pytest.fixture(scope="module")
def account(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, boto3.Session]]:
    """A sandbox of its own, without the world's incident tables and queues (the stack creates them),
    with the Lambda zips in an artifact bucket."""
    with running_sandbox(tmp_path_factory.mktemp("deploy")) as sandbox:
        operator = sandbox.session(names.OPERATOR)
        for table in (names.STATE_TABLE, names.CONTEXT_TABLE, names.APPROVALS_TABLE):
            operator.client("dynamodb").delete_table(TableName=table)
        for queue in (sandbox.world.recheck_queue_url, sandbox.world.remediation_queue_url):
            operator.client("sqs").delete_queue(QueueUrl=queue)
        s3 = operator.client("s3")
        s3.create_bucket(
            Bucket="incident-artifacts", CreateBucketConfiguration={"LocationConstraint": sandbox.region}
        )
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as bundle:
            bundle.writestr("placeholder.py", "")
        for key in ("lambda/supervisor.zip", "lambda/watchdog.zip", "lambda/executor.zip"):
            s3.put_object(Bucket="incident-artifacts", Key=key, Body=archive.getvalue())
        yield sandbox, operator


def test_the_stack_creates_what_the_readme_describes(account: tuple[Sandbox, boto3.Session]) -> None:
    sandbox, operator = account
    document = template.build()
    cloudformation = operator.client("cloudformation")
    cloudformation.create_stack(
        StackName="incident-response",
        TemplateBody=(ROOT / "deploy" / "incident-response.template.json").read_text(),
        Parameters=_parameters(
            {"McpServerUrl": "https://mcp.example.com/sse", "ArtifactBucket": "incident-artifacts"}
        ),
        Capabilities=["CAPABILITY_IAM"],
    )
    (stack,) = cloudformation.describe_stacks(StackName="incident-response")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    created = {
        r["LogicalResourceId"]
        for r in cloudformation.list_stack_resources(StackName="incident-response")["StackResourceSummaries"]
    }
    modelled = {k for k, v in document["Resources"].items() if v["Type"] not in NOT_MODELLED_BY_MOTO}
    assert modelled <= created

    dynamodb = operator.client("dynamodb")
    state = dynamodb.describe_table(TableName=names.STATE_TABLE)["Table"]
    assert state["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    indexes = {
        index["IndexName"]: [(k["AttributeName"], k["KeyType"]) for k in index["KeySchema"]]
        for index in state["GlobalSecondaryIndexes"]
    }
    assert indexes == {
        STATUS_INDEX: [("status", "HASH"), ("updated_at", "RANGE")],
        FUNCTION_INDEX: [("function_name", "HASH"), ("updated_at", "RANGE")],
        RECENT_INDEX: [("kind", "HASH"), ("updated_at", "RANGE")],
        HISTORY_INDEX: [("history_key", "HASH"), ("observed_at", "RANGE")],
    }
    context = dynamodb.describe_table(TableName=names.CONTEXT_TABLE)["Table"]
    assert context["KeySchema"] == [{"AttributeName": "incident_id", "KeyType": "HASH"}]
    for logical in ("StateTable", "ContextTable"):
        properties = document["Resources"][logical]["Properties"]
        assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}

    lambda_ = operator.client("lambda")
    supervisor = lambda_.get_function_configuration(FunctionName=template.SUPERVISOR_FUNCTION)
    assert (supervisor["Runtime"], supervisor["Timeout"], supervisor["Handler"]) == (
        "python3.12",
        300,
        "supervisor.orchestrator.handler",
    )
    variables = supervisor["Environment"]["Variables"]
    assert variables["MCP_SERVER_URL"] == "https://mcp.example.com/sse"
    assert variables["SUPERVISOR_MODEL"] == "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert (variables["INCIDENT_STATE_TABLE"], variables["INCIDENT_CONTEXT_TABLE"]) == (
        names.STATE_TABLE,
        names.CONTEXT_TABLE,
    )
    assert document["Resources"]["SupervisorFunction"]["Properties"]["DeadLetterConfig"] == {
        "TargetArn": {"Fn::GetAtt": ["SupervisorDeadLetterQueue", "Arn"]}
    }
    watchdog = lambda_.get_function_configuration(FunctionName=template.WATCHDOG_FUNCTION)
    assert (watchdog["Runtime"], watchdog["Handler"]) == ("python3.12", "watchdog.handler.handler")

    sns = operator.client("sns")
    topic = f"arn:aws:sns:{sandbox.region}:{names.ACCOUNT_ID}:{names.TOPIC_NAME}"
    subscriptions = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert ("lambda", supervisor["FunctionArn"]) in {(s["Protocol"], s["Endpoint"]) for s in subscriptions}

    events = operator.client("events")
    assert events.describe_rule(Name=template.STALE_CHECK_RULE)["ScheduleExpression"] == "rate(5 minutes)"
    (target,) = events.list_targets_by_rule(Rule=template.STALE_CHECK_RULE)["Targets"]
    assert target["Arn"] == watchdog["FunctionArn"]

    # The template's alarms (under its default WorkloadFunctionName) and the sandbox world's are the ones
    # written out in WORKLOAD_ALARMS, on the alerts topic.
    stack = ResolvedStack({}, document)
    in_template = [
        stack.resolve(r["Properties"])
        for r in document["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and "Condition" not in r  # the event paths': below
    ]
    in_sandbox = operator.client("cloudwatch").describe_alarms(AlarmNamePrefix="data-processor-")[
        "MetricAlarms"
    ]
    for side in (in_template, in_sandbox):
        assert {alarm["AlarmName"]: _definition(alarm) for alarm in side} == WORKLOAD_ALARMS
        assert len(side) == len(WORKLOAD_ALARMS)
    assert [alarm["AlarmActions"] for alarm in in_template] == [["ref:AlertsTopic"]] * 3
    assert [alarm["AlarmActions"] for alarm in in_sandbox] == [[topic]] * 3

    iam = operator.client("iam")
    table_arn = state["TableArn"]
    granted = _granted(_policy(iam, supervisor["Role"]))
    assert set(granted) == {
        *TABLE_ACTIONS,
        *PARAMETER_ACTIONS,
        *NOTIFY_ACTIONS,
        *policies.BEDROCK_ACTIONS,
        *policies.LOG_ACTIONS,
        *policies.DEAD_LETTER_ACTIONS,
        *RECHECK_ACTIONS,
        *RECHECK_POLL_ACTIONS,
        *PLAN_READ_ACTIONS,
        *REMEDIATION_ACTIONS,
    }
    assert all(granted[action] == ["*"] for action in PLAN_READ_ACTIONS)  # reads, never a write
    assert set(granted["dynamodb:PutItem"]) == {table_arn, f"{table_arn}/index/*", context["TableArn"]}
    assert granted["ssm:GetParameter"] == [
        f"arn:aws:ssm:{sandbox.region}:{names.ACCOUNT_ID}:parameter{names.MCP_KEY_PARAMETER}"
    ]
    assert granted["bedrock:InvokeModel"] == [  # the default profile, and its model through it alone
        f"arn:aws:bedrock:{sandbox.region}:{names.ACCOUNT_ID}:inference-profile/"
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
    ]
    assert granted["logs:PutLogEvents"] == [
        f"arn:aws:logs:{sandbox.region}:{names.ACCOUNT_ID}:log-group:/aws/lambda/incident-supervisor:*"
    ]
    diagnoses_topic = f"arn:aws:sns:{sandbox.region}:{names.ACCOUNT_ID}:{names.DIAGNOSES_TOPIC_NAME}"
    assert granted["sns:Publish"] == [diagnoses_topic]  # that topic only, not the alerts
    assert variables["SUPERVISOR_DIAGNOSES_TOPIC_ARN"] == diagnoses_topic
    assert variables["SUPERVISOR_CONSOLE_URL"] == ""  # no console: the notifications say so
    watchdog_granted = _granted(_policy(iam, watchdog["Role"]))
    assert set(watchdog_granted) == {
        *WATCHDOG_TABLE_ACTIONS,
        *WATCHDOG_TOPIC_ACTIONS,
        *WATCHDOG_QUEUE_ACTIONS,
        *policies.LOG_ACTIONS,
    }
    assert set(watchdog_granted["dynamodb:UpdateItem"]) == {table_arn, f"{table_arn}/index/*"}
    assert set(watchdog_granted["dynamodb:GetItem"]) == {
        table_arn,
        f"{table_arn}/index/*",
        context["TableArn"],
    }
    assert watchdog_granted["sns:Publish"] == [diagnoses_topic]  # it notifies what it fails, there only
    watchdog_variables = watchdog["Environment"]["Variables"]
    assert watchdog_variables["WATCHDOG_DIAGNOSES_TOPIC_ARN"] == diagnoses_topic
    assert watchdog_variables["INCIDENT_CONTEXT_TABLE"] == names.CONTEXT_TABLE
    _check_recheck_queue(operator, supervisor, variables, watchdog_variables, granted, watchdog_granted)
    _check_executor(operator, sandbox.region, granted, watchdog_granted)


def _check_recheck_queue(
    operator: boto3.Session,
    supervisor: dict[str, Any],
    variables: dict[str, str],
    watchdog_variables: dict[str, str],
    granted: dict[str, list[str]],
    watchdog_granted: dict[str, list[str]],
) -> None:
    """The re-check queue: both functions name it, it outlasts the supervisor's runs before a message
    comes back, it hands a message delivered too often to its DLQ, and it invokes the supervisor, one
    message at a time, reporting batch item failures. Each role reaches this queue only."""
    sqs = operator.client("sqs")
    url = sqs.get_queue_url(QueueName=template.RECHECK_QUEUE)["QueueUrl"]
    assert variables["RECHECK_QUEUE_URL"] == watchdog_variables["RECHECK_QUEUE_URL"]  # the queue's Ref
    assert variables["RECHECK_QUEUE_URL"].endswith(f"/{names.ACCOUNT_ID}/{template.RECHECK_QUEUE}")
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert int(attributes["VisibilityTimeout"]) >= supervisor["Timeout"]
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"].endswith(f":{template.RECHECK_DEAD_LETTER_QUEUE}")
    assert int(redrive["maxReceiveCount"]) == template.RECHECK_MAX_RECEIVES
    queue_arn = attributes["QueueArn"]
    (mapping,) = operator.client("lambda").list_event_source_mappings(EventSourceArn=queue_arn)[
        "EventSourceMappings"
    ]
    assert mapping["FunctionArn"] == supervisor["FunctionArn"]
    document = template.build()["Resources"]
    assert document["RecheckQueue"]["Properties"]["SqsManagedSseEnabled"] is True
    properties = document["RecheckEventSourceMapping"]["Properties"]
    assert (properties["BatchSize"], properties["FunctionResponseTypes"]) == (1, ["ReportBatchItemFailures"])
    for action in RECHECK_POLL_ACTIONS:
        assert granted[action] == [queue_arn]
    dead_letters = queue_arn.replace(template.RECHECK_QUEUE, template.DEAD_LETTER_QUEUE)
    remediations = queue_arn.replace(template.RECHECK_QUEUE, REMEDIATION_QUEUE)
    assert sorted(granted["sqs:SendMessage"]) == sorted([dead_letters, queue_arn, remediations])
    assert sorted(watchdog_granted["sqs:SendMessage"]) == sorted([queue_arn, remediations])


def _check_executor(
    operator: boto3.Session,
    region: str,
    granted: dict[str, list[str]],
    watchdog_granted: dict[str, list[str]],
) -> None:
    """The executor: its function takes its queue's messages one at a time; its role alone holds the
    allowlisted writes, each on the watched function's own resources (or under a condition that scopes it
    to them); the supervisor's and the watchdog's hold none."""
    lambda_ = operator.client("lambda")
    executor = lambda_.get_function_configuration(FunctionName=executor_stack.EXECUTOR_FUNCTION)
    assert (executor["Handler"], executor["Timeout"]) == ("executor.handler.handler", 900)
    variables = executor["Environment"]["Variables"]
    assert variables["INCIDENT_APPROVALS_TABLE"] == names.APPROVALS_TABLE
    assert variables["EXECUTOR_AUTO_APPLY"] == ""  # nothing applies without a person by default
    document = _policy(operator.client("iam"), executor["Role"])
    executor_granted = _granted(document)
    assert set(executor_granted) == {
        *EXECUTOR_TABLE_ACTIONS,
        *EXECUTOR_PARAMETER_ACTIONS,
        *EXECUTOR_QUEUE_ACTIONS,
        *EXECUTOR_TOPIC_ACTIONS,
        *PLAN_READ_ACTIONS,
        *WRITE_ACTIONS,
        *policies.LOG_ACTIONS,
    }
    diagnoses_topic = f"arn:aws:sns:{region}:{names.ACCOUNT_ID}:{names.DIAGNOSES_TOPIC_NAME}"
    assert executor_granted["sns:Publish"] == [diagnoses_topic]  # each end's notice, there only
    assert variables["EXECUTOR_DIAGNOSES_TOPIC_ARN"] == diagnoses_topic
    function = f"arn:aws:lambda:{region}:{names.ACCOUNT_ID}:function:{names.FUNCTION_NAME}"
    assert executor_granted["lambda:UpdateAlias"] == [function, f"{function}:*"]
    assert executor_granted["iam:PutRolePolicy"] == [
        f"arn:aws:iam::{names.ACCOUNT_ID}:role/{names.ROLE_NAME}"
    ]
    for statement in document["Statement"]:
        if set(statement["Action"]) & set(WRITE_ACTIONS) and "*" in statement["Resource"]:
            assert statement["Condition"], statement  # a mapping, the network, a key: scoped by condition
    assert not set(WRITE_ACTIONS) & (set(granted) | set(watchdog_granted))
    sqs = operator.client("sqs")
    url = sqs.get_queue_url(QueueName=REMEDIATION_QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    (mapping,) = lambda_.list_event_source_mappings(EventSourceArn=queue_arn)["EventSourceMappings"]
    assert mapping["FunctionArn"] == executor["FunctionArn"]
    table = operator.client("dynamodb").describe_table(TableName=names.APPROVALS_TABLE)["Table"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["incident_id", "digest"]


# The sandbox world's event paths, as the template's parameters name them.
EVENT_PATH_PARAMETERS = {
    "SourceQueueName": names.ORDERS_QUEUE,
    "SourceDeadLetterQueueName": names.ORDERS_DLQ,
    "FunctionDeadLetterQueueName": names.ORDER_NOTIFIER_DLQ,
    "AsyncFunctionName": names.ORDER_NOTIFIER_FUNCTION,
    "CallerTopicName": names.ORDER_EVENTS_TOPIC,
    "UrlFunctionName": names.ORDER_INTAKE_FUNCTION,
    "RestApiName": names.ORDERS_REST_API,
    "RestApiFunctionName": names.ORDERS_FUNCTION,
    "StreamFunctionName": names.CLICK_FUNCTION,
}
EVENT_PATH_ALARMS = {  # logical id -> the alarm it creates for the sandbox world's event paths
    "SourceQueueAgeAlarm": "orders-queue-oldest-message-age",
    "SourceDeadLetterQueueDepthAlarm": "orders-queue-dlq-depth",
    "FunctionDeadLetterQueueDepthAlarm": "order-notifier-dlq-depth",
    "AsyncEventsDroppedAlarm": "order-notifier-asynceventsdropped",
    "DeadLetterErrorsAlarm": "order-notifier-deadlettererrors",
    "DestinationDeliveryFailuresAlarm": "order-notifier-destinationdeliveryfailures",
    "CallerTopicNotificationsFailedAlarm": "order-events-notifications-failed",
    "Url4xxCountAlarm": "order-intake-url4xxcount",
    "Url5xxCountAlarm": "order-intake-url5xxcount",
    "RestApi5xxErrorAlarm": "orders-rest-api-5xxerror",
    "StreamIteratorAgeAlarm": "click-aggregator-iteratorage",
}
# What each of those alarms must be, written out: CloudWatch's PutMetricAlarm fields (which are also the
# AWS::CloudWatch::Alarm properties), periods in seconds.
EVENT_PATH_DEFINITIONS = {
    "orders-queue-oldest-message-age": _metric_alarm(
        "orders-queue-oldest-message-age",
        "Messages wait in orders-queue: its oldest is 10 s old or more",
        ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "orders-queue"),
        "Maximum",
        10.0,  # the sandbox's QueueAgeThresholdSeconds
    ),
    "orders-queue-dlq-depth": _metric_alarm(
        "orders-queue-dlq-depth",
        "Messages arrived in the dead-letter queue orders-queue-dlq",
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "orders-queue-dlq"),
        "Maximum",
        1.0,
    ),
    "order-notifier-dlq-depth": _metric_alarm(
        "order-notifier-dlq-depth",
        "Messages arrived in the dead-letter queue order-notifier-dlq",
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "order-notifier-dlq"),
        "Maximum",
        1.0,
    ),
    "order-notifier-asynceventsdropped": _metric_alarm(
        "order-notifier-asynceventsdropped",
        "AsyncEventsDropped of Lambda function order-notifier",
        ("AWS/Lambda", "AsyncEventsDropped", "FunctionName", "order-notifier"),
        "Sum",
        1.0,
    ),
    "order-notifier-deadlettererrors": _metric_alarm(
        "order-notifier-deadlettererrors",
        "DeadLetterErrors of Lambda function order-notifier",
        ("AWS/Lambda", "DeadLetterErrors", "FunctionName", "order-notifier"),
        "Sum",
        1.0,
    ),
    "order-notifier-destinationdeliveryfailures": _metric_alarm(
        "order-notifier-destinationdeliveryfailures",
        "DestinationDeliveryFailures of Lambda function order-notifier",
        ("AWS/Lambda", "DestinationDeliveryFailures", "FunctionName", "order-notifier"),
        "Sum",
        1.0,
    ),
    "order-events-notifications-failed": _metric_alarm(
        "order-events-notifications-failed",
        "SNS topic order-events could not deliver notifications",
        ("AWS/SNS", "NumberOfNotificationsFailed", "TopicName", "order-events"),
        "Sum",
        1.0,
    ),
    **{
        f"order-intake-{metric.lower()}": _metric_alarm(
            f"order-intake-{metric.lower()}",
            f"{metric} of the function URL of Lambda function order-intake",
            ("AWS/Lambda", metric, "FunctionName", "order-intake"),
            "Sum",
            1.0,
        )
        for metric in ("Url4xxCount", "Url5xxCount")
    },
    "click-aggregator-iteratorage": _metric_alarm(
        "click-aggregator-iteratorage",
        "Records wait for click-aggregator: the newest batch's last record was 6000 ms old or more when sent",
        ("AWS/Lambda", "IteratorAge", "FunctionName", "click-aggregator"),
        "Maximum",
        6000.0,  # the sandbox's IteratorAgeThresholdMs
    ),
    "orders-rest-api-5xxerror": {
        "AlarmName": "orders-rest-api-5xxerror",
        "AlarmDescription": "5XXError of REST API orders-rest-api, in front of function orders-api",
        "Metrics": [
            {
                "Id": query_id,
                "ReturnData": False,
                "MetricStat": {
                    "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": [dimension]},
                    "Period": 60,
                    "Stat": "Sum",
                },
            }
            for query_id, namespace, metric, dimension in (
                ("errors", "AWS/ApiGateway", "5XXError", {"Name": "ApiName", "Value": "orders-rest-api"}),
                ("invocations", "AWS/Lambda", "Invocations", {"Name": "FunctionName", "Value": "orders-api"}),
            )
        ]
        + [
            {
                "Id": "answered5xx",
                "Label": "ApiGateway5XXError",
                "Expression": "errors + 0 * FILL(invocations, 0)",
                "ReturnData": True,
            }
        ],
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    },
}


def test_the_event_path_alarms_are_the_ones_written_out_in_the_template_and_the_sandbox(
    account: tuple[Sandbox, boto3.Session],
) -> None:
    sandbox, operator = account
    document = template.build()
    thresholds = {
        "QueueAgeThresholdSeconds": str(names.QUEUE_AGE_ALARM_SECONDS),
        "IteratorAgeThresholdMs": str(names.ITERATOR_AGE_ALARM_MS),
    }
    stack = ResolvedStack(EVENT_PATH_PARAMETERS | thresholds, document)
    conditional = {k: r for k, r in document["Resources"].items() if "Condition" in r}
    assert set(conditional) == set(EVENT_PATH_ALARMS)
    assert {r["Type"] for r in conditional.values()} == {"AWS::CloudWatch::Alarm"}
    assert [k for k, r in conditional.items() if not stack.condition(r["Condition"])] == []
    in_template = {k: stack.resolve(r["Properties"]) for k, r in conditional.items()}
    assert {k: alarm["AlarmName"] for k, alarm in in_template.items()} == EVENT_PATH_ALARMS
    assert {
        alarm["AlarmName"]: _definition(alarm) for alarm in in_template.values()
    } == EVENT_PATH_DEFINITIONS
    assert [alarm["AlarmActions"] for alarm in in_template.values()] == [["ref:AlertsTopic"]] * 11
    in_sandbox = operator.client("cloudwatch").describe_alarms(AlarmNames=list(EVENT_PATH_DEFINITIONS))[
        "MetricAlarms"
    ]
    assert {alarm["AlarmName"]: _definition(alarm) for alarm in in_sandbox} == EVENT_PATH_DEFINITIONS
    assert [alarm["AlarmActions"] for alarm in in_sandbox] == [[sandbox.world.topic_arn]] * 11
    assert document["Resources"]["SourceQueueAgeAlarm"]["Properties"]["Threshold"] == {
        "Ref": "QueueAgeThresholdSeconds"
    }


def test_without_event_path_parameters_there_is_no_event_path_alarm() -> None:
    document = template.build()
    stack = ResolvedStack({}, document)
    assert {name: stack.condition(name) for name in document["Conditions"]} == {
        "HasSourceQueue": False,
        "HasSourceDeadLetterQueue": False,
        "HasFunctionDeadLetterQueue": False,
        "HasAsyncFunction": False,
        "HasCallerTopic": False,
        "HasUrlFunction": False,
        "HasRestApi": False,
        "HasStreamFunction": False,
    }
    api_only = ResolvedStack({"RestApiName": names.ORDERS_REST_API}, document)
    assert not api_only.condition("HasRestApi")  # its alarm needs the function behind it too
    assert stack.values["QueueAgeThresholdSeconds"] == str(QUEUE_AGE_THRESHOLD_SECONDS) == "300"
    only_queue = ResolvedStack({"SourceQueueName": names.ORDERS_QUEUE}, document)
    assert [name for name in document["Conditions"] if only_queue.condition(name)] == ["HasSourceQueue"]
    age = only_queue.resolve(document["Resources"]["SourceQueueAgeAlarm"]["Properties"])
    assert (age["Threshold"], age["AlarmDescription"]) == (
        "300",
        f"Messages wait in {names.ORDERS_QUEUE}: its oldest is 300 s old or more",
    )


@pytest.mark.parametrize(
    ("parameter", "value", "allowed"),
    [
        ("SourceQueueName", "orders-queue", True),
        ("SourceQueueName", "orders_queue.fifo", True),
        ("SourceQueueName", "q" * 80, True),
        ("SourceQueueName", "q" * 81, False),
        ("SourceQueueName", "orders queue", False),
        ("SourceQueueName", "arn:aws:sqs:ca-central-1:123456789012:orders-queue", False),
        ("FunctionDeadLetterQueueName", "order-notifier-dlq", True),
        ("AsyncFunctionName", "order-notifier", True),
        ("RestApiName", "orders-rest-api", True),
        ("RestApiName", "Orders API v2.1", True),
        ("RestApiName", "a" * 129, False),
        ("RestApiFunctionName", "orders-api", True),
        ("RestApiFunctionName", "arn:aws:lambda:ca-central-1:123456789012:function:orders-api", False),
        ("AsyncFunctionName", "f" * 65, False),
        ("CallerTopicName", "order-events", True),
        ("CallerTopicName", "order events", False),
    ],
)
def test_the_event_path_parameters_patterns(parameter: str, value: str, allowed: bool) -> None:
    pattern = template.build()["Parameters"][parameter]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, "")) is True  # empty: no alarm
    assert bool(re.fullmatch(pattern, value)) is allowed


def test_the_mcp_service_stack_runs_the_image_behind_sticky_https(
    account: tuple[Sandbox, boto3.Session],
) -> None:
    sandbox, operator = account
    ec2 = operator.client("ec2")
    second_subnet = ec2.create_subnet(
        VpcId=sandbox.world.vpc_id, CidrBlock="10.20.2.0/24", AvailabilityZone=f"{sandbox.region}b"
    )["Subnet"]["SubnetId"]
    certificate = operator.client("acm").request_certificate(DomainName="mcp.example.com")["CertificateArn"]
    cloudformation = operator.client("cloudformation")
    cloudformation.create_stack(
        StackName="incident-mcp-server",
        TemplateBody=(ROOT / "deploy" / "mcp-server.template.json").read_text(),
        Parameters=_parameters(
            {
                "VpcId": sandbox.world.vpc_id,
                "LoadBalancerSubnetIds": f"{sandbox.world.subnet_id},{second_subnet}",
                "ServiceSubnetIds": sandbox.world.subnet_id,
                "ImageUri": f"{names.ACCOUNT_ID}.dkr.ecr.{sandbox.region}.amazonaws.com/mcp-server:1",
                "CertificateArn": certificate,
                "CrossAccountRoleArns": sandbox.world.read_only_role_arn,
                "ConsoleEnabled": "true",
            }
        ),
        Capabilities=["CAPABILITY_IAM"],
    )
    (stack,) = cloudformation.describe_stacks(StackName="incident-mcp-server")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert outputs["McpServerUrl"].startswith("https://")
    assert outputs["McpServerUrl"].endswith("/sse")

    task_role = _policy(operator.client("iam"), outputs["TaskRoleArn"])
    granted = _granted(task_role)
    assert sorted(granted) == required_iam_actions()  # docs/tools.md's list, exactly
    assert granted["sts:AssumeRole"] == [sandbox.world.read_only_role_arn]  # that role, no other

    resources = {
        r["LogicalResourceId"]: r["PhysicalResourceId"]
        for r in cloudformation.list_stack_resources(StackName="incident-mcp-server")[
            "StackResourceSummaries"
        ]
    }
    elb = operator.client("elbv2")
    stickiness = {  # moto ignores TargetGroupAttributes: read from the template document
        a["Key"]: a["Value"]
        for a in mcp_service.build()["Resources"]["TargetGroup"]["Properties"]["TargetGroupAttributes"]
    }
    assert (stickiness["stickiness.enabled"], stickiness["stickiness.type"]) == ("true", "lb_cookie")
    (group,) = elb.describe_target_groups(TargetGroupArns=[resources["TargetGroup"]])["TargetGroups"]
    assert (group["HealthCheckPath"], group["Port"]) == ("/healthz", mcp_service.PORT)
    (listener,) = elb.describe_listeners(ListenerArns=[resources["HttpsListener"]])["Listeners"]
    assert (listener["Protocol"], listener["Port"]) == ("HTTPS", 443)
    task = operator.client("ecs").describe_task_definition(taskDefinition=resources["TaskDefinition"])[
        "taskDefinition"
    ]
    (container,) = task["containerDefinitions"]
    assert container["portMappings"][0]["containerPort"] == mcp_service.PORT
    environment = {e["name"]: e["value"] for e in container["environment"] if e is not None}  # NoValue
    assert environment["MCP_API_KEY_SSM_PARAMETER"] == names.MCP_KEY_PARAMETER
    assert not [name for name in environment if name.startswith("MCP_OAUTH_")]  # no OAuth parameters

    # The console, beside it: the same image under its own identity, which reads the two tables only.
    assert outputs["ConsoleUrl"].endswith("/incidents")
    console_granted = _granted(_policy(operator.client("iam"), outputs["ConsoleTaskRoleArn"]))
    tables = f"arn:aws:dynamodb:{sandbox.region}:{names.ACCOUNT_ID}:table"
    assert console_granted == {
        action: [
            f"{tables}/{names.STATE_TABLE}",
            *(f"{tables}/{names.STATE_TABLE}/index/{index}" for index in INDEXES),
            f"{tables}/{names.CONTEXT_TABLE}",
        ]
        for action in CONSOLE_TABLE_ACTIONS
    }
    console_task = operator.client("ecs").describe_task_definition(
        taskDefinition=resources["ConsoleTaskDefinition"]
    )["taskDefinition"]
    (console_container,) = console_task["containerDefinitions"]
    assert console_container["image"] == container["image"]
    assert console_container["entryPoint"] == ["python", "-m", "console.cli"]
    assert console_container["portMappings"][0]["containerPort"] == CONSOLE_PORT
    console_environment = {e["name"]: e["value"] for e in console_container["environment"] if e is not None}
    assert (console_environment["CONSOLE_STATE_TABLE"], console_environment["CONSOLE_CONTEXT_TABLE"]) == (
        names.STATE_TABLE,
        names.CONTEXT_TABLE,
    )
    assert not [name for name in console_environment if "_OAUTH_" in name]
    assert [s["name"] for s in console_container["secrets"]] == ["MCP_API_KEY", "CONSOLE_SESSION_SECRET"]
    key_parameter = f"arn:aws:ssm:{sandbox.region}:{names.ACCOUNT_ID}:parameter{names.MCP_KEY_PARAMETER}"
    assert console_container["secrets"][0]["valueFrom"] == key_parameter
    execution_role = f"role/{resources['ConsoleExecutionRole']}"  # moto drops the executionRoleArn
    execution_granted = _granted(_policy(operator.client("iam"), execution_role))
    assert set(execution_granted) == {
        "ecr:GetAuthorizationToken",
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
        *policies.LOG_ACTIONS,
        "ssm:GetParameters",
        *policies.SECRET_INJECTION_ACTIONS,
    }
    assert execution_granted["ssm:GetParameters"] == [key_parameter]
    # moto creates no secret (a null ARN here): the secret and its one grant are checked in the document
    # by test_the_console_session_secret_is_one_generated_secret_injected_by_its_execution_role.
    (console_group,) = elb.describe_target_groups(TargetGroupArns=[resources["ConsoleTargetGroup"]])[
        "TargetGroups"
    ]
    assert (console_group["HealthCheckPath"], console_group["Port"]) == ("/healthz", CONSOLE_PORT)


def test_the_console_calls_exactly_what_its_role_grants(
    sandbox: Sandbox,
    diagnosed_incident: str,
    incidents: IncidentStore,
) -> None:
    """The console renders the list and a diagnosed incident's page as the sandbox's console identity
    (IAM enforced, console/permissions.py), and the actions it took are the template's grant, exactly."""
    (policy,) = mcp_service.build()["Resources"]["ConsoleTaskRole"]["Properties"]["Policies"]
    granted = policies.actions(policy["PolicyDocument"]["Statement"])
    assert granted == {"dynamodb:GetItem", "dynamodb:Query"}

    incident_id = diagnosed_incident
    session: boto3.Session = sandbox.session(names.CONSOLE)
    called: set[str] = set()
    on_each_action(session, called.add)
    settings = ConsoleSettings(
        state_table=incidents.state_table, context_table=str(incidents.context_table), api_key=None
    )
    client = TestClient(create_app(settings, session), base_url="http://127.0.0.1:8088")
    listing = client.get("/incidents")
    assert listing.status_code == 200
    assert incident_id in listing.text
    page = client.get(f"/incidents/{quote(incident_id, safe='')}")
    assert page.status_code == 200
    assert "permission_loss" in page.text
    assert called == granted


OAUTH = {
    "OAuthIssuer": "https://issuer.example.com/realms/ops",
    "OAuthAudience": "incident-mcp",
    "OAuthScopes": "incidents:read mcp",
    "ConsoleOAuthClientId": "incident-console",
}


def _console_settings(
    stack: ResolvedStack, monkeypatch: pytest.MonkeyPatch, secrets: dict[str, str]
) -> ConsoleSettings:
    """ConsoleSettings read from the console container's environment, as ECS gives it (``secrets``: the
    values of its ECS secrets), and nothing else."""
    _environment_only(monkeypatch, stack.environment("ConsoleTaskDefinition") | secrets)
    return ConsoleSettings()


def _environment_only(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]) -> None:
    for name in list(os.environ):
        if name.startswith(("MCP_", "CONSOLE_")):
            monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def _generated_secret(stack: ResolvedStack) -> str:
    """A value of the kind Secrets Manager generates for the session secret (letters and digits)."""
    spec = stack.document["Resources"][SESSION_SECRET]["Properties"]["GenerateSecretString"]
    assert spec["ExcludePunctuation"] is True
    return "".join(
        secrets.choice(string.ascii_letters + string.digits) for _ in range(spec["PasswordLength"])
    )


def test_the_console_session_secret_is_one_generated_secret_injected_by_its_execution_role() -> None:
    stack = ResolvedStack({"ConsoleEnabled": "true"})
    resources = stack.document["Resources"]
    secret = resources[SESSION_SECRET]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert secret["Condition"] == HAS_CONSOLE  # no console, no secret
    spec = secret["Properties"]["GenerateSecretString"]
    assert spec["PasswordLength"] >= 48
    assert spec["ExcludePunctuation"] is True
    assert "SecretStringTemplate" not in spec  # the whole string is the key, not a JSON document
    injected = {s["Name"]: s["ValueFrom"] for s in stack.container("ConsoleTaskDefinition")["Secrets"]}
    assert injected["CONSOLE_SESSION_SECRET"] == f"ref:{SESSION_SECRET}"  # Ref is the ARN
    (policy,) = stack.resolve(resources["ConsoleExecutionRole"]["Properties"]["Policies"])
    granted = _granted(policy["PolicyDocument"])
    assert granted["secretsmanager:GetSecretValue"] == [injected["CONSOLE_SESSION_SECRET"]]  # that one only
    assert [r for r, v in resources.items() if v["Type"] == "AWS::SecretsManager::Secret"] == [SESSION_SECRET]
    for role in ("ExecutionRole", "TaskRole", "ConsoleTaskRole"):  # no other identity reads it
        (other,) = stack.resolve(resources[role]["Properties"]["Policies"])
        assert "secretsmanager:GetSecretValue" not in _granted(other["PolicyDocument"]), role


@pytest.mark.parametrize("host_name", ["", "mcp.example.com"])
def test_oauth_parameters_put_both_services_in_oauth_mode_and_the_console_signs_in(
    host_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the OAuth parameters both containers get the issuer, audience and scopes; the server its
    public URL as the resource, the console its client id. The real settings classes read those
    environments: the MCP server's OAuth mode publishes the URL the stack outputs, and the console's
    sign-in is the OAuth one, sending browsers back to <ConsoleUrl base>/auth/callback."""
    stack = ResolvedStack(OAUTH | {"ConsoleEnabled": "true", "PublicHostName": host_name})
    assert stack.failed_rules() == []
    base = f"https://{host_name or LOAD_BALANCER_NAME}"
    assert stack.output("McpServerUrl") == f"{base}/sse"
    assert stack.output("McpStreamableHttpUrl") == f"{base}/mcp"
    assert stack.output("ConsoleUrl") == f"{base}/incidents"
    shared = {
        "MCP_OAUTH_ISSUER": OAUTH["OAuthIssuer"],
        "MCP_OAUTH_AUDIENCE": OAUTH["OAuthAudience"],
        "MCP_OAUTH_SCOPES": OAUTH["OAuthScopes"],
    }
    server = stack.environment("TaskDefinition")
    assert {k: v for k, v in server.items() if k.startswith("MCP_OAUTH_")} == shared | {
        "MCP_OAUTH_RESOURCE": base
    }
    console = stack.environment("ConsoleTaskDefinition")
    assert {k: v for k, v in console.items() if "_OAUTH_" in k} == shared | {
        "CONSOLE_OAUTH_CLIENT_ID": OAUTH["ConsoleOAuthClientId"]
    }
    assert console["CONSOLE_PUBLIC_URL"] == base

    _environment_only(monkeypatch, server)
    mode = oauth_mode(ServerSettings(), host="0.0.0.0", port=mcp_service.PORT)  # noqa: S104 - as the task
    assert mode is not None
    assert mode.resource == base

    settings = _console_settings(
        stack,
        monkeypatch,
        {"MCP_API_KEY": "k" * 32, "CONSOLE_SESSION_SECRET": _generated_secret(stack)},
    )
    setup = sign_in(settings)
    assert setup is not None
    assert setup.tokens is not None
    assert setup.issuer is not None
    assert setup.issuer.client_id == OAUTH["ConsoleOAuthClientId"]
    assert setup.issuer.redirect_uri == f"{base}/auth/callback"
    assert setup.issuer.scopes == ("incidents:read", "mcp")
    assert setup.keys == ("k" * 32,)
    assert settings.session_secret is not None  # the stack's, not a random one per task


def test_without_oauth_parameters_neither_service_gets_oauth_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = ResolvedStack({"ConsoleEnabled": "true"})
    assert stack.failed_rules() == []
    server = stack.environment("TaskDefinition")
    console = stack.environment("ConsoleTaskDefinition")
    assert [k for k in server if "_OAUTH_" in k] == []
    assert [k for k in console if "_OAUTH_" in k] == []
    settings = _console_settings(
        stack, monkeypatch, {"MCP_API_KEY": "k" * 32, "CONSOLE_SESSION_SECRET": _generated_secret(stack)}
    )
    setup = sign_in(settings)
    assert setup is not None
    assert (setup.tokens, setup.issuer, setup.keys) == (None, None, ("k" * 32,))  # the key sign-in only
    scopes_only = ResolvedStack(
        {k: v for k, v in OAUTH.items() if k != "OAuthScopes"} | {"ConsoleEnabled": "true"}
    )
    assert "MCP_OAUTH_SCOPES" not in scopes_only.environment("TaskDefinition")  # no empty variable


def test_console_approvers_give_the_console_its_one_write_and_nothing_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ConsoleApprovers (OAuth only) the console's role may write a decision to incident-approvals and
    ask the executor's queue, and its settings read who decides; without, neither exists."""
    people = "console:alice, console:bob"
    stack = ResolvedStack(OAUTH | {"ConsoleEnabled": "true", "ConsoleApprovers": people})
    assert stack.failed_rules() == []
    assert stack.condition(HAS_CONSOLE_DECISIONS)
    (statement_write, statement_ask) = stack.resolve(
        stack.document["Resources"]["ConsoleDecisionPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    )
    region, account_id = PSEUDO["AWS::Region"], PSEUDO["AWS::AccountId"]
    account = f"{region}:{account_id}"
    assert (statement_write["Action"], statement_write["Resource"]) == (
        list(CONSOLE_DECISION_ACTIONS),
        [f"arn:aws:dynamodb:{account}:table/{APPROVALS_TABLE}"],
    )
    assert (statement_ask["Action"], statement_ask["Resource"]) == (
        list(CONSOLE_QUEUE_ACTIONS),
        [f"arn:aws:sqs:{account}:{REMEDIATION_QUEUE}"],
    )
    settings = _console_settings(
        stack, monkeypatch, {"MCP_API_KEY": "k" * 32, "CONSOLE_SESSION_SECRET": _generated_secret(stack)}
    )
    assert settings.console_approvers() == frozenset({"console:alice", "console:bob"})
    assert settings.approvals_table == APPROVALS_TABLE
    assert settings.remediation_queue_url == (
        f"https://sqs.{region}.amazonaws.com/{account_id}/{REMEDIATION_QUEUE}"
    )
    for parameters in (
        OAUTH | {"ConsoleEnabled": "true"},
        {"ConsoleEnabled": "true", "ConsoleApprovers": people},
    ):
        without = ResolvedStack(parameters)
        assert not without.condition(HAS_CONSOLE_DECISIONS)
        console = without.environment("ConsoleTaskDefinition")
        assert [k for k in console if k.startswith(("REMEDIATION_", "INCIDENT_APPROVALS"))] == []


@pytest.mark.parametrize(
    ("parameters", "failures"),
    [
        ({}, []),
        ({"ConsoleEnabled": "true"}, []),
        ({"OAuthIssuer": OAUTH["OAuthIssuer"]}, ["OAuthIssuer requires OAuthAudience"]),
        ({"OAuthIssuer": OAUTH["OAuthIssuer"], "OAuthAudience": "aud"}, []),  # no console: no client
        (
            {"OAuthIssuer": OAUTH["OAuthIssuer"], "OAuthAudience": "aud", "ConsoleEnabled": "true"},
            ["OAuthIssuer with ConsoleEnabled=true requires ConsoleOAuthClientId"],
        ),
        ({"OAuthAudience": "aud"}, ["OAuthAudience only applies with OAuthIssuer"]),
        (
            {"ConsoleOAuthClientId": "c", "OAuthScopes": "s"},
            ["OAuthScopes only", "ConsoleOAuthClientId only"],
        ),
        (OAUTH | {"ConsoleEnabled": "true"}, []),
        ({"ConsoleApprovers": "console:alice"}, ["ConsoleApprovers only applies with OAuthIssuer"]),
    ],
)
def test_the_template_rules_refuse_incomplete_oauth_parameters(
    parameters: dict[str, str], failures: list[str]
) -> None:
    """CloudFormation evaluates the Rules before creating anything (moto ignores them: evaluated here)."""
    failed = ResolvedStack(parameters).failed_rules()
    assert len(failed) == len(failures), failed
    for message, expected in zip(failed, failures, strict=True):
        assert message.startswith(expected), (message, expected)


@pytest.mark.parametrize(
    ("parameter", "value", "allowed"),
    [
        ("OAuthIssuer", "", True),
        ("OAuthIssuer", "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC", True),
        ("OAuthIssuer", "http://issuer.example.com", False),
        ("OAuthIssuer", "https://issuer.example.com/ x", False),
        ("OAuthScopes", "incidents:read, mcp", True),
        ("OAuthScopes", 'a"b', False),
        ("ConsoleOAuthClientId", "7f3c2a", True),
        ("ConsoleOAuthClientId", "two words", False),
        ("ConsoleApprovers", "", True),
        ("ConsoleApprovers", "console:alice", True),
        ("ConsoleApprovers", "console:alice, console:8f1c-22", True),
        ("ConsoleApprovers", "alice", False),  # a sign-in is named console:<sub>
        ("ConsoleApprovers", "arn:aws:iam::123456789012:role/on-call", False),  # IAM: the other stack's
        ("ConsoleApprovers", "console:", False),
    ],
)
def test_the_oauth_parameters_patterns(parameter: str, value: str, allowed: bool) -> None:
    """What the template's AllowedPattern admits, as CloudFormation matches it (the whole value)."""
    pattern = mcp_service.build()["Parameters"][parameter]["AllowedPattern"]
    assert (re.fullmatch(pattern, value) is not None) is allowed


def _clean_python(tmp_path: Path) -> Path:
    """A virtual environment with nothing installed: only what the bundle brings can be imported."""
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    return tmp_path / "venv" / "bin" / "python"


def _bundle_env(bundle_dir: Path, tmp_path: Path, aws: dict[str, str]) -> dict[str, str]:
    """Nothing of ours: the bundle on PYTHONPATH (as /var/task is on Lambda) and the AWS settings."""
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(bundle_dir), "HOME": str(tmp_path)} | aws


def _run_from_bundle(
    python: Path, bundle_dir: Path, code: str, tmp_path: Path, aws: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    env = _bundle_env(bundle_dir, tmp_path, aws)
    return subprocess.run(
        [str(python), "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def _bundle(bundle: Bundle, tmp_path: Path) -> Path:
    """Build the bundle for this interpreter (the Lambda build differs only in its Python tag), zip it,
    and unzip it where Lambda would: the zip, not the staging directory, is what is tested."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    built = build_bundle(bundle, tmp_path / "build", python_version=version)
    assert built.zip_path is not None
    task = tmp_path / "var-task"
    with zipfile.ZipFile(built.zip_path) as archive:
        archive.extractall(task)
    return task


@pytest.mark.slow(40)
@pytest.mark.parametrize("bundle", [SUPERVISOR, WATCHDOG, EXECUTOR], ids=lambda b: b.name)
def test_a_lambda_bundle_runs_its_handler_in_a_clean_environment(
    bundle: Bundle, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The supervisor rejects a malformed record (no AWS call) and then imports its agent stack; the
    watchdog sweeps the session sandbox's incident-state as the watchdog identity; the executor rejects a
    message that is not a request and then imports what it verifies recovery with."""
    task = _bundle(bundle, tmp_path)
    module, function = bundle.entry_point.split(":")
    if bundle is SUPERVISOR:
        event = json.loads((ROOT / "tests" / "events" / "sns_message_not_json.json").read_text())
        then = "import supervisor.agent.run, langchain_aws, langgraph"
    elif bundle is EXECUTOR:
        event = {"Records": [{"messageId": "m-1", "eventSource": "aws:sqs", "body": "not a request"}]}
        then = "import supervisor.agent.mcp_client, supervisor.agent.providers"
    else:
        event = json.loads((ROOT / "tests" / "events" / "eventbridge_scheduled.json").read_text())
        then = ""
    code = f"import json\nfrom {module} import {function}\nresult = {function}({event!r}, None)\n{then}\n"
    code += "print(json.dumps(result))\n"
    aws = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.WATCHDOG}
    ran = _run_from_bundle(_clean_python(tmp_path), task, code, tmp_path, aws)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout.splitlines()[-1])
    if bundle is SUPERVISOR:
        assert [o["action"] for o in result["outcomes"]] == ["rejected"]
    elif bundle is EXECUTOR:
        assert result["batchItemFailures"] == []
        assert result["outcomes"][0]["outcome"].startswith("rejected: the body is not JSON")
    else:
        assert set(result) == {
            "cutoff",
            "examined",
            "failed",
            "finished",
            "lost",
            "notified",
            "notify_failed",
            "rechecks_resent",
            "recheck_failed",
            "provisional_made_final",
            "remediations_ended",
            "remediations_resent",
            "remediation_failed",
        }


def test_the_mcp_server_image_contents_serve_healthz(tmp_path: Path) -> None:
    """What the Dockerfile installs (deploy/mcp-server.requirements.txt plus mcp_server/) serves, in a
    clean environment. Building the image itself needs a Docker engine, which CI does not have."""
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    for instruction in ("-r mcp-server.requirements.txt", "USER 10001", "HEALTHCHECK"):
        assert instruction in dockerfile
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    built = build_bundle(MCP_SERVER, tmp_path / "build", python_version=version, zip_it=False)
    python = _clean_python(tmp_path)
    port = free_port()
    env = _bundle_env(built.directory, tmp_path, {"AWS_DEFAULT_REGION": names.DEFAULT_REGION})
    with (tmp_path / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [str(python), "-m", "mcp_server.cli", "--port", str(port), "--insecure-no-auth"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        console_port = free_port()
        console = subprocess.Popen(  # the same image, the console's entrypoint (the template's)
            [str(python), "-m", "console.cli", "--port", str(console_port)],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        for url, process in (
            (f"http://127.0.0.1:{port}", server),
            (f"http://127.0.0.1:{console_port}", console),
        ):
            wait_healthy(url, alive=lambda process=process: process.poll() is None)
            assert httpx.get(f"{url}/healthz", timeout=5).json() == {"status": "ok"}
    finally:
        for process in (server, console):
            process.terminate()
            process.wait(10)


def test_both_services_trust_only_the_load_balancer_s_forwarded_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks take connections only from the load balancer, an address in the VPC: its X-Forwarded-For
    names the client that sign-in throttling counts, and the real settings classes accept the value."""
    stack = ResolvedStack({"ConsoleEnabled": "true"})
    server, console = stack.environment("TaskDefinition"), stack.environment("ConsoleTaskDefinition")
    assert server["MCP_TRUSTED_PROXIES"] == console["CONSOLE_TRUSTED_PROXIES"] == LOAD_BALANCER_SOURCES
    _environment_only(monkeypatch, server)
    assert ServerSettings().trusted_proxies() == ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]


def test_every_load_balancer_idles_connections_for_less_than_the_servers_keep_alive() -> None:
    """A balancer that reuses an idle connection the server is closing at that moment gets a reset (502);
    AWS's advice for ALB targets: an application idle timeout above the balancer's."""
    stacks = [json.loads(path.read_text()) for path in sorted((ROOT / "deploy").glob("*.template.json"))]
    idle = [
        int(attribute["Value"])
        for stack in stacks
        for resource in stack["Resources"].values()
        if resource["Type"] == "AWS::ElasticLoadBalancingV2::LoadBalancer"
        for attribute in resource["Properties"].get("LoadBalancerAttributes", [])
        if attribute["Key"] == "idle_timeout.timeout_seconds"
    ]
    default_alb_idle = 60  # seconds, when a template leaves the attribute unset
    keep_alive = min(ServerSettings().mcp_keep_alive_timeout, ConsoleSettings().keep_alive_timeout)
    assert max([*idle, default_alb_idle]) < keep_alive
