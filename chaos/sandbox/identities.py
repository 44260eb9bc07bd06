"""Sandbox identities: one IAM user per AWS profile, each holding exactly its own policy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chaos.sandbox import names
from console import permissions as console
from executor import permissions as executor
from mcp_server.permissions import READ_OPERATIONS, STARTUP_OPERATIONS, iam_actions
from supervisor.permissions import (
    NOTIFY_ACTIONS,
    PARAMETER_ACTIONS,
    PLAN_READ_ACTIONS,
    RECHECK_ACTIONS,
    TABLE_ACTIONS,
)
from watchdog.permissions import CONTEXT_ACTIONS as WATCHDOG_CONTEXT_ACTIONS
from watchdog.permissions import QUEUE_ACTIONS as WATCHDOG_QUEUE_ACTIONS
from watchdog.permissions import TABLE_ACTIONS as WATCHDOG_TABLE_ACTIONS
from watchdog.permissions import TOPIC_ACTIONS as WATCHDOG_TOPIC_ACTIONS


@dataclass(frozen=True)
class AccessKey:
    access_key_id: str
    secret_access_key: str


def _document(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def policy_documents() -> dict[str, str]:
    """The policy of each profile.

    moto authorizes DynamoDB, SSM, SNS and SQS requests against the resource "*", so resource-scoped
    statements for them would deny everything here: the sandbox limits actions, the deploy template also
    limits resources.
    """
    return {
        names.OPERATOR: _document({"Effect": "Allow", "Action": "*", "Resource": "*"}),
        names.MCP_SERVER: _document(
            {"Effect": "Allow", "Action": iam_actions(READ_OPERATIONS, STARTUP_OPERATIONS), "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Resource": f"arn:aws:iam::{names.SECOND_ACCOUNT_ID}:role/{names.READ_ONLY_ROLE}",
            },
        ),
        names.SUPERVISOR: _document(
            {
                "Effect": "Allow",
                "Action": [
                    *TABLE_ACTIONS,
                    *PARAMETER_ACTIONS,
                    *NOTIFY_ACTIONS,
                    *RECHECK_ACTIONS,
                    *PLAN_READ_ACTIONS,
                ],
                "Resource": "*",
            }
        ),
        names.WATCHDOG: _document(
            {
                "Effect": "Allow",
                "Action": sorted(
                    {
                        *WATCHDOG_TABLE_ACTIONS,
                        *WATCHDOG_CONTEXT_ACTIONS,
                        *WATCHDOG_TOPIC_ACTIONS,
                        *WATCHDOG_QUEUE_ACTIONS,
                    }
                ),
                "Resource": "*",
            }
        ),
        names.CONSOLE: _document(
            {
                "Effect": "Allow",
                "Action": sorted({*console.TABLE_ACTIONS, *console.DECISION_ACTIONS, *console.QUEUE_ACTIONS}),
                "Resource": "*",
            }
        ),
        names.EXECUTOR: _executor_document(),
        names.LAMBDA_SERVICE: _document(
            {
                "Effect": "Allow",
                "Action": [
                    "sts:AssumeRole",
                    "lambda:GetFunction",
                    "lambda:GetFunctionConcurrency",
                    "lambda:ListEventSourceMappings",
                    "lambda:GetFunctionEventInvokeConfig",
                    "lambda:ListFunctions",  # a URL request's function, and may it (function_urls.py)
                    "lambda:GetFunctionUrlConfig",
                    "lambda:GetPolicy",
                    "cloudwatch:PutMetricData",
                    "logs:DescribeLogStreams",  # when a function's lines were taken in (runtime.metric_time)
                    "ec2:Describe*",
                    "ec2:GetManagedPrefixListEntries",
                    "kms:DescribeKey",  # may a new environment decrypt its variables (environment_key.py)
                    "kms:ListGrants",
                    # an AWS_IAM function URL's caller: its own policies (function_urls.py)
                    "iam:ListAttachedUserPolicies",
                    "iam:GetPolicy",
                    "iam:GetPolicyVersion",
                    "iam:ListUserPolicies",
                    "iam:GetUserPolicy",
                ],
                "Resource": "*",
            }
        ),
        names.APIGATEWAY_SERVICE: _document(
            {
                "Effect": "Allow",
                "Action": [
                    "apigateway:GET",  # the stage, its resources and integrations (api_gateway.py)
                    "lambda:GetPolicy",  # may it invoke the integration's function
                    "cloudwatch:PutMetricData",
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                ],
                "Resource": "*",
            }
        ),
    }


def _executor_document() -> str:
    """The executor's identity: its tables, queue, key and notices, the plan's reads, and the allowlisted
    writes on the sandbox's functions and their roles (``executor.permissions``)."""
    own = [
        *executor.TABLE_ACTIONS,
        *executor.PARAMETER_ACTIONS,
        *executor.QUEUE_ACTIONS,
        *executor.TOPIC_ACTIONS,
        *executor.PLAN_READ_ACTIONS,
    ]
    functions = [
        f"arn:aws:lambda:*:{names.ACCOUNT_ID}:function:{name}{q}"
        for name in names.FUNCTIONS
        for q in ("", ":*")
    ]
    roles = [f"arn:aws:iam::{names.ACCOUNT_ID}:role/{role}" for role in names.FUNCTION_ROLES]
    return _document(
        {"Effect": "Allow", "Action": own, "Resource": "*"},
        *executor.write_statements(functions, roles, conditions=False),
    )


