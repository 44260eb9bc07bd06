"""A throwaway Kinesis stream (two shards), role, probe function and queue, made as the operator and removed
after the test: what the stream tests and the stream injector's tests stage on."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from chaos.sandbox import names
from tests.conftest import Undo
from tests.packages import python_function

HANDLER = """\
import base64
import os


def _read(record):
    if "kinesis" in record:
        return base64.b64decode(record["kinesis"]["data"]).decode(), record["kinesis"]["sequenceNumber"]
    return record["dynamodb"]["NewImage"]["data"]["S"], record["dynamodb"]["SequenceNumber"]


def handler(event, context):
    seen = []
    for record in event["Records"]:
        data, sequence = _read(record)
        if data == "poison":
            if os.environ.get("MODE") == "partial":
                return {"batchItemFailures": [{"itemIdentifier": sequence}], "seen": seen}
            raise ValueError(f"cannot parse record {sequence}")
        seen.append(data)
    return {"seen": seen}
"""
STREAM_READS = [
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:DescribeStream",
    "kinesis:ListStreams",
]
POLLER_READS = [*STREAM_READS, "kinesis:ListShards", "sqs:SendMessage"]
TABLE_STREAM_READS = [a.replace("kinesis:", "dynamodb:") for a in STREAM_READS]
FIRST_SHARD, LAST_SHARD = "0", str(2**127 + 1)  # explicit hash keys in the first and the second of two shards


class Stage:
    """A throwaway stream (two shards), role, function and destination queue, removed after the test."""

    def __init__(self, operator: boto3.Session, undo: Undo) -> None:
        self.kinesis, self.iam = operator.client("kinesis"), operator.client("iam")
        self.lambda_, self.sqs = operator.client("lambda"), operator.client("sqs")
        self.undo, self.suffix = undo, uuid.uuid4().hex[:8]
        self.stream = f"clicks-{self.suffix}"
        self.kinesis.create_stream(StreamName=self.stream, ShardCount=2)
        self.undo(lambda: self.kinesis.delete_stream(StreamName=self.stream))
        self.stream_arn = self.kinesis.describe_stream_summary(StreamName=self.stream)[
            "StreamDescriptionSummary"
        ]["StreamARN"]

    def role(self, actions: list[str]) -> str:
        name = f"stream-probe-{self.suffix}"
        trust = {
            "Effect": "Allow",
            "Principal": {
                "Service": "lambda.amazonaws.com",
                "AWS": f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}",
            },
            "Action": "sts:AssumeRole",
        }
        arn: str = self.iam.create_role(RoleName=name, AssumeRolePolicyDocument=policy(trust))["Role"]["Arn"]
        document = policy({"Effect": "Allow", "Action": actions, "Resource": "*"})
        self.iam.put_role_policy(RoleName=name, PolicyName="stream", PolicyDocument=document)

        def remove() -> None:
            self.iam.delete_role_policy(RoleName=name, PolicyName="stream")
            self.iam.delete_role(RoleName=name)

        self.undo(remove)
        return arn

    def function(self, role_arn: str, mode: str = "", tags: dict[str, str] | None = None) -> str:
        return python_function(
            self.lambda_,
            self.undo,
            f"stream-probe-{self.suffix}",
            role_arn,
            {"probe.py": HANDLER},
            "probe.handler",
            Timeout=5,
            Environment={"Variables": {"MODE": mode}},
            Tags=tags or {},
        )

    def mapping(self, function: str, **settings: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.lambda_.create_event_source_mapping(
            FunctionName=function,
            EventSourceArn=self.stream_arn,
            **{"StartingPosition": "TRIM_HORIZON"} | settings,
        )
        self.undo(lambda: self.lambda_.delete_event_source_mapping(UUID=answer["UUID"]))
        return answer

    def queue(self) -> tuple[str, str]:
        url: str = self.sqs.create_queue(QueueName=f"stream-failures-{self.suffix}")["QueueUrl"]
        self.undo(lambda: self.sqs.delete_queue(QueueUrl=url))
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        return url, str(arn)

    def put(self, hash_key: str, *data: str) -> list[str]:
        return [
            str(
                self.kinesis.put_record(
                    StreamName=self.stream, Data=d.encode(), PartitionKey="p", ExplicitHashKey=hash_key
                )["SequenceNumber"]
            )
            for d in data
        ]


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def table_with_stream(operator: boto3.Session, undo: Undo, table: str) -> str:
    """A throwaway DynamoDB table with a stream of new images: the stream's ARN."""
    dynamodb = operator.client("dynamodb")
    stream: str = dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )["TableDescription"]["LatestStreamArn"]
    undo(lambda: dynamodb.delete_table(TableName=table))
    return stream
