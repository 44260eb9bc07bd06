"""The sandbox starts fast, provisions the whole world, and enforces IAM per identity."""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import cli, names
from chaos.sandbox.sandbox import Sandbox, SandboxError, start_sandbox
from mcp_server.permissions import READ_OPERATIONS
from supervisor.incident.store import FUNCTION_INDEX, RECENT_INDEX, STATUS_INDEX


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


def _read_calls(sandbox: Sandbox) -> dict[tuple[str, str], dict[str, Any]]:
    """One real request for every operation the MCP server is allowed."""
    world = sandbox.world
    return {
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
    }


def test_mcp_server_identity_can_make_every_read_it_needs(sandbox: Sandbox) -> None:
    session = sandbox.session(names.MCP_SERVER)
    calls = _read_calls(sandbox)
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
        assert sorted(a["AlarmName"] for a in alarms) == [
            f"{function}-errors",
            f"{function}-log-silence",
            f"{function}-throttles",
        ]
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
