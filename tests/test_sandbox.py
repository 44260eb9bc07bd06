"""The sandbox starts fast, provisions the whole world, and enforces IAM per identity."""

from __future__ import annotations

import configparser
import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import cli, names
from chaos.sandbox.events import sns_event, sqs_event
from chaos.sandbox.invoke import default_event
from chaos.sandbox.sandbox import Sandbox, SandboxError, start_sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.runtime import InvokeError, LocalLambdaRuntime
from mcp_server.contract.history import FUNCTION_INDEX, HISTORY_INDEX
from mcp_server.permissions import READ_OPERATIONS
from supervisor.incident.store import RECENT_INDEX, STATUS_INDEX
from tests.conftest import Undo
from tests.sns_shape import SNS_MEMBERS


def _error_code(call: Callable[[], Any]) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    code: str = caught.value.response["Error"]["Code"]
    return code


def test_writes_standard_aws_files_and_env(sandbox: Sandbox) -> None:
    config = configparser.ConfigParser()
    config.read(sandbox.env["AWS_CONFIG_FILE"])
    credentials = configparser.ConfigParser()
    credentials.read(sandbox.env["AWS_SHARED_CREDENTIALS_FILE"])
    for profile in names.PROFILES:
        assert config[f"profile {profile}"]["endpoint_url"] == sandbox.endpoint_url
        assert config[f"profile {profile}"]["region"] == names.DEFAULT_REGION
        assert credentials[profile]["aws_access_key_id"]
    env_file = (sandbox.state_dir / "env").read_text()
    for variable in (
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "MCP_API_KEY",
    ):
        assert f"export {variable}=" in env_file
    assert sandbox.world.mcp_api_key in env_file


