"""Provision the sandbox world as the `operator` identity (see DESIGN.md "The embedded AWS sandbox")."""

from __future__ import annotations

import io
import json
import secrets
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3

from chaos.sandbox import names
from chaos.workload import data_processor
from supervisor.incident_store import STATUS_INDEX


@dataclass(frozen=True)
class World:
    region: str
    function_arn: str
    role_arn: str
    logs_policy_arn: str
    vpc_id: str
    subnet_id: str
    security_group_id: str
    topic_arn: str
    trigger_queue_url: str
    trigger_subscription_arn: str
    mcp_api_key: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _function_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data_processor.py", Path(data_processor.__file__).read_text())
    return buffer.getvalue()


def _orders(batch: int) -> bytes:
    return json.dumps(
        [{"order_id": f"{batch:04d}-{i:03d}", "amount": 10 + i * 2.5} for i in range(25)]
    ).encode()


def _role(iam: Any) -> tuple[str, str]:
    account = names.ACCOUNT_ID
    # The sandbox's stand-in for the Lambda service assumes the role for each invocation. One statement
    # with both principals: moto 5.2.5 fails on a trust statement whose only principal is a Service.
    trust = _policy(
        {
            "Effect": "Allow",
            "Principal": {
                "Service": "lambda.amazonaws.com",
                "AWS": f"arn:aws:iam::{account}:user/{names.LAMBDA_SERVICE}",
            },
            "Action": "sts:AssumeRole",
        }
    )
    role_arn = iam.create_role(
        RoleName=names.ROLE_NAME,
        AssumeRolePolicyDocument=trust,
        Description="Execution role of the data-processor function",
    )["Role"]["Arn"]
    bucket_arn = f"arn:aws:s3:::{names.INPUT_BUCKET}"
    iam.put_role_policy(
        RoleName=names.ROLE_NAME,
        PolicyName=names.INLINE_POLICY_NAME,
        PolicyDocument=_policy(
            {
                "Sid": "ReadInputObjects",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": f"{bucket_arn}/*",
            },
            {"Sid": "ListInputBucket", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket_arn},
        ),
    )
    logs_policy_arn = iam.create_policy(
        PolicyName=names.LOGS_POLICY_NAME,
        Description="CloudWatch Logs writes (customer-managed AWSLambdaBasicExecutionRole)",
        PolicyDocument=_policy(
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ),
    )["Policy"]["Arn"]
    vpc_policy_arn = iam.create_policy(
        PolicyName=names.VPC_POLICY_NAME,
        Description="ENI management for a VPC function (customer-managed AWSLambdaVPCAccessExecutionRole)",
        PolicyDocument=_policy(
            {
                "Effect": "Allow",
                "Action": [
                    "ec2:CreateNetworkInterface",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DeleteNetworkInterface",
                ],
                "Resource": "*",
            }
        ),
    )["Policy"]["Arn"]
    for arn in (logs_policy_arn, vpc_policy_arn):
        iam.attach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=arn)
    return role_arn, logs_policy_arn


def _network(ec2: Any, region: str) -> tuple[str, str, str]:
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.1.0/24", AvailabilityZone=f"{region}a")[
        "Subnet"
    ]["SubnetId"]
    group_id = ec2.create_security_group(
        GroupName=names.SECURITY_GROUP_NAME, Description="data-processor: HTTPS egress only", VpcId=vpc_id
    )["GroupId"]
    # Replace the default allow-all egress with HTTPS only, as a hardened function would have.
    ec2.revoke_security_group_egress(
        GroupId=group_id, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    ec2.authorize_security_group_egress(
        GroupId=group_id,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 443,
                "ToPort": 443,
                "IpRanges": [{"CidrIp": "0.0.0.0/0", "Description": "HTTPS to AWS APIs"}],
            }
        ],
    )
    return vpc_id, subnet_id, group_id


def create_incident_tables(
    dynamodb: Any, state_table: str = names.STATE_TABLE, context_table: str = names.CONTEXT_TABLE
) -> None:
    """The supervisor's two tables, as the deploy template defines them."""
    dynamodb.create_table(
        TableName=state_table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "incident_id", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
            {"AttributeName": "updated_at", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "incident_id", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": STATUS_INDEX,
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "updated_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    dynamodb.create_table(
        TableName=context_table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "incident_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "incident_id", "KeyType": "HASH"}],
    )


def _alerting(sns: Any, sqs: Any) -> tuple[str, str, str]:
    topic_arn = sns.create_topic(Name=names.TOPIC_NAME)["TopicArn"]
    queue_url = sqs.create_queue(QueueName=names.TRIGGER_QUEUE_NAME)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sqs.set_queue_attributes(
        QueueUrl=queue_url,
        Attributes={
            "Policy": _policy(
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
                }
            )
        },
    )
    subscription_arn = sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)[
        "SubscriptionArn"
    ]
    return topic_arn, queue_url, subscription_arn


def provision(operator: boto3.Session) -> World:
    """Create every resource of the sandbox world; returns their identifiers."""
    region = operator.region_name
    iam, s3, logs = operator.client("iam"), operator.client("s3"), operator.client("logs")

    s3.create_bucket(Bucket=names.INPUT_BUCKET, CreateBucketConfiguration={"LocationConstraint": region})
    for batch, key in enumerate(names.INPUT_KEYS, start=1):
        s3.put_object(Bucket=names.INPUT_BUCKET, Key=key, Body=_orders(batch), ContentType="application/json")

    role_arn, logs_policy_arn = _role(iam)
    vpc_id, subnet_id, group_id = _network(operator.client("ec2"), region)
    logs.create_log_group(logGroupName=names.LOG_GROUP)
    logs.put_retention_policy(logGroupName=names.LOG_GROUP, retentionInDays=14)
    function_arn = operator.client("lambda").create_function(
        FunctionName=names.FUNCTION_NAME,
        Runtime="python3.12",
        Role=role_arn,
        Handler=names.FUNCTION_HANDLER,
        Code={"ZipFile": _function_zip()},
        Description="Totals order batches from the input bucket",
        Timeout=names.FUNCTION_TIMEOUT_SECONDS,
        MemorySize=256,
        Environment={"Variables": {"INPUT_BUCKET": names.INPUT_BUCKET}},
        VpcConfig={"SubnetIds": [subnet_id], "SecurityGroupIds": [group_id]},
        Tags=dict([names.CHAOS_TAG]),
    )["FunctionArn"]

    create_incident_tables(operator.client("dynamodb"))
    topic_arn, queue_url, subscription_arn = _alerting(operator.client("sns"), operator.client("sqs"))
    mcp_api_key = secrets.token_urlsafe(32)
    operator.client("ssm").put_parameter(
        Name=names.MCP_KEY_PARAMETER,
        Type="SecureString",
        Value=mcp_api_key,
        Description="Bearer key accepted by the incident-response MCP server",
    )
    return World(
        region=region,
        function_arn=function_arn,
        role_arn=role_arn,
        logs_policy_arn=logs_policy_arn,
        vpc_id=vpc_id,
        subnet_id=subnet_id,
        security_group_id=group_id,
        topic_arn=topic_arn,
        trigger_queue_url=queue_url,
        trigger_subscription_arn=subscription_arn,
        mcp_api_key=mcp_api_key,
    )
