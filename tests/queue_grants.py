"""Lambda refuses an SQS event source mapping whose function's role may not read the queue (the sandbox
too): a test that maps a queue to a world function grants its role what a consumer needs, and takes it
back after."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import boto3

POLICY = "test-sqs-consumer"
_CONSUMER = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                "Resource": "*",
            }
        ],
    }
)


def grant_consumer(operator: boto3.Session, function: str) -> Callable[[], None]:
    """Grant ``function``'s role the SQS consumer actions; the returned call takes them back."""
    role = (
        operator.client("lambda").get_function_configuration(FunctionName=function)["Role"].rsplit("/", 1)[-1]
    )
    iam = operator.client("iam")
    iam.put_role_policy(RoleName=role, PolicyName=POLICY, PolicyDocument=_CONSUMER)
    return lambda: iam.delete_role_policy(RoleName=role, PolicyName=POLICY)


@contextmanager
def consumer(operator: boto3.Session, function: str) -> Iterator[None]:
    revoke = grant_consumer(operator, function)
    try:
        yield
    finally:
        revoke()