def test_every_resource_exists(sandbox: Sandbox) -> None:
    operator = sandbox.session(names.OPERATOR)
    world = sandbox.world
    function = operator.client("lambda").get_function_configuration(FunctionName=names.FUNCTION_NAME)
    assert function["Role"] == world.role_arn
    assert function["VpcConfig"]["SecurityGroupIds"] == [world.security_group_id]
    assert function["VpcConfig"]["SubnetIds"] == [world.subnet_id]
    tags = operator.client("lambda").list_tags(Resource=world.function_arn)["Tags"]
    assert tags[names.CHAOS_TAG[0]] == names.CHAOS_TAG[1]

    iam = operator.client("iam")
    inline = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)[
        "PolicyDocument"
    ]
    assert {s["Action"] for s in inline["Statement"]} == {"s3:GetObject", "s3:ListBucket"}
    attached = iam.list_attached_role_policies(RoleName=names.ROLE_NAME)["AttachedPolicies"]
    assert world.logs_policy_arn in {p["PolicyArn"] for p in attached}

    groups = operator.client("logs").describe_log_groups(logGroupNamePrefix=names.LOG_GROUP)["logGroups"]
    assert [g["logGroupName"] for g in groups] == [names.LOG_GROUP]
    objects = operator.client("s3").list_objects_v2(Bucket=names.INPUT_BUCKET)["Contents"]
    assert sorted(o["Key"] for o in objects) == sorted(names.INPUT_KEYS)

    group = operator.client("ec2").describe_security_groups(GroupIds=[world.security_group_id])[
        "SecurityGroups"
    ][0]
    egress = group["IpPermissionsEgress"]
    assert [(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in egress] == [("tcp", 443, 443)]

    subscriptions = operator.client("sns").list_subscriptions_by_topic(TopicArn=world.topic_arn)[
        "Subscriptions"
    ]
    assert [s["Protocol"] for s in subscriptions] == ["sqs"]

    dynamodb = operator.client("dynamodb")
    state = dynamodb.describe_table(TableName=names.STATE_TABLE)["Table"]
    assert {
        index["IndexName"]: [k["AttributeName"] for k in index["KeySchema"]]
        for index in state["GlobalSecondaryIndexes"]
    } == {
        STATUS_INDEX: ["status", "updated_at"],
        FUNCTION_INDEX: ["function_name", "updated_at"],
        RECENT_INDEX: ["kind", "updated_at"],
        HISTORY_INDEX: ["history_key", "observed_at"],
    }
    assert dynamodb.describe_table(TableName=names.CONTEXT_TABLE)["Table"]["TableStatus"] == "ACTIVE"

    parameter = operator.client("ssm").get_parameter(Name=names.MCP_KEY_PARAMETER, WithDecryption=True)[
        "Parameter"
    ]
    assert parameter["Type"] == "SecureString"
    assert parameter["Value"] == world.mcp_api_key


def _s3_prefix_list(sandbox: Sandbox) -> str:
    lists = sandbox.session(names.OPERATOR).client("ec2").describe_managed_prefix_lists()["PrefixLists"]
    return str(next(p["PrefixListId"] for p in lists if p["PrefixListName"].endswith(".s3")))


def _read_calls(sandbox: Sandbox, key: str, http_api: str) -> dict[tuple[str, str], dict[str, Any]]:
    """One real request for every operation the MCP server is allowed (``key``: a KMS key's ARN,
    ``http_api``: an HTTP API's id)."""
    world = sandbox.world
    return {
        ("apigatewayv2", "GetApis"): {},
        ("apigatewayv2", "GetIntegrations"): {"ApiId": http_api},
        ("apigatewayv2", "GetRoutes"): {"ApiId": http_api},
        ("apigatewayv2", "GetStages"): {"ApiId": http_api},
        ("kms", "DescribeKey"): {"KeyId": key},
        ("kms", "ListGrants"): {"KeyId": key},
        ("apigateway", "GetRestApis"): {},
        ("apigateway", "GetResources"): {"restApiId": world.orders_rest_api_id},
        ("apigateway", "GetStages"): {"restApiId": world.orders_rest_api_id},
        ("logs", "FilterLogEvents"): {"logGroupName": names.LOG_GROUP, "limit": 1},
        ("iam", "GetRole"): {"RoleName": names.ROLE_NAME},
        ("iam", "ListRolePolicies"): {"RoleName": names.ROLE_NAME},
        ("iam", "GetRolePolicy"): {"RoleName": names.ROLE_NAME, "PolicyName": names.INLINE_POLICY_NAME},
        ("iam", "ListAttachedRolePolicies"): {"RoleName": names.ROLE_NAME},
        ("iam", "GetPolicy"): {"PolicyArn": world.logs_policy_arn},
        ("iam", "GetPolicyVersion"): {"PolicyArn": world.logs_policy_arn, "VersionId": "v1"},
        ("lambda", "GetFunctionConfiguration"): {"FunctionName": names.FUNCTION_NAME},
        ("lambda", "GetFunctionConcurrency"): {"FunctionName": names.FUNCTION_NAME},
        ("ec2", "DescribeSecurityGroups"): {"GroupIds": [world.security_group_id]},
        ("ec2", "DescribeSubnets"): {"SubnetIds": [world.subnet_id]},
        ("ec2", "DescribeNetworkAcls"): {"Filters": [{"Name": "vpc-id", "Values": [world.vpc_id]}]},
        ("ssm", "GetParameter"): {"Name": names.MCP_KEY_PARAMETER, "WithDecryption": True},
        ("cloudtrail", "LookupEvents"): {"MaxResults": 1},
        ("lambda", "GetFunctionEventInvokeConfig"): {"FunctionName": names.FUNCTION_NAME},
        ("lambda", "GetAlias"): {"FunctionName": names.ORDERS_FUNCTION, "Name": names.ORDERS_ALIAS},
        ("lambda", "ListVersionsByFunction"): {"FunctionName": names.FUNCTION_NAME},
        ("lambda", "ListAliases"): {"FunctionName": names.FUNCTION_NAME},
        ("lambda", "ListEventSourceMappings"): {"FunctionName": names.FUNCTION_NAME},
        ("lambda", "GetPolicy"): {"FunctionName": names.ORDER_NOTIFIER_FUNCTION},
        ("lambda", "GetFunctionUrlConfig"): {"FunctionName": names.ORDER_INTAKE_FUNCTION},
        ("sqs", "GetQueueUrl"): {"QueueName": names.ORDERS_QUEUE},
        ("sqs", "GetQueueAttributes"): {"QueueUrl": world.orders_queue_url, "AttributeNames": ["All"]},
        ("sns", "ListSubscriptions"): {},
        ("sns", "ListSubscriptionsByTopic"): {"TopicArn": world.order_events_topic_arn},
        ("sqs", "ListDeadLetterSourceQueues"): {"QueueUrl": world.orders_dlq_url},
        ("lambda", "ListFunctions"): {},
        ("lambda", "ListFunctionEventInvokeConfigs"): {"FunctionName": names.ORDER_NOTIFIER_FUNCTION},
        ("ec2", "DescribeRouteTables"): {"Filters": [{"Name": "vpc-id", "Values": [world.vpc_id]}]},
        ("ec2", "DescribeNatGateways"): {"NatGatewayIds": [world.nat_gateway_id]},
        ("ec2", "DescribeVpcEndpoints"): {},
        ("ec2", "DescribeManagedPrefixLists"): {},
        ("ec2", "GetManagedPrefixListEntries"): {"PrefixListId": _s3_prefix_list(sandbox)},
        ("cloudwatch", "GetMetricData"): {
            "MetricDataQueries": [
                {
                    "Id": "errors",
                    "MetricStat": {
                        "Metric": {"Namespace": "AWS/Lambda", "MetricName": "Errors"},
                        "Period": 60,
                        "Stat": "Sum",
                    },
                }
            ],
            "StartTime": datetime.now(UTC) - timedelta(minutes=5),
            "EndTime": datetime.now(UTC),
        },
        ("dynamodb", "Query"): {
            "TableName": names.STATE_TABLE,
            "IndexName": HISTORY_INDEX,
            "KeyConditionExpression": "history_key = :key",
            "ExpressionAttributeValues": {":key": {"S": f"{names.FUNCTION_NAME}#timeout"}},
        },
    }


def test_mcp_server_identity_can_make_every_read_it_needs(sandbox: Sandbox, undo: Undo) -> None:
    session = sandbox.session(names.MCP_SERVER)
    kms = sandbox.session(names.OPERATOR).client("kms")
    key = kms.create_key(Description="read by the MCP server")["KeyMetadata"]["Arn"]
    undo(lambda: kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7))
    v2 = sandbox.session(names.OPERATOR).client("apigatewayv2")
    api = v2.create_api(Name="read-by-the-mcp-server", ProtocolType="HTTP")["ApiId"]
    undo(lambda: v2.delete_api(ApiId=api))
    calls = _read_calls(sandbox, key, api)
    assert set(READ_OPERATIONS) <= set(calls)
    for (service, operation), params in calls.items():
        client = session.client(service)
        method_name = {api: method for method, api in client.meta.method_to_api_mapping.items()}[operation]
        call = getattr(client, method_name)
        if operation == "GetFunctionEventInvokeConfig":  # authorized; data-processor has no destinations
            with pytest.raises(ClientError, match="ResourceNotFoundException"):
                call(**params)
            continue
        response = call(**params)
        assert response["ResponseMetadata"]["HTTPStatusCode"] in (200, 201), (service, operation)  # moto: 201


