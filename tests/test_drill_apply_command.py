"""The drill's own reader of remediation commands: exact botocore parameters for what the AWS CLI takes
(https://docs.aws.amazon.com/cli/latest/reference/lambda/update-event-source-mapping.html for the
``--enabled | --no-enabled`` switch, https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-shorthand.html
for ``Key=Value`` shorthand), a refusal with its reason for anything else, and the call made as the
operator in the sandbox."""

from __future__ import annotations

import boto3
import pytest

from chaos.drill.apply_command import AwsCommand, CommandRefused, parse_command, run_command
from chaos.sandbox import names

UUID = "4c25a112-373f-4504-8091-16b3f5fa9700"
QUEUE_URL = f"https://sqs.ca-central-1.amazonaws.com/{names.ACCOUNT_ID}/{names.ORDERS_QUEUE}"
TOPIC = f"arn:aws:sns:ca-central-1:{names.ACCOUNT_ID}:{names.ORDER_EVENTS_TOPIC}"
DLQ = f"arn:aws:sqs:ca-central-1:{names.ACCOUNT_ID}:{names.ORDER_NOTIFIER_DLQ}"
ALLOWED = frozenset(
    {
        "lambda update-event-source-mapping",
        "lambda create-event-source-mapping",
        "sqs set-queue-attributes",
        "lambda add-permission",
        "sns subscribe",
        "lambda update-function-configuration",
        "lambda put-function-event-invoke-config",
    }
)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (
            f"aws lambda update-event-source-mapping --uuid {UUID} --enabled",
            AwsCommand("lambda", "UpdateEventSourceMapping", {"UUID": UUID, "Enabled": True}),
        ),
        (
            f"aws lambda update-event-source-mapping --uuid={UUID} --no-enabled --batch-size 5 "
            "--region ca-central-1",
            AwsCommand(
                "lambda",
                "UpdateEventSourceMapping",
                {"UUID": UUID, "Enabled": False, "BatchSize": 5},
                "ca-central-1",
            ),
        ),
        (
            f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} "
            "--attributes VisibilityTimeout=30,DelaySeconds=0",
            AwsCommand(
                "sqs",
                "SetQueueAttributes",
                {"QueueUrl": QUEUE_URL, "Attributes": {"VisibilityTimeout": "30", "DelaySeconds": "0"}},
            ),
        ),
        (
            f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} "
            """--attributes '{"VisibilityTimeout":"30"}'""",
            AwsCommand(
                "sqs",
                "SetQueueAttributes",
                {"QueueUrl": QUEUE_URL, "Attributes": {"VisibilityTimeout": "30"}},
            ),
        ),
        (
            f"aws lambda add-permission --function-name {names.ORDER_NOTIFIER_FUNCTION} --statement-id "
            f"{names.ORDER_EVENTS_STATEMENT} --action lambda:InvokeFunction --principal sns.amazonaws.com "
            f"--source-arn {TOPIC}",
            AwsCommand(
                "lambda",
                "AddPermission",
                {
                    "FunctionName": names.ORDER_NOTIFIER_FUNCTION,
                    "StatementId": names.ORDER_EVENTS_STATEMENT,
                    "Action": "lambda:InvokeFunction",
                    "Principal": "sns.amazonaws.com",
                    "SourceArn": TOPIC,
                },
            ),
        ),
        (
            f"aws lambda update-function-configuration --function-name {names.ORDER_NOTIFIER_FUNCTION} "
            f"--dead-letter-config TargetArn={DLQ}",
            AwsCommand(
                "lambda",
                "UpdateFunctionConfiguration",
                {"FunctionName": names.ORDER_NOTIFIER_FUNCTION, "DeadLetterConfig": {"TargetArn": DLQ}},
            ),
        ),
        (
            f"aws lambda create-event-source-mapping --function-name {names.ORDER_WORKER_FUNCTION} "
            f"--event-source-arn {DLQ} --function-response-types ReportBatchItemFailures --batch-size 5 "
            "--maximum-batching-window-in-seconds 0 --output json",
            AwsCommand(
                "lambda",
                "CreateEventSourceMapping",
                {
                    "FunctionName": names.ORDER_WORKER_FUNCTION,
                    "EventSourceArn": DLQ,
                    "FunctionResponseTypes": ["ReportBatchItemFailures"],
                    "BatchSize": 5,
                    "MaximumBatchingWindowInSeconds": 0,
                },
            ),
        ),
        (
            "aws lambda put-function-event-invoke-config --function-name f --maximum-retry-attempts 0 "
            f'--destination-config \'{{"OnFailure": {{"Destination": "{DLQ}"}}}}\'',
            AwsCommand(
                "lambda",
                "PutFunctionEventInvokeConfig",
                {
                    "FunctionName": "f",
                    "MaximumRetryAttempts": 0,
                    "DestinationConfig": {"OnFailure": {"Destination": DLQ}},
                },
            ),
        ),
    ],
    ids=lambda value: value.operation if isinstance(value, AwsCommand) else None,
)
def test_a_command_reads_into_exact_botocore_parameters(text: str, parsed: AwsCommand) -> None:
    assert parse_command(text, ALLOWED) == parsed


