"""Provision the sandbox world: four functions of different shapes in one account, a copy of one of them
in a second account, and what the incident-response toolkit itself needs.

- ``data-processor``: reads order batches from an S3 bucket, in a private VPC subnet whose default
  route goes to a NAT gateway, behind a network ACL and an HTTPS-only security group.
- ``orders-api``: an API-style function over a DynamoDB table named in its environment, with published
  versions and a ``live`` alias, outside any VPC.
- ``report-builder``: memory- and time-hungry, sized close to its limits, writing to its own bucket; a user
  of the second account calls it through its ``AWS_IAM`` function URL.
- ``order-intake``: a Node.js (ES module) API handler that puts submitted orders into the ``orders`` table
  with the AWS SDK for JavaScript v3.
- ``order-worker``, ``order-notifier`` and ``click-aggregator``: the event-driven pipeline
  (``event_world.py``): a queue with its dead-letter queue feeding a function through an event source
  mapping, a topic invoking a function asynchronously through its resource policy, with a dead-letter queue
  for failed events, and a Kinesis stream feeding a function through an event source mapping.

Each function has its own role (inline policy for what it calls, a customer-managed logs policy), log
group and three alarms (Errors, Throttles, log silence) on the ``incident-alerts`` topic. The supervisor's
notifications go to the ``incident-diagnoses`` topic, which an SQS queue reads.

docs/sandbox.md describes this world and its identities; docs/architecture.md ("Principles") says why
what fails in it is decided by the emulator and the sandbox's own runtime, never by the diagnosis.
"""

from __future__ import annotations

import io
import json
import secrets
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

from chaos.sandbox import identities, names
from chaos.sandbox.api_world import provision_rest_api
from chaos.sandbox.event_world import EventPipeline, provision_pipeline
from chaos.sandbox.vpc import Network, create_network
from chaos.workload import functions
from deploy.alarms import function_alarms
from executor.approvals import approvals_table_schema
from mcp_server.permissions import READ_OPERATIONS, iam_actions
from supervisor.incident.tables import context_table_schema, state_table_schema, time_to_live

