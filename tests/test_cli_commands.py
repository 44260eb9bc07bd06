"""AWS CLI commands built and parsed against botocore's service models (pure unit tests, no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from supervisor.diagnosis.cli_commands import CommandError, ParsedCommand, build_command, parse_command

POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "*"}],
    },
    separators=(",", ":"),
)
EGRESS_443 = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]

# (service, operation, params, region, the exact command build_command gives)
EXAMPLES: list[tuple[str, str, dict[str, Any], str | None, str]] = [
    (
        "lambda",
        "DeleteFunctionConcurrency",
        {"FunctionName": "data-processor"},
        "ca-central-1",
        "aws lambda delete-function-concurrency --function-name data-processor --region ca-central-1",
    ),
    (
        "lambda",
        "UpdateAlias",
        {"FunctionName": "orders-api", "Name": "live", "FunctionVersion": "1"},
        None,
        "aws lambda update-alias --function-name orders-api --name live --function-version 1",
    ),
    (
        "iam",
        "PutRolePolicy",
        {"RoleName": "data-processor-role", "PolicyName": "data-processor-access", "PolicyDocument": POLICY},
        None,
        "aws iam put-role-policy --role-name data-processor-role --policy-name data-processor-access "
        f"--policy-document '{POLICY}'",
    ),
    (
        "ec2",
        "AuthorizeSecurityGroupEgress",
        {"GroupId": "sg-123", "IpPermissions": EGRESS_443},
        None,
        "aws ec2 authorize-security-group-egress --group-id sg-123 --ip-permissions "
        """'[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"IpRanges":[{"CidrIp":"0.0.0.0/0"}]}]'""",
    ),
    (
        "lambda",
        "UpdateFunctionConfiguration",
        {"FunctionName": "report-builder", "Timeout": 30, "MemorySize": 512},
        None,
        "aws lambda update-function-configuration --function-name report-builder "
        "--timeout 30 --memory-size 512",
    ),
    (
        "lambda",
        "PutFunctionConcurrency",
        {"FunctionName": "x", "ReservedConcurrentExecutions": 50},
        None,
        "aws lambda put-function-concurrency --function-name x --reserved-concurrent-executions 50",
    ),
    (
        "iam",
        "AttachRolePolicy",
        {"RoleName": "r", "PolicyArn": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"},
        None,
        "aws iam attach-role-policy --role-name r "
        "--policy-arn arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    ),
    (
        "ec2",
        "ReplaceNetworkAclEntry",
        {
            "NetworkAclId": "acl-1",
            "RuleNumber": 100,
            "Protocol": "6",
            "RuleAction": "allow",
            "Egress": True,
            "CidrBlock": "0.0.0.0/0",
            "PortRange": {"From": 443, "To": 443},
        },
        None,
        "aws ec2 replace-network-acl-entry --network-acl-id acl-1 --rule-number 100 --protocol 6 "
        """--rule-action allow --egress --cidr-block 0.0.0.0/0 --port-range '{"From":443,"To":443}'""",
    ),
    (
        "ec2",
        "ReplaceNetworkAclEntry",  # the CLI renames --no-egress to --ingress
        {"NetworkAclId": "acl-1", "RuleNumber": 90, "Protocol": "-1", "RuleAction": "deny", "Egress": False},
        None,
        "aws ec2 replace-network-acl-entry --network-acl-id acl-1 --rule-number 90 --protocol=-1 "
        "--rule-action deny --ingress",
    ),
    (
        "ec2",
        "CreateRoute",
        {
            "RouteTableId": "rtb-1",
            "DestinationCidrBlock": "0.0.0.0/0",
            "NatGatewayId": "nat-1",
            "DryRun": False,
        },
        "us-east-1",
        "aws ec2 create-route --no-dry-run --route-table-id rtb-1 --destination-cidr-block 0.0.0.0/0 "
        "--nat-gateway-id nat-1 --region us-east-1",
    ),
    (
        "lambda",
        "UpdateFunctionConfiguration",
        {"FunctionName": "f", "Handler": "app.handler"},
        None,
        "aws lambda update-function-configuration --function-name f --handler app.handler",
    ),
    (
        "lambda",
        "UpdateFunctionConfiguration",
        {"FunctionName": "f", "Environment": {"Variables": {"TABLE": "orders", "NOTE": "it's ok"}}},
        None,
        "aws lambda update-function-configuration --function-name f --environment "
        """'{"Variables":{"TABLE":"orders","NOTE":"it'"'"'s ok"}}'""",
    ),
    (
        "lambda",
        "UpdateFunctionConfiguration",  # a list of scalars, and a value argparse would take for an option
        {"FunctionName": "f", "Description": "-- was: broken", "Layers": ["arn:l:1", "arn:l:2"]},
        None,
        "aws lambda update-function-configuration --function-name f '--description=-- was: broken' "
        "--layers arn:l:1 arn:l:2",
    ),
    (
        "s3",
        "PutBucketPolicy",
        {"Bucket": "b", "Policy": POLICY},
        None,
        f"aws s3api put-bucket-policy --bucket b --policy '{POLICY}'",
    ),
    (
        "cloudwatch",
        "SetAlarmState",
        {"AlarmName": "a b", "StateValue": "OK", "StateReason": "fixed"},
        None,
        "aws cloudwatch set-alarm-state --alarm-name 'a b' --state-value OK --state-reason fixed",
    ),
    ("sts", "GetCallerIdentity", {}, None, "aws sts get-caller-identity"),
]


@pytest.mark.parametrize(("service", "operation", "params", "region", "command"), EXAMPLES)
def test_build_renders_the_exact_command_and_parses_back(
    service: str, operation: str, params: dict[str, Any], region: str | None, command: str
) -> None:
    assert build_command(service, operation, params, region=region) == command
    assert parse_command(command) == ParsedCommand(service, operation, params, region)


def test_lists_that_the_cli_would_misread_go_as_json() -> None:
    params: dict[str, Any] = {"FunctionName": "f", "Layers": ["-odd", "[x]"]}
    command = build_command("lambda", "UpdateFunctionConfiguration", params)
    assert command.endswith("""--layers '["-odd","[x]"]'""")
    assert parse_command(command).params == params
    empty = build_command("lambda", "UpdateFunctionConfiguration", {"FunctionName": "f", "Layers": []})
    assert parse_command(empty).params == {"FunctionName": "f", "Layers": []}


def test_floats_and_negatives_round_trip() -> None:
    params: dict[str, Any] = {
        "AlarmName": "errors",
        "EvaluationPeriods": 1,
        "ComparisonOperator": "LessThanThreshold",
        "Threshold": -1.5e-05,
    }
    command = build_command("cloudwatch", "PutMetricAlarm", params)
    assert "--threshold=-1.5e-05" in command
    assert parse_command(command).params == params


HAND_WRITTEN = [
    (
        "aws lambda delete-function-concurrency --function-name data-processor --region ca-central-1",
        ParsedCommand(
            "lambda", "DeleteFunctionConcurrency", {"FunctionName": "data-processor"}, "ca-central-1"
        ),
    ),
    (
        "aws iam put-role-policy --role-name data-processor-role --policy-name data-processor-access "
        '--policy-document \'{"Version":"2012-10-17","Statement":[]}\'',
        ParsedCommand(
            "iam",
            "PutRolePolicy",
            {
                "RoleName": "data-processor-role",
                "PolicyName": "data-processor-access",
                "PolicyDocument": '{"Version":"2012-10-17","Statement":[]}',  # a string member stays text
            },
        ),
    ),
    (
        "aws ec2 authorize-security-group-egress --group-id sg-123 --ip-permissions "
        """'[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"IpRanges":[{"CidrIp":"0.0.0.0/0"}]}]'""",
        ParsedCommand(
            "ec2", "AuthorizeSecurityGroupEgress", {"GroupId": "sg-123", "IpPermissions": EGRESS_443}
        ),
    ),
    (
        "aws lambda put-function-concurrency --function-name x --reserved-concurrent-executions 50",
        ParsedCommand(
            "lambda", "PutFunctionConcurrency", {"FunctionName": "x", "ReservedConcurrentExecutions": 50}
        ),
    ),
    (
        "aws ec2 replace-network-acl-entry --network-acl-id acl-1 --rule-number 100 --protocol 6 "
        "--rule-action allow --ingress --cidr-block 10.0.0.0/16",
        ParsedCommand(
            "ec2",
            "ReplaceNetworkAclEntry",
            {
                "NetworkAclId": "acl-1",
                "RuleNumber": 100,
                "Protocol": "6",
                "RuleAction": "allow",
                "Egress": False,
                "CidrBlock": "10.0.0.0/16",
            },
        ),
    ),
    (
        "aws ec2 create-route --route-table-id rtb-1 --destination-cidr-block 0.0.0.0/0 "
        "--gateway-id igw-1 --dry-run",
        ParsedCommand(
            "ec2",
            "CreateRoute",
            {
                "RouteTableId": "rtb-1",
                "DestinationCidrBlock": "0.0.0.0/0",
                "GatewayId": "igw-1",
                "DryRun": True,
            },
        ),
    ),
    (
        "aws lambda update-function-configuration --function-name f "
        '--environment "{\\"Variables\\":{\\"A\\":\\"1\\"}}"',
        ParsedCommand(
            "lambda",
            "UpdateFunctionConfiguration",
            {"FunctionName": "f", "Environment": {"Variables": {"A": "1"}}},
        ),
    ),
    (  # global options before and after, --arg=value, and a line continuation
        "aws --profile ops --no-cli-pager lambda update-function-configuration \\\n"
        "  --function-name=report-builder --timeout 30 --memory-size 512 --output json --region eu-west-1",
        ParsedCommand(
            "lambda",
            "UpdateFunctionConfiguration",
            {"FunctionName": "report-builder", "Timeout": 30, "MemorySize": 512},
            "eu-west-1",
            {"profile": "ops", "no-cli-pager": True, "output": "json"},
        ),
    ),
    (
        "aws lambda update-function-configuration --function-name f --layers arn:l:1 arn:l:2 --timeout 5",
        ParsedCommand(
            "lambda",
            "UpdateFunctionConfiguration",
            {"FunctionName": "f", "Layers": ["arn:l:1", "arn:l:2"], "Timeout": 5},
        ),
    ),
    (
        "aws s3api get-bucket-policy --bucket my-bucket",
        ParsedCommand("s3", "GetBucketPolicy", {"Bucket": "my-bucket"}),
    ),
]


@pytest.mark.parametrize(("command", "expected"), HAND_WRITTEN)
def test_parse_hand_written_commands(command: str, expected: ParsedCommand) -> None:
    assert parse_command(command) == expected


REFUSED = [
    (
        "aws lambda delete-function-concurency --function-name x",
        "unknown operation 'delete-function-concurency' for service lambda; "
        "did you mean delete-function-concurrency",
    ),
    (
        "aws lambda DeleteFunctionConcurrency --function-name x",
        "did you mean delete-function-concurrency? (CLI names are kebab-case)",
    ),
    (
        "aws lambda put-function-concurrency --function-name x --reserved-concurent-executions 3",
        "unknown argument --reserved-concurent-executions for aws lambda put-function-concurrency; "
        "did you mean --reserved-concurrent-executions?",
    ),
    (
        "aws lambda put-function-concurrency --reserved-concurrent-executions 3",
        "aws lambda put-function-concurrency is missing required argument(s): --function-name",
    ),
    (
        "aws ec2 replace-network-acl-entry --network-acl-id a --rule-number 1 --protocol 6 "
        "--rule-action allow",
        "missing required argument(s): --egress or --ingress",
    ),
    (
        "aws lambda update-function-configuration --function-name x --timeout thirty",
        "--timeout takes an integer, not 'thirty'",
    ),
    (
        "aws lambda update-function-configuration --function-name x --timeout 30.5",
        "--timeout takes an integer, not '30.5'",
    ),
    (  # botocore checks the model's minimum (0 here)
        "aws lambda put-function-concurrency --function-name x --reserved-concurrent-executions -1",
        "Invalid value for parameter --reserved-concurrent-executions, value: -1, valid min value: 0",
    ),
    (
        "aws lambda update-function-configuration --function-name '' --timeout 3",
        "Invalid length for parameter --function-name, value: 0, valid min length: 1",
    ),
    (
        "aws lambda update-function-configuration --function-name x --environment 'Variables={A=1}'",
        "--environment takes a structure and 'Variables={A=1}' is not JSON",
    ),
    (
        "aws ec2 authorize-security-group-egress --group-id g --ip-permissions 'IpProtocol=tcp,FromPort=443'",
        "use JSON",
    ),
    (
        """aws ec2 authorize-security-group-egress --group-id g --ip-permissions '[{"FromPort":"443"}]'""",
        "Invalid type for parameter --ip-permissions[0].FromPort, value: 443",
    ),
    ("lambda delete-function-concurrency --function-name x", "a command must start with 'aws', not 'lambda'"),
    ("", "a command must start with 'aws'"),
    ("aws lambda delete-function-concurrency --function-name 'x", "unbalanced ' quote"),
    ('aws lambda delete-function-concurrency --function-name "x', 'unbalanced " quote'),
    ("aws s3 cp ./out.json s3://bucket/out.json", "'aws s3' is the high-level S3 command set"),
    ("aws lamda list-functions", "unknown service 'lamda'; did you mean lambda"),
    ("aws config describe-config-rules", "unknown service 'config'; the CLI calls it configservice"),
    ("aws lambda", "no operation given after 'aws lambda'"),
    ("aws --regoin us-east-1 lambda list-functions", "unknown option --regoin before the service"),
    ("aws lambda list-functions --region nowhere", "--region 'nowhere' is not a region name"),
    ("aws lambda list-functions --output xml", "--output 'xml' is not one of"),
    ("aws ec2 create-route --route-table-id r --dry-run yes", "--dry-run is a switch and takes no value"),
    ("aws ec2 create-route --route-table-id r --dry-run --no-dry-run", "--no-dry-run contradicts --dry-run"),
    ("aws lambda get-function --function-name a --function-name b", "--function-name is given twice"),
    ("aws lambda get-function --function-name a b", "--function-name takes one value, got 2"),
    ("aws lambda get-function data-processor", "unexpected 'data-processor'"),
    (
        "aws sts get-caller-identity --foo",
        "unknown argument --foo for aws sts get-caller-identity; it takes none",
    ),
    (
        "aws iam put-role-policy --role-name r --policy-name p --policy-document file://policy.json",
        "would make the CLI read a local file",
    ),
    ("aws lambda get-function --function-name x; rm -rf /", "unquoted ';'"),
    ("aws lambda get-function --function-name $(whoami)", "unquoted '$'"),
    ('aws lambda get-function --function-name "$FN"', "'$' at position"),
    ("aws lambda get-function --function-name x*", "unquoted '*'"),
    ("aws lambda get-function --function-name ~/x", "unquoted '~'"),
    ("aws lambda get-function --function-name x\naws lambda delete-function", "unquoted '\\n'"),
]


@pytest.mark.parametrize(("command", "message"), REFUSED)
def test_parse_refuses_with_a_reason(command: str, message: str) -> None:
    with pytest.raises(CommandError) as raised:
        parse_command(command)
    assert message in str(raised.value)


BUILD_REFUSED: list[tuple[str, str, dict[str, Any], str]] = [
    ("lamda", "GetFunction", {}, "unknown botocore service 'lamda'; did you mean lambda"),
    ("lambda", "put-function-concurrency", {}, "did you mean PutFunctionConcurrency?"),
    (
        "lambda",
        "PutFunctionConcurrency",
        {"FunctionName": "x", "ReservedConcurentExecutions": 1},
        "has no member 'ReservedConcurentExecutions'; did you mean ReservedConcurrentExecutions?",
    ),
    ("lambda", "PutFunctionConcurrency", {"ReservedConcurrentExecutions": 1}, "missing required argument(s)"),
    (
        "lambda",
        "UpdateFunctionConfiguration",
        {"FunctionName": "x", "Timeout": "30"},
        "Invalid type for parameter --timeout",
    ),
    (
        "lambda",
        "PutFunctionConcurrency",
        {"FunctionName": "x", "ReservedConcurrentExecutions": True},
        "takes an integer, not a boolean",
    ),
    ("lambda", "UpdateFunctionConfiguration", {"FunctionName": "file://x"}, "read a local file"),
]


@pytest.mark.parametrize(("service", "operation", "params", "message"), BUILD_REFUSED)
def test_build_refuses_with_a_reason(
    service: str, operation: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(CommandError) as raised:
        build_command(service, operation, params)
    assert message in str(raised.value)


def test_build_refuses_a_bad_region() -> None:
    with pytest.raises(CommandError, match="not a region name"):
        build_command("lambda", "GetFunction", {"FunctionName": "f"}, region="us east 1")


def test_command_error_is_a_value_error() -> None:
    assert issubclass(CommandError, ValueError)


def test_import_loads_no_botocore() -> None:
    probe = (
        "import sys, supervisor.diagnosis.cli_commands\n"
        "print(any(m.startswith('botocore') for m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