@pytest.mark.parametrize(
    ("service", "call", "expected"),
    [
        (
            "lambda",
            lambda c: c.put_function_concurrency(
                FunctionName=names.FUNCTION_NAME, ReservedConcurrentExecutions=0
            ),
            "AccessDeniedException",
        ),
        (
            "iam",
            lambda c: c.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME),
            "AccessDenied",
        ),
        (
            "logs",
            lambda c: c.put_retention_policy(logGroupName=names.LOG_GROUP, retentionInDays=1),
            "AccessDeniedException",
        ),
        ("ec2", lambda c: c.revoke_security_group_egress(GroupId="sg-0", IpPermissions=[]), "AccessDenied"),
        ("s3", lambda c: c.list_buckets(), "AccessDenied"),
        ("dynamodb", lambda c: c.list_tables(), "AccessDeniedException"),
    ],
)
def test_mcp_server_identity_is_denied_writes_and_other_services(
    sandbox: Sandbox, service: str, call: Callable[[Any], Any], expected: str
) -> None:
    client = sandbox.session(names.MCP_SERVER).client(service)
    assert _error_code(lambda: call(client)) == expected


def test_supervisor_identity_reaches_its_tables_and_key_and_nothing_else(sandbox: Sandbox) -> None:
    session = sandbox.session(names.SUPERVISOR)
    dynamodb = session.client("dynamodb")
    dynamodb.put_item(TableName=names.CONTEXT_TABLE, Item={"incident_id": {"S": "probe"}})
    assert dynamodb.get_item(TableName=names.CONTEXT_TABLE, Key={"incident_id": {"S": "probe"}})["Item"]
    key = session.client("ssm").get_parameter(Name=names.MCP_KEY_PARAMETER, WithDecryption=True)["Parameter"][
        "Value"
    ]
    assert key == sandbox.world.mcp_api_key
    assert (
        _error_code(lambda: dynamodb.delete_table(TableName=names.CONTEXT_TABLE)) == "AccessDeniedException"
    )
    assert _error_code(lambda: session.client("lambda").list_functions()) == "AccessDeniedException"
    assert _error_code(lambda: session.client("s3").list_buckets()) == "AccessDenied"
    sandbox.session(names.OPERATOR).client("dynamodb").delete_item(
        TableName=names.CONTEXT_TABLE, Key={"incident_id": {"S": "probe"}}
    )


def test_unknown_credentials_are_rejected(sandbox: Sandbox) -> None:
    stranger = boto3.client(
        "sts",
        endpoint_url=sandbox.endpoint_url,
        region_name=names.DEFAULT_REGION,
        aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )
    assert _error_code(lambda: stranger.get_caller_identity()) == "InvalidClientTokenId"


def test_refuses_a_second_sandbox_in_the_same_state_dir(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError, match="already running"):
        start_sandbox(sandbox.state_dir)


def test_cli_up_detached_status_and_down(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "chaos.sandbox.cli"]
    state_dir = str(tmp_path / "state")
    up = subprocess.run(
        [*cli, "up", "--detach", "--state-dir", state_dir], capture_output=True, text=True, timeout=60
    )
    assert up.returncode == 0, up.stderr
    assert "source " in up.stdout
    assert "AWS_PROFILE=operator" in up.stdout
    state = json.loads((tmp_path / "state" / "sandbox.json").read_text())
    status = subprocess.run(
        [*cli, "status", "--state-dir", state_dir], capture_output=True, text=True, timeout=30
    )
    assert state["endpoint_url"] in status.stdout
    down = subprocess.run(
        [*cli, "down", "--state-dir", state_dir], capture_output=True, text=True, timeout=30
    )
    assert "stopped" in down.stdout
    again = subprocess.run(
        [*cli, "status", "--state-dir", state_dir], capture_output=True, text=True, timeout=30
    )
    assert again.returncode == 1