def report_reader_document() -> str:
    """REPORT_READER's own grant: invoke report-builder through its function URL (both actions, as URLs made
    since October 2025 need)."""
    function = f"arn:aws:lambda:*:{names.ACCOUNT_ID}:function:{names.REPORT_FUNCTION}"
    actions = ["lambda:InvokeFunctionUrl", "lambda:InvokeFunction"]
    return _document({"Effect": "Allow", "Action": actions, "Resource": function})


def user_arn(profile: str) -> str:
    """The ARN of the user that holds ``profile``'s key."""
    account = names.SECOND_ACCOUNT_ID if profile in names.SECOND_ACCOUNT_PROFILES else names.ACCOUNT_ID
    user = names.LAMBDA_SERVICE if profile == names.SECOND_LAMBDA_SERVICE else profile
    return f"arn:aws:iam::{account}:user/{user}"


def _create(iam: Any, profile: str, document: str) -> AccessKey:
    """The profile's user (``user_arn``) with the profile's policy and an access key."""
    user = user_arn(profile).rsplit("/", 1)[1]
    policy_arn = iam.create_policy(PolicyName=f"sandbox-{profile}", PolicyDocument=document)["Policy"]["Arn"]
    iam.create_user(UserName=user, Tags=[{"Key": "sandbox-profile", "Value": profile}])
    iam.attach_user_policy(UserName=user, PolicyArn=policy_arn)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return AccessKey(key["AccessKeyId"], key["SecretAccessKey"])


def bootstrap(iam: Any, second_account_iam: Any) -> dict[str, AccessKey]:
    """Create every sandbox identity: the profiles of the main account, and the administrator, the Lambda
    service and report-builder's URL caller of the second one (``second_account_iam`` is an IAM client of
    that account). Runs before IAM enforcement."""
    documents = policy_documents()
    keys = {profile: _create(iam, profile, document) for profile, document in documents.items()}
    admin = _document({"Effect": "Allow", "Action": "*", "Resource": "*"})
    keys[names.SECOND_OPERATOR] = _create(second_account_iam, names.SECOND_OPERATOR, admin)
    keys[names.SECOND_LAMBDA_SERVICE] = _create(
        second_account_iam, names.SECOND_LAMBDA_SERVICE, documents[names.LAMBDA_SERVICE]
    )
    keys[names.REPORT_READER] = _create(second_account_iam, names.REPORT_READER, report_reader_document())
    return keys