FUNCTIONS_DIR = Path(functions.__file__).parent
RUNTIME = "python3.12"


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
    public_subnet_id: str = ""
    route_table_id: str = ""
    network_acl_id: str = ""
    nat_gateway_id: str = ""
    function_arns: dict[str, str] = field(default_factory=dict)
    orders_alias_arn: str = ""
    order_intake_url: str = ""
    report_builder_url: str = ""  # AuthType AWS_IAM: REPORT_READER's signed requests
    orders_rest_api_id: str = ""  # orders-rest-api, in front of orders-api:live (api_world.py)
    second_account_id: str = ""
    second_function_arn: str = ""
    read_only_role_arn: str = ""
    diagnoses_topic_arn: str = ""
    diagnoses_queue_url: str = ""
    recheck_queue_url: str = ""  # the supervisor's re-checks of provisional diagnoses (RECHECK_QUEUE_URL)
    remediation_queue_url: str = ""  # the executor's requests (REMEDIATION_QUEUE_URL)
    # The event-driven pipeline (event_world.py).
    orders_queue_url: str = ""
    orders_queue_arn: str = ""
    orders_dlq_url: str = ""
    orders_dlq_arn: str = ""
    order_notifier_dlq_url: str = ""
    order_notifier_dlq_arn: str = ""
    orders_mapping_uuid: str = ""
    order_events_topic_arn: str = ""
    order_events_subscription_arn: str = ""
    clickstream_arn: str = ""
    click_mapping_uuid: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def package(module: str) -> bytes:
    """The deployment package of a sandbox function: its one source file at the zip's root, or the files of
    its directory (``functions/<module>/``) with their paths below it."""
    directory = FUNCTIONS_DIR / module
    files = (
        {
            path.relative_to(directory).as_posix(): path
            for path in sorted(directory.rglob("*"))
            if path.is_file()
        }
        if directory.is_dir()
        else {f"{module}.py": FUNCTIONS_DIR / f"{module}.py"}
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, path in files.items():
            archive.writestr(name, path.read_text())
    return buffer.getvalue()


def _orders(batch: int) -> bytes:
    return json.dumps(
        [{"order_id": f"{batch:04d}-{i:03d}", "amount": 10 + i * 2.5} for i in range(25)]
    ).encode()


def _execution_role(iam: Any, account: str, role: str, function: str, *statements: dict[str, Any]) -> str:
    """A function's role: an inline policy for what its code calls, a customer-managed logs policy
    (AWS's managed policies are not loaded in the emulator)."""
    # The sandbox's stand-in for the Lambda service assumes the role for each environment. One statement
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
    role_arn: str = iam.create_role(
        RoleName=role,
        AssumeRolePolicyDocument=trust,
        Description=f"Execution role of the {function} function",
    )["Role"]["Arn"]
    iam.put_role_policy(RoleName=role, PolicyName=f"{function}-access", PolicyDocument=_policy(*statements))
    logs_policy_arn = iam.create_policy(
        PolicyName=f"{function}-logs",
        Description="CloudWatch Logs writes (customer-managed AWSLambdaBasicExecutionRole)",
        PolicyDocument=_policy(
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ),
    )["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=role, PolicyArn=logs_policy_arn)
    return role_arn


def _attach_vpc_access(iam: Any) -> None:
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
    iam.attach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=vpc_policy_arn)


def _log_group(logs: Any, function: str) -> str:
    group = f"/aws/lambda/{function}"
    logs.create_log_group(logGroupName=group)
    logs.put_retention_policy(logGroupName=group, retentionInDays=14)
    return group


def _create_function(lambda_: Any, name: str, role_arn: str, module: str, **settings: Any) -> str:
    """``settings`` may override the runtime (Python by default) and the handler (``<module>.handler``)."""
    arn: str = lambda_.create_function(
        **{
            "FunctionName": name,
            "Runtime": RUNTIME,
            "Role": role_arn,
            "Handler": f"{module}.handler",
            "Code": {"ZipFile": package(module)},
            "Tags": dict([names.CHAOS_TAG]),
            **settings,
        }
    )["FunctionArn"]
    return arn


def _data_processor(operator: boto3.Session, network: Network) -> tuple[str, str]:
    iam, s3, region = operator.client("iam"), operator.client("s3"), operator.region_name
    s3.create_bucket(Bucket=names.INPUT_BUCKET, CreateBucketConfiguration={"LocationConstraint": region})
    for batch, key in enumerate(names.INPUT_KEYS, start=1):
        s3.put_object(Bucket=names.INPUT_BUCKET, Key=key, Body=_orders(batch), ContentType="application/json")
    bucket_arn = f"arn:aws:s3:::{names.INPUT_BUCKET}"
    role_arn = _execution_role(
        iam,
        names.ACCOUNT_ID,
        names.ROLE_NAME,
        names.FUNCTION_NAME,
        {
            "Sid": "ReadInputObjects",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"{bucket_arn}/*",
        },
        {"Sid": "ListInputBucket", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket_arn},
    )
    _attach_vpc_access(iam)
    arn = _create_function(
        operator.client("lambda"),
        names.FUNCTION_NAME,
        role_arn,
        "data_processor",
        Description="Totals order batches from the input bucket",
        Timeout=names.FUNCTION_TIMEOUT_SECONDS,
        MemorySize=256,
        Environment={"Variables": {"INPUT_BUCKET": names.INPUT_BUCKET}},
        VpcConfig={"SubnetIds": [network.private_subnet_id], "SecurityGroupIds": [network.security_group_id]},
    )
    return arn, role_arn


def _orders_api(session: boto3.Session, account: str) -> tuple[str, str]:
    """The table, the role, the function, version 1 and the ``live`` alias on it."""
    dynamodb = session.client("dynamodb")
    table_arn = dynamodb.create_table(
        TableName=names.ORDERS_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
    )["TableDescription"]["TableArn"]
    for i in range(5):
        dynamodb.put_item(
            TableName=names.ORDERS_TABLE,
            Item={"order_id": {"S": f"0001-{i:03d}"}, "amount": {"N": str(10 + i * 2.5)}},
        )
    role_arn = _execution_role(
        session.client("iam"),
        account,
        names.ORDERS_ROLE,
        names.ORDERS_FUNCTION,
        {
            "Sid": "ReadWriteOrders",
            "Effect": "Allow",
            "Action": ["dynamodb:GetItem", "dynamodb:PutItem"],
            "Resource": table_arn,
        },
    )
    lambda_ = session.client("lambda")
    _create_function(
        lambda_,
        names.ORDERS_FUNCTION,
        role_arn,
        "orders_api",
        Description="Orders API: reads and writes the orders table",
        Timeout=5,
        MemorySize=256,
        Environment={"Variables": {"TABLE_NAME": names.ORDERS_TABLE}},
    )
    version = lambda_.publish_version(FunctionName=names.ORDERS_FUNCTION, Description="first release")[
        "Version"
    ]
    alias_arn: str = lambda_.create_alias(
        FunctionName=names.ORDERS_FUNCTION, Name=names.ORDERS_ALIAS, FunctionVersion=version
    )["AliasArn"]
    return alias_arn, role_arn


def _report_builder(operator: boto3.Session) -> tuple[str, str]:
    """report-builder, and its AWS_IAM function URL, which the resource policy lets REPORT_READER (another
    account's user) invoke (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html). Its ARN and URL."""
    region = operator.region_name
    operator.client("s3").create_bucket(
        Bucket=names.REPORT_BUCKET, CreateBucketConfiguration={"LocationConstraint": region}
    )
    role_arn = _execution_role(
        operator.client("iam"),
        names.ACCOUNT_ID,
        names.REPORT_ROLE,
        names.REPORT_FUNCTION,
        {
            "Sid": "WriteReports",
            "Effect": "Allow",
            "Action": "s3:PutObject",
            "Resource": f"arn:aws:s3:::{names.REPORT_BUCKET}/reports/*",
        },
    )
    lambda_ = operator.client("lambda")
    arn = _create_function(
        lambda_,
        names.REPORT_FUNCTION,
        role_arn,
        "report_builder",
        Description="Renders the daily report in memory and stores it",
        Timeout=3,
        MemorySize=256,
        Environment={"Variables": {"REPORT_BUCKET": names.REPORT_BUCKET, "REPORT_MB": "100"}},
        # Lambda's JSON log format, at the default levels: the world's function that logs in JSON.
        LoggingConfig={"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "INFO"},
    )
    reader = identities.user_arn(names.REPORT_READER)
    statements = (names.REPORT_URL_STATEMENT, names.REPORT_URL_INVOKE_STATEMENT)
    return arn, _function_url(lambda_, names.REPORT_FUNCTION, "AWS_IAM", reader, statements)


def _order_intake(operator: boto3.Session) -> tuple[str, str]:
    """The Node.js function: it may only put items into the orders table. Called through its public function
    URL, which its resource policy lets anyone invoke (both statements a URL made since October 2025
    needs: https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html). Its ARN and its URL."""
    table_arn = operator.client("dynamodb").describe_table(TableName=names.ORDERS_TABLE)["Table"]["TableArn"]
    role_arn = _execution_role(
        operator.client("iam"),
        names.ACCOUNT_ID,
        names.ORDER_INTAKE_ROLE,
        names.ORDER_INTAKE_FUNCTION,
        {"Sid": "PutOrders", "Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": table_arn},
    )
    lambda_, name = operator.client("lambda"), names.ORDER_INTAKE_FUNCTION
    arn = _create_function(
        lambda_,
        name,
        role_arn,
        "order_intake",
        Runtime=names.ORDER_INTAKE_RUNTIME,
        Handler=names.ORDER_INTAKE_HANDLER,
        Description="Order intake API: stores submitted orders in the orders table",
        Timeout=5,
        MemorySize=256,
        Environment={"Variables": {"TABLE_NAME": names.ORDERS_TABLE}},
    )
    statements = (names.ORDER_INTAKE_URL_STATEMENT, names.ORDER_INTAKE_URL_INVOKE_STATEMENT)
    return arn, _function_url(lambda_, name, "NONE", "*", statements)


def _function_url(
    lambda_: Any, name: str, auth_type: str, principal: str, statements: tuple[str, str]
) -> str:
    """The function's URL, and the two statements (their ids) that let ``principal`` invoke it through the
    URL, as URLs made since October 2025 need (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html)."""
    url: str = lambda_.create_function_url_config(FunctionName=name, AuthType=auth_type)["FunctionUrl"]
    url_statement, invoke_statement = statements
    caller = {"FunctionName": name, "Principal": principal}
    lambda_.add_permission(
        **caller, StatementId=url_statement, Action="lambda:InvokeFunctionUrl", FunctionUrlAuthType=auth_type
    )
    lambda_.add_permission(
        **caller, StatementId=invoke_statement, Action="lambda:InvokeFunction", InvokedViaFunctionUrl=True
    )
    return url


def create_incident_tables(
    dynamodb: Any,
    state_table: str = names.STATE_TABLE,
    context_table: str = names.CONTEXT_TABLE,
    approvals_table: str = names.APPROVALS_TABLE,
) -> None:
    """The incident tables, as the deploy template defines them (their items kept as long as its time to
    live says)."""
    dynamodb.create_table(TableName=state_table, BillingMode="PAY_PER_REQUEST", **state_table_schema())
    dynamodb.create_table(
        TableName=approvals_table, BillingMode="PAY_PER_REQUEST", **approvals_table_schema()
    )
    dynamodb.create_table(TableName=context_table, BillingMode="PAY_PER_REQUEST", **context_table_schema())
    for table in (state_table, context_table):
        dynamodb.update_time_to_live(TableName=table, TimeToLiveSpecification=time_to_live())


def _topic_to_queue(sns: Any, sqs: Any, topic_name: str, queue_name: str) -> tuple[str, str, str]:
    """A topic with an SQS queue subscribed to it: its ARN, the queue's URL, the subscription's ARN."""
    topic_arn = sns.create_topic(Name=topic_name)["TopicArn"]
    queue_url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
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


def _read_only_role(iam: Any) -> str:
    """In the second account: the role the MCP server's identity assumes to read it, with an external id."""
    trust = _policy(
        {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.MCP_SERVER}"},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"sts:ExternalId": names.READ_ONLY_EXTERNAL_ID}},
        }
    )
    arn: str = iam.create_role(
        RoleName=names.READ_ONLY_ROLE,
        AssumeRolePolicyDocument=trust,
        Description="Read-only diagnostics for the incident-response MCP server of another account",
    )["Role"]["Arn"]
    iam.put_role_policy(
        RoleName=names.READ_ONLY_ROLE,
        PolicyName="incident-response-read",
        PolicyDocument=_policy({"Effect": "Allow", "Action": iam_actions(READ_OPERATIONS), "Resource": "*"}),
    )
    return arn


def _mcp_api_key(ssm: Any) -> str:
    """A new bearer key for the MCP server, kept in SSM where the server reads it."""
    mcp_api_key = secrets.token_urlsafe(32)
    ssm.put_parameter(
        Name=names.MCP_KEY_PARAMETER,
        Type="SecureString",
        Value=mcp_api_key,
        Description="Bearer key accepted by the incident-response MCP server",
    )
    return mcp_api_key


def _event_pipeline(operator: boto3.Session, alerts_topic_arn: str) -> EventPipeline:
    iam, lambda_ = operator.client("iam"), operator.client("lambda")
    return provision_pipeline(
        operator,
        lambda role, function, *statements: _execution_role(
            iam, names.ACCOUNT_ID, role, function, *statements
        ),
        lambda name, role_arn, module, **settings: _create_function(
            lambda_, name, role_arn, module, **settings
        ),
        alerts_topic_arn,
    )


_FUNCTION_ARNS = ("order_worker_arn", "order_notifier_arn", "click_aggregator_arn")  # in function_arns


def provision(operator: boto3.Session, second_operator: boto3.Session) -> World:
    """Create every resource of the sandbox world; returns their identifiers."""
    region = operator.region_name
    network = create_network(operator.client("ec2"), region)
    logs = operator.client("logs")
    function_arn, role_arn = _data_processor(operator, network)
    orders_alias_arn, _ = _orders_api(operator, names.ACCOUNT_ID)
    report_arn, report_url = _report_builder(operator)
    intake_arn, intake_url = _order_intake(operator)
    create_incident_tables(operator.client("dynamodb"))
    sns, sqs = operator.client("sns"), operator.client("sqs")
    topic_arn, queue_url, subscription_arn = _topic_to_queue(
        sns, sqs, names.TOPIC_NAME, names.TRIGGER_QUEUE_NAME
    )
    diagnoses_topic_arn, diagnoses_queue_url, _ = _topic_to_queue(
        sns, sqs, names.DIAGNOSES_TOPIC_NAME, names.DIAGNOSES_QUEUE_NAME
    )
    recheck_queue_url = sqs.create_queue(QueueName=names.RECHECK_QUEUE)["QueueUrl"]
    remediation_queue_url = sqs.create_queue(QueueName=names.REMEDIATION_QUEUE)["QueueUrl"]
    pipeline = _event_pipeline(operator, topic_arn)
    rest_api_id = provision_rest_api(operator, orders_alias_arn, topic_arn)
    cloudwatch = operator.client("cloudwatch")
    for function in names.FUNCTIONS:
        for alarm in function_alarms(function, _log_group(logs, function), topic_arn):
            cloudwatch.put_metric_alarm(**alarm)

    second_function_arn = _orders_api(second_operator, names.SECOND_ACCOUNT_ID)[0].rsplit(":", 1)[0]
    _log_group(second_operator.client("logs"), names.ORDERS_FUNCTION)
    read_only_role_arn = _read_only_role(second_operator.client("iam"))

    mcp_api_key = _mcp_api_key(operator.client("ssm"))
    logs_policy_arn = f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{names.LOGS_POLICY_NAME}"
    return World(
        region=region,
        function_arn=function_arn,
        role_arn=role_arn,
        logs_policy_arn=logs_policy_arn,
        vpc_id=network.vpc_id,
        subnet_id=network.private_subnet_id,
        security_group_id=network.security_group_id,
        topic_arn=topic_arn,
        trigger_queue_url=queue_url,
        trigger_subscription_arn=subscription_arn,
        mcp_api_key=mcp_api_key,
        public_subnet_id=network.public_subnet_id,
        route_table_id=network.route_table_id,
        network_acl_id=network.network_acl_id,
        nat_gateway_id=network.nat_gateway_id,
        function_arns={
            names.FUNCTION_NAME: function_arn,
            names.ORDERS_FUNCTION: orders_alias_arn.rsplit(":", 1)[0],
            names.REPORT_FUNCTION: report_arn,
            names.ORDER_INTAKE_FUNCTION: intake_arn,
            names.ORDER_WORKER_FUNCTION: pipeline.order_worker_arn,
            names.ORDER_NOTIFIER_FUNCTION: pipeline.order_notifier_arn,
            names.CLICK_FUNCTION: pipeline.click_aggregator_arn,
        },
        orders_alias_arn=orders_alias_arn,
        order_intake_url=intake_url,
        report_builder_url=report_url,
        orders_rest_api_id=rest_api_id,
        second_account_id=names.SECOND_ACCOUNT_ID,
        second_function_arn=second_function_arn,
        read_only_role_arn=read_only_role_arn,
        diagnoses_topic_arn=diagnoses_topic_arn,
        diagnoses_queue_url=diagnoses_queue_url,
        recheck_queue_url=recheck_queue_url,
        remediation_queue_url=remediation_queue_url,
        **{k: v for k, v in asdict(pipeline).items() if k not in _FUNCTION_ARNS},
    )