def test_every_function_has_its_role_log_group_and_three_alarms(sandbox: Sandbox) -> None:
    operator = sandbox.session(names.OPERATOR)
    lambda_, cloudwatch = operator.client("lambda"), operator.client("cloudwatch")
    roles = set()
    for function in names.FUNCTIONS:
        config = lambda_.get_function_configuration(FunctionName=function)
        roles.add(config["Role"])
        assert config["Role"].endswith(f":role/{function}-role")
        assert lambda_.list_tags(Resource=config["FunctionArn"])["Tags"][names.CHAOS_TAG[0]] == "true"
        alarms = cloudwatch.describe_alarms(AlarmNamePrefix=f"{function}-")["MetricAlarms"]
        asynchronous = (  # the asynchronously invoked function's alarms share its prefix
            [
                f"{function}-asynceventsdropped",
                f"{function}-deadlettererrors",
                f"{function}-destinationdeliveryfailures",
            ]
            if function == names.ORDER_NOTIFIER_FUNCTION
            else []
        )
        dead_letter = [f"{function}-dlq-depth"] if function == names.ORDER_NOTIFIER_FUNCTION else []
        url = (  # the functions called through their URLs: requests answered 4XX or 5XX
            [f"{function}-url4xxcount", f"{function}-url5xxcount"]
            if function in (names.ORDER_INTAKE_FUNCTION, names.REPORT_FUNCTION)
            else []
        )
        stream = [f"{function}-iteratorage"] if function == names.CLICK_FUNCTION else []
        assert sorted(a["AlarmName"] for a in alarms) == sorted(
            [
                *stream,
                f"{function}-errors",
                f"{function}-log-silence",
                f"{function}-throttles",
                *asynchronous,
                *dead_letter,
                *url,
            ]
        )
        assert all(a["AlarmActions"] == [sandbox.world.topic_arn] for a in alarms)
        group = f"/aws/lambda/{function}"
        logs = operator.client("logs").describe_log_groups(logGroupNamePrefix=group)["logGroups"]
        assert [g["logGroupName"] for g in logs] == [group]
    assert len(roles) == len(names.FUNCTIONS)
    orders = lambda_.get_function_configuration(FunctionName=names.ORDERS_FUNCTION)
    assert not (orders.get("VpcConfig") or {}).get("SubnetIds")  # outside any VPC
    alias = lambda_.get_alias(FunctionName=names.ORDERS_FUNCTION, Name=names.ORDERS_ALIAS)
    assert alias["FunctionVersion"] == "1"
    route_table = operator.client("ec2").describe_route_tables(RouteTableIds=[sandbox.world.route_table_id])
    routes = route_table["RouteTables"][0]["Routes"]
    assert {r.get("NatGatewayId") for r in routes if r.get("DestinationCidrBlock") == "0.0.0.0/0"} == {
        sandbox.world.nat_gateway_id
    }


def test_the_mcp_server_identity_reads_the_second_account_through_its_read_only_role(
    sandbox: Sandbox,
) -> None:
    sts = sandbox.session(names.MCP_SERVER).client("sts")
    credentials = sts.assume_role(
        RoleArn=sandbox.world.read_only_role_arn,
        RoleSessionName="diagnostics",
        ExternalId=names.READ_ONLY_EXTERNAL_ID,
    )["Credentials"]
    other = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=sandbox.region,
    ).client("lambda", endpoint_url=sandbox.endpoint_url)

    config = other.get_function_configuration(FunctionName=names.ORDERS_FUNCTION)

    assert config["FunctionArn"] == sandbox.world.second_function_arn
    assert f":{names.SECOND_ACCOUNT_ID}:" in config["FunctionArn"]
    with pytest.raises(ClientError):  # the copy is alone there
        other.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    assert _error_code(lambda: other.delete_function(FunctionName=names.ORDERS_FUNCTION)) in {
        "AccessDeniedException",
        "AccessDenied",
    }