def test_the_method_is_the_boto3_client_method() -> None:
    assert AwsCommand("lambda", "UpdateEventSourceMapping").method == "update_event_source_mapping"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "aws iam delete-role --role-name order-worker-role",
            "aws iam delete-role is not among the operations allowed here (lambda add-permission, ",
        ),
        (
            f"aws lambda delete-event-source-mapping --uuid {UUID}",
            "aws lambda delete-event-source-mapping is not",
        ),
        ("lambda update-event-source-mapping --enabled", "not an 'aws <service> <operation>' command"),
        ("aws lambda update-event-source-mapping --uuid 'unclosed", "does not split into words"),
        ("aws lambda update-event-source-mapping --enabled", 'Missing required parameter in input: "UUID"'),
        (f"aws lambda update-event-source-mapping --uuid {UUID} --enabled true", "--enabled is a switch"),
        (
            f"aws lambda update-event-source-mapping --uuid {UUID} --batch-size five",
            "--batch-size takes a number",
        ),
        (f"aws lambda update-event-source-mapping --uuid {UUID} --bogus 1", "takes no option --bogus"),
        (f"aws lambda update-event-source-mapping --uuid {UUID} --uuid {UUID}", "--uuid is given twice"),
        (f"aws lambda update-event-source-mapping --uuid {UUID} --profile admin", "--profile is not taken"),
        (
            f"aws lambda update-event-source-mapping --uuid {UUID} --endpoint-url http://x",
            "--endpoint-url is not",
        ),
        (f"aws lambda update-event-source-mapping --uuid {UUID} extra", "--uuid takes one value, not 2"),
        (f"aws lambda update-event-source-mapping extra --uuid {UUID}", "unexpected word 'extra'"),
        (
            f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} --attributes file://a.json",
            "read a local file",
        ),
        (
            f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} --attributes VisibilityTimeout",
            "Key=Value pairs",
        ),
        (f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} --attributes '{{bad'", "is not valid JSON"),
        (
            "aws lambda update-function-configuration --function-name f --dead-letter-config Target=x",
            "--dead-letter-config has no member 'Target'",
        ),
        ("aws lambda update-function-configuration --function-name f --timeout 0", "valid min value: 1"),
    ],
)
def test_anything_else_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(CommandRefused) as refused:
        parse_command(text, ALLOWED)
    assert reason in str(refused.value)


def test_an_allowed_pair_that_is_no_operation_is_refused() -> None:
    with pytest.raises(CommandRefused, match="lambda has no operation 'enable-mapping'"):
        parse_command("aws lambda enable-mapping --uuid x", {"lambda enable-mapping"})


def test_the_command_runs_as_the_given_identity(operator: boto3.Session) -> None:
    sqs = operator.client("sqs")
    url = sqs.create_queue(QueueName="apply-command-test", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    try:
        command = parse_command(
            f"aws sqs set-queue-attributes --queue-url {url} --attributes VisibilityTimeout=7", ALLOWED
        )
        run_command(operator, command)
        shown = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
        assert shown == {"VisibilityTimeout": "7"}
    finally:
        sqs.delete_queue(QueueUrl=url)
