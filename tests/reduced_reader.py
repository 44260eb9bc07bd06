"""An identity holding every action the MCP server needs but some: a test of what a refused read becomes
(a gap, the rest answered) uses the emulator's own refusal, not a stub."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import botocore.session

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.permissions import required_iam_actions


@contextmanager
def reader_without(sandbox: Sandbox, *refused: str) -> Iterator[boto3.Session]:
    """A new IAM user allowed ``required_iam_actions()`` less ``refused``, with the sandbox's endpoint and
    region (the mcp-server profile's); the user is deleted afterwards."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    user = f"reader-without-{uuid.uuid4().hex[:8]}"
    allowed = [a for a in required_iam_actions() if a not in refused]
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": allowed, "Resource": "*"}],
    }
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="reads", PolicyDocument=json.dumps(document))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    core = botocore.session.Session()
    core.set_config_variable("config_file", sandbox.env["AWS_CONFIG_FILE"])
    core.set_config_variable("profile", names.MCP_SERVER)
    core.set_credentials(key["AccessKeyId"], key["SecretAccessKey"])
    try:
        yield boto3.Session(botocore_session=core)
    finally:
        iam.delete_access_key(UserName=user, AccessKeyId=key["AccessKeyId"])
        iam.delete_user_policy(UserName=user, PolicyName="reads")
        iam.delete_user(UserName=user)