def test_invoke_command_shows_each_invocation_and_rejects_bad_input(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    state = ["--state-dir", str(sandbox.state_dir)]

    assert cli.main(["invoke", names.FUNCTION_NAME, "--burst", "2", *state]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if " succeeded " in line]
    assert len(lines) == 2
    assert all("MB used" in line for line in lines)
    assert '"orders": 25' in out

    assert cli.main(["invoke", names.FUNCTION_NAME, "--key", "incoming/missing.json", *state]) == 1
    assert "NoSuchKey" in capsys.readouterr().out
    assert cli.main(["invoke", names.FUNCTION_NAME, "--burst", "0", *state]) == 2
    assert "--burst must be between 1 and 100" in capsys.readouterr().err
    assert cli.main(["invoke", names.FUNCTION_NAME, "--event", "{not json", *state]) == 2
    assert "--event is not valid JSON" in capsys.readouterr().err
    assert cli.main(["invoke", "no-such-function", *state]) == 1
    assert "ResourceNotFoundException" in capsys.readouterr().err


# --- the event-driven pipeline -------------------------------------------------------------------------


def test_the_event_pipeline_s_queues_mapping_policy_and_subscription(sandbox: Sandbox) -> None:
    operator, world = sandbox.session(names.OPERATOR), sandbox.world
    sqs, lambda_, iam = operator.client("sqs"), operator.client("lambda"), operator.client("iam")
    region, account = sandbox.region, names.ACCOUNT_ID
    queue = sqs.get_queue_attributes(QueueUrl=world.orders_queue_url, AttributeNames=["All"])["Attributes"]
    assert queue["QueueArn"] == world.orders_queue_arn == f"arn:aws:sqs:{region}:{account}:orders-queue"
    assert queue["VisibilityTimeout"] == str(names.ORDERS_QUEUE_VISIBILITY_SECONDS)
    assert json.loads(queue["RedrivePolicy"]) == {
        "deadLetterTargetArn": world.orders_dlq_arn,
        "maxReceiveCount": 2,
    }
    assert world.orders_dlq_arn == f"arn:aws:sqs:{region}:{account}:orders-queue-dlq"
    assert world.order_notifier_dlq_arn == f"arn:aws:sqs:{region}:{account}:order-notifier-dlq"
    for url, arn in (
        (world.orders_dlq_url, world.orders_dlq_arn),
        (world.order_notifier_dlq_url, world.order_notifier_dlq_arn),
    ):
        assert (
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            == arn
        )

    worker = lambda_.get_function_configuration(FunctionName=names.ORDER_WORKER_FUNCTION)
    assert (worker["Runtime"], worker["Timeout"], worker["Handler"]) == (
        "python3.12",
        2,
        "order_worker.handler",
    )
    (mapping,) = lambda_.list_event_source_mappings(FunctionName=names.ORDER_WORKER_FUNCTION)[
        "EventSourceMappings"
    ]
    assert {k: mapping[k] for k in ("UUID", "EventSourceArn", "FunctionArn", "State", "BatchSize")} == {
        "UUID": world.orders_mapping_uuid,
        "EventSourceArn": world.orders_queue_arn,
        "FunctionArn": worker["FunctionArn"],
        "State": "Enabled",
        "BatchSize": 5,
    }
    assert mapping["MaximumBatchingWindowInSeconds"] == 0
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert iam.get_role_policy(RoleName=names.ORDER_WORKER_ROLE, PolicyName="order-worker-access")[
        "PolicyDocument"
    ]["Statement"] == [
        {
            "Sid": "ConsumeOrdersQueue",
            "Effect": "Allow",
            "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
            "Resource": world.orders_queue_arn,
        },
        {
            "Sid": "PutOrders",
            "Effect": "Allow",
            "Action": "dynamodb:PutItem",
            "Resource": f"arn:aws:dynamodb:{region}:{account}:table/orders",
        },
    ]

    notifier = lambda_.get_function_configuration(FunctionName=names.ORDER_NOTIFIER_FUNCTION)
    assert notifier["DeadLetterConfig"] == {"TargetArn": world.order_notifier_dlq_arn}
    invoke_config = lambda_.get_function_event_invoke_config(FunctionName=names.ORDER_NOTIFIER_FUNCTION)
    assert (invoke_config["MaximumRetryAttempts"], invoke_config["MaximumEventAgeInSeconds"]) == (0, 3600)
    statements = json.loads(lambda_.get_policy(FunctionName=names.ORDER_NOTIFIER_FUNCTION)["Policy"])[
        "Statement"
    ]
    assert statements == [
        {
            "Sid": "order-events-invoke",
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "lambda:InvokeFunction",
            "Resource": notifier["FunctionArn"],
            "Condition": {"ArnLike": {"AWS:SourceArn": world.order_events_topic_arn}},
        }
    ]
    assert iam.get_role_policy(RoleName=names.ORDER_NOTIFIER_ROLE, PolicyName="order-notifier-access")[
        "PolicyDocument"
    ]["Statement"] == [
        {
            "Sid": "SendFailedEvents",
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": world.order_notifier_dlq_arn,
        }
    ]
    subscriptions = operator.client("sns").list_subscriptions_by_topic(TopicArn=world.order_events_topic_arn)
    assert [(s["SubscriptionArn"], s["Protocol"], s["Endpoint"]) for s in subscriptions["Subscriptions"]] == [
        (world.order_events_subscription_arn, "lambda", notifier["FunctionArn"])
    ]
    assert world.order_events_topic_arn == f"arn:aws:sns:{region}:{account}:order-events"
    assert world.function_arns[names.ORDER_WORKER_FUNCTION] == worker["FunctionArn"]
    assert world.function_arns[names.ORDER_NOTIFIER_FUNCTION] == notifier["FunctionArn"]


def _threshold_alarm(
    name: str, namespace: str, metric: str, dimension: tuple[str, str], statistic: str, threshold: float
) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "Namespace": namespace,
        "MetricName": metric,
        "Dimensions": [{"Name": dimension[0], "Value": dimension[1]}],
        "Statistic": statistic,
        "Period": 60,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": threshold,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }


def test_the_event_pipeline_s_alarms(sandbox: Sandbox) -> None:
    queue_age = ("AWS/SQS", "ApproximateAgeOfOldestMessage")
    depth = ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    notifier = ("FunctionName", names.ORDER_NOTIFIER_FUNCTION)
    expected = [
        _threshold_alarm(
            "orders-queue-oldest-message-age", *queue_age, ("QueueName", "orders-queue"), "Maximum", 10
        ),
        _threshold_alarm("orders-queue-dlq-depth", *depth, ("QueueName", "orders-queue-dlq"), "Maximum", 1),
        _threshold_alarm(
            "order-notifier-dlq-depth", *depth, ("QueueName", "order-notifier-dlq"), "Maximum", 1
        ),
        _threshold_alarm(
            "order-notifier-asynceventsdropped", "AWS/Lambda", "AsyncEventsDropped", notifier, "Sum", 1
        ),
        _threshold_alarm(
            "order-notifier-deadlettererrors", "AWS/Lambda", "DeadLetterErrors", notifier, "Sum", 1
        ),
        _threshold_alarm(
            "order-notifier-destinationdeliveryfailures",
            "AWS/Lambda",
            "DestinationDeliveryFailures",
            notifier,
            "Sum",
            1,
        ),
        _threshold_alarm(
            "order-events-notifications-failed",
            "AWS/SNS",
            "NumberOfNotificationsFailed",
            ("TopicName", "order-events"),
            "Sum",
            1,
        ),
    ]
    cloudwatch = sandbox.session(names.OPERATOR).client("cloudwatch")
    alarms = cloudwatch.describe_alarms(AlarmNames=[a["AlarmName"] for a in expected])["MetricAlarms"]
    found = {a["AlarmName"]: a for a in alarms}
    assert sorted(found) == sorted(a["AlarmName"] for a in expected)
    for alarm in expected:
        assert {key: found[alarm["AlarmName"]].get(key) for key in alarm} == alarm
        assert found[alarm["AlarmName"]]["AlarmActions"] == [sandbox.world.topic_arn]


def test_order_worker_stores_a_good_record_and_reports_only_the_poison_one(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    dynamodb = sandbox.session(names.OPERATOR).client("dynamodb")
    order_id = f"test-{uuid.uuid4().hex[:8]}"
    undo(lambda: dynamodb.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": order_id}}))
    event = sqs_event(
        sandbox.world.orders_queue_arn,
        names.order_message(order_id, amount=12.5),
        json.dumps({"order_id": "0001-001", "amount": "twelve"}),  # a poison record
    )
    good, poison = event["Records"]

    invocation = runtime.invoke(names.ORDER_WORKER_FUNCTION, event)

    assert invocation.status == "succeeded", invocation.error
    assert invocation.result == {"batchItemFailures": [{"itemIdentifier": poison["messageId"]}]}
    item = dynamodb.get_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": order_id}})["Item"]
    assert item == {"order_id": {"S": order_id}, "amount": {"N": "12.5"}, "customer": {"S": "c-0001"}}
    assert good["messageId"] != poison["messageId"]
    assert f"message {poison['messageId']} is not an order: amount must be a number" in "".join(
        invocation.log_lines
    )


def test_order_worker_with_its_default_event_reports_no_failure(runtime: LocalLambdaRuntime) -> None:
    invocation = runtime.invoke(names.ORDER_WORKER_FUNCTION, default_event(names.ORDER_WORKER_FUNCTION))
    assert (invocation.status, invocation.result) == ("succeeded", {"batchItemFailures": []})


def test_order_notifier_notifies_a_good_event_and_fails_on_a_poison_one(
    sandbox: Sandbox, runtime: LocalLambdaRuntime
) -> None:
    healthy = runtime.invoke(names.ORDER_NOTIFIER_FUNCTION, default_event(names.ORDER_NOTIFIER_FUNCTION))
    assert (healthy.status, healthy.result) == ("succeeded", {"notified": ["0001-000"]})

    poison = sns_event(sandbox.world.order_events_topic_arn, "order 0001-000 shipped")
    message_id = poison["Records"][0]["Sns"]["MessageId"]
    failed = runtime.invoke(names.ORDER_NOTIFIER_FUNCTION, poison)
    assert (failed.status, failed.error_type) == ("failed", "ValueError")
    assert failed.error == f"ValueError: order event {message_id} cannot be read: its message is not JSON"

    mistyped = sns_event(
        sandbox.world.order_events_topic_arn, json.dumps({"order_id": 7, "status": "shipped"})
    )
    wrong = runtime.invoke(names.ORDER_NOTIFIER_FUNCTION, mistyped)
    mistyped_id = mistyped["Records"][0]["Sns"]["MessageId"]
    assert wrong.error == f"ValueError: order event {mistyped_id} cannot be read: order_id must be a string"


def test_the_default_events_have_the_shapes_aws_documents(sandbox: Sandbox) -> None:
    """Keys of "Example Amazon SQS message event" (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)
    and "Example Amazon SNS message event" (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html)."""
    (record,) = default_event(names.ORDER_WORKER_FUNCTION, sandbox.region)["Records"]
    assert sorted(record) == sorted(
        [
            "messageId",
            "receiptHandle",
            "body",
            "attributes",
            "messageAttributes",
            "md5OfBody",
            "eventSource",
            "eventSourceARN",
            "awsRegion",
        ]
    )
    assert sorted(record["attributes"]) == sorted(
        ["ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"]
    )
    assert (record["body"], record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == (
        names.order_message(),
        "aws:sqs",
        sandbox.world.orders_queue_arn,
        sandbox.region,
    )
    assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()  # noqa: S324

    (notification,) = default_event(names.ORDER_NOTIFIER_FUNCTION, sandbox.region)["Records"]
    assert sorted(notification) == ["EventSource", "EventSubscriptionArn", "EventVersion", "Sns"]
    assert (notification["EventSource"], notification["EventVersion"]) == ("aws:sns", "1.0")
    assert sorted(notification["Sns"]) == sorted(SNS_MEMBERS)
    assert (notification["Sns"]["Type"], notification["Sns"]["Message"], notification["Sns"]["TopicArn"]) == (
        "Notification",
        names.order_event(),
        sandbox.world.order_events_topic_arn,
    )


# --- every invocation runs in its function's account ---------------------------------------------------


def _request_ids(logs: Any, group: str) -> set[str]:
    events = logs.filter_log_events(logGroupName=group, filterPattern="REPORT")["events"]
    return {e["message"].split()[2] for e in events}


def test_invoking_the_second_account_s_arn_runs_its_copy_and_logs_there(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    arn = sandbox.world.second_function_arn
    assert f":{names.SECOND_ACCOUNT_ID}:" in arn
    assert cli.main(["invoke", arn, "--state-dir", str(sandbox.state_dir)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if " succeeded " in line]
    request_id = line.split()[0]

    group = f"/aws/lambda/{names.ORDERS_FUNCTION}"
    second = sandbox.session(names.SECOND_OPERATOR).client("logs")
    first = sandbox.session(names.OPERATOR).client("logs")
    assert request_id in _request_ids(second, group)
    assert request_id not in _request_ids(first, group)


def test_an_asynchronous_invocation_of_the_second_account_s_arn_runs_and_counts_there(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    arn = sandbox.world.second_function_arn
    started = datetime.now(UTC) - timedelta(minutes=1)
    assert cli.main(["invoke", arn, "--async", "--state-dir", str(sandbox.state_dir)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if " succeeded " in line]
    request_id = line.split()[0]
    group = f"/aws/lambda/{names.ORDERS_FUNCTION}"
    second = sandbox.session(names.SECOND_OPERATOR)
    first = sandbox.session(names.OPERATOR)
    assert request_id in _request_ids(second.client("logs"), group)
    assert request_id not in _request_ids(first.client("logs"), group)

    def received(session: boto3.Session) -> float:
        points = session.client("cloudwatch").get_metric_statistics(
            Namespace="AWS/Lambda",
            MetricName="AsyncEventsReceived",
            Dimensions=[{"Name": "FunctionName", "Value": names.ORDERS_FUNCTION}],
            StartTime=started,
            EndTime=datetime.now(UTC) + timedelta(minutes=1),
            Period=60,
            Statistics=["Sum"],
        )["Datapoints"]
        return float(sum(p["Sum"] for p in points))

    assert received(second) == 1.0  # the second account's metric: the first's counts other tests' events


def test_a_runtime_without_the_second_account_s_lambda_service_refuses_its_functions(
    sandbox: Sandbox,
) -> None:
    arn = sandbox.world.second_function_arn
    with (
        LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as runtime,
        pytest.raises(InvokeError) as refused,
    ):
        runtime.invoke(arn, names.order_request())
    assert str(refused.value) == (
        f"the sandbox's Lambda service has no identity in account {names.SECOND_ACCOUNT_ID}: it cannot run "
        f"{arn} (pass that account's lambda-service session in accounts=)"
    )


def test_the_same_name_in_two_accounts_gets_an_environment_in_each(
    sandbox: Sandbox, runtime: LocalLambdaRuntime
) -> None:
    first = runtime.invoke(names.ORDERS_FUNCTION, names.order_request())
    second = runtime.invoke(sandbox.world.second_function_arn, names.order_request())
    again = runtime.invoke(sandbox.world.second_function_arn, names.order_request())
    assert (first.status, second.status, again.status) == ("succeeded", "succeeded", "succeeded")
    assert again.init_duration_ms is None  # warm: the second account's environment was kept for it
    second_logs = sandbox.session(names.SECOND_OPERATOR).client("logs")
    assert {second.request_id, again.request_id} <= _request_ids(
        second_logs, f"/aws/lambda/{names.ORDERS_FUNCTION}"
    )
    assert first.request_id not in _request_ids(second_logs, f"/aws/lambda/{names.ORDERS_FUNCTION}")


# --- the world snapshot covers the event paths ---------------------------------------------------------


def _changes(sandbox: Sandbox) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(what, change, undo) for each event-path setting an injector may change."""
    operator, world = sandbox.session(names.OPERATOR), sandbox.world
    lambda_, sqs, sns = operator.client("lambda"), operator.client("sqs"), operator.client("sns")
    mapping, notifier = world.orders_mapping_uuid, names.ORDER_NOTIFIER_FUNCTION
    click = lambda_.get_event_source_mapping(UUID=world.click_mapping_uuid)
    retries = {key: click[key] for key in ("MaximumRetryAttempts", "BisectBatchOnFunctionError")}
    extra: list[str] = []

    def subscribe() -> None:
        extra.append(
            sns.subscribe(
                TopicArn=world.order_events_topic_arn, Protocol="sqs", Endpoint=world.orders_dlq_arn
            )["SubscriptionArn"]
        )

    return [
        (
            "mapping disabled",
            lambda: lambda_.update_event_source_mapping(UUID=mapping, Enabled=False),
            lambda: lambda_.update_event_source_mapping(UUID=mapping, Enabled=True),
        ),
        (
            "mapping batch size",
            lambda: lambda_.update_event_source_mapping(UUID=mapping, BatchSize=1),
            lambda: lambda_.update_event_source_mapping(UUID=mapping, BatchSize=names.ORDERS_BATCH_SIZE),
        ),
        (
            "stream mapping's retries",
            lambda: lambda_.update_event_source_mapping(
                UUID=world.click_mapping_uuid, MaximumRetryAttempts=2, BisectBatchOnFunctionError=True
            ),
            lambda: lambda_.update_event_source_mapping(UUID=world.click_mapping_uuid, **retries),
        ),
        (
            "visibility timeout",
            lambda: sqs.set_queue_attributes(
                QueueUrl=world.orders_queue_url, Attributes={"VisibilityTimeout": "1"}
            ),
            lambda: sqs.set_queue_attributes(
                QueueUrl=world.orders_queue_url,
                Attributes={"VisibilityTimeout": str(names.ORDERS_QUEUE_VISIBILITY_SECONDS)},
            ),
        ),
        (
            "statement removed",
            lambda: lambda_.remove_permission(
                FunctionName=notifier, StatementId=names.ORDER_EVENTS_STATEMENT
            ),
            lambda: lambda_.add_permission(
                FunctionName=notifier,
                StatementId=names.ORDER_EVENTS_STATEMENT,
                Action="lambda:InvokeFunction",
                Principal="sns.amazonaws.com",
                SourceArn=world.order_events_topic_arn,
            ),
        ),
        (
            "retries",
            lambda: lambda_.put_function_event_invoke_config(
                FunctionName=notifier, MaximumRetryAttempts=2, MaximumEventAgeInSeconds=3600
            ),
            lambda: lambda_.put_function_event_invoke_config(
                FunctionName=notifier, MaximumRetryAttempts=0, MaximumEventAgeInSeconds=3600
            ),
        ),
        (
            "dead-letter queue removed",
            lambda: lambda_.update_function_configuration(
                FunctionName=notifier, DeadLetterConfig={"TargetArn": ""}
            ),
            lambda: lambda_.update_function_configuration(
                FunctionName=notifier, DeadLetterConfig={"TargetArn": world.order_notifier_dlq_arn}
            ),
        ),
        ("subscription added", subscribe, lambda: sns.unsubscribe(SubscriptionArn=extra.pop())),
    ]


def test_the_world_snapshot_sees_every_event_path_change_and_its_undoing(sandbox: Sandbox) -> None:
    operator = sandbox.session(names.OPERATOR)
    before = world_snapshot(operator)
    assert world_snapshot(operator) == before  # deterministic
    # A mapping recreated by a restore has a new UUID, a resubscribed endpoint a new subscription ARN.
    assert sandbox.world.orders_mapping_uuid not in before
    assert sandbox.world.order_events_subscription_arn not in before
    for what, change, restore in _changes(sandbox):
        change()
        try:
            changed = world_snapshot(operator)
        finally:
            restore()
        assert changed != before, what
        assert world_snapshot(operator) == before, what


def test_put_event_invoke_config_overwrites_and_update_keeps_what_it_does_not_set(sandbox: Sandbox) -> None:
    """PutFunctionEventInvokeConfig "overwrites it. If you exclude any settings, they are removed"
    (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html)."""
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    notifier = names.ORDER_NOTIFIER_FUNCTION

    def read() -> tuple[Any, Any]:
        config = lambda_.get_function_event_invoke_config(FunctionName=notifier)
        return config.get("MaximumRetryAttempts"), config.get("MaximumEventAgeInSeconds")

    try:
        lambda_.put_function_event_invoke_config(FunctionName=notifier, MaximumRetryAttempts=2)
        assert read() == (2, None)
        lambda_.update_function_event_invoke_config(FunctionName=notifier, MaximumEventAgeInSeconds=120)
        assert read() == (2, 120)
    finally:
        lambda_.put_function_event_invoke_config(
            FunctionName=notifier, MaximumRetryAttempts=0, MaximumEventAgeInSeconds=3600
        )
    assert read() == (0, 3600)
