"""The executor's part of the main stack: the approvals table, the executor's queue (and its dead-letter
queue), the executor function with its own role (the only role of the product that may write to the
watched function's resources, and only the allowlisted operations: ``executor/permissions.py``), and the
managed policy a person's role needs to approve (``incident-remediate``, the console)."""

from __future__ import annotations

from typing import Any

from deploy import policies
from deploy.bundles import EXECUTOR
from deploy.cfn import get_att, ref, sub
from executor.approvals import approvals_table_schema
from supervisor.incident.resources import APPROVALS_TABLE, REMEDIATION_QUEUE

EXECUTOR_FUNCTION = "incident-executor"
EXECUTOR_TIMEOUT = 900  # Lambda's longest: apply, a recovery window, an undo
REMEDIATION_DEAD_LETTER_QUEUE = "incident-remediations-dlq"
REMEDIATION_MAX_RECEIVES = 5
APPROVER_TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
READ_TABLE_ACTIONS = ("dynamodb:GetItem",)

Template = dict[str, Any]


def parameters() -> Template:
    return {
        "Remediation": {
            "Type": "String",
            "Default": "true",
            "AllowedValues": ["true", "false"],
            "Description": "Plan a fix for each final diagnosis and send it to the executor (false: "
            "incidents end at DIAGNOSED).",
        },
        "WorkloadRoleName": {
            "Type": "String",
            "Default": "data-processor-role",
            "AllowedPattern": "^[A-Za-z0-9+=,.@_-]{1,64}$",
            "Description": "The watched function's execution role: the executor may put back its policies.",
        },
        "RemediationApprovers": {
            "Type": "String",
            "Default": "",
            "Description": "Comma-separated IAM user and role ARNs whose approvals count (attach the "
            "ApproverPolicy output to them), and console:<sub> for people who decide on the console (the MCP "
            "stack's ConsoleApprovers). Empty: nothing is applied but what AutoApplyRisks allows.",
        },
        "AutoApplyRisks": {
            "Type": "String",
            "Default": "",
            "AllowedValues": ["", "low", "low,high"],
            "Description": "Risks whose plans apply without a person (empty: none).",
        },
        "ExecutorCodeKey": {"Type": "String", "Default": "lambda/executor.zip"},
    }


def _function() -> Template:
    return {
        "Type": "AWS::Lambda::Function",
        "DependsOn": ["ExecutorLogGroup"],
        "Properties": {
            "FunctionName": EXECUTOR_FUNCTION,
            "Description": "Applies an approved remediation plan, verifies recovery, undoes it if not",
            "Runtime": "python3.12",
            "Handler": EXECUTOR.entry_point.replace(":", "."),
            "Code": {"S3Bucket": ref("ArtifactBucket"), "S3Key": ref("ExecutorCodeKey")},
            "Role": get_att("ExecutorRole"),
            "Timeout": EXECUTOR_TIMEOUT,
            "MemorySize": 512,
            "ReservedConcurrentExecutions": 2,  # a few plans at a time, never a fleet of writers
            "Environment": {
                "Variables": {
                    "MCP_SERVER_URL": ref("McpServerUrl"),
                    "MCP_API_KEY_SSM_PARAMETER": ref("McpKeyParameterName"),
                    "INCIDENT_STATE_TABLE": ref("StateTable"),
                    "INCIDENT_CONTEXT_TABLE": ref("ContextTable"),
                    "INCIDENT_APPROVALS_TABLE": ref("ApprovalsTable"),
                    "REMEDIATION_APPROVERS": ref("RemediationApprovers"),
                    "EXECUTOR_AUTO_APPLY": ref("AutoApplyRisks"),
                    "EXECUTOR_LEASE_SECONDS": str(EXECUTOR_TIMEOUT),
                    "EXECUTOR_DIAGNOSES_TOPIC_ARN": ref("DiagnosesTopic"),
                    "EXECUTOR_CONSOLE_URL": ref("ConsoleUrl"),
                }
            },
        },
    }


def _approver_policy() -> Template:
    """What a person's role needs to approve: read the incident and its plan, write a decision, ask the
    executor to look. Attach it to the roles named in RemediationApprovers."""
    statements = [
        policies.allow(
            "ReadIncidents",
            ("dynamodb:GetItem", "dynamodb:Query"),
            [get_att("StateTable"), sub("${StateTable.Arn}/index/*"), get_att("ContextTable")],
        ),
        policies.allow("Decide", APPROVER_TABLE_ACTIONS, [get_att("ApprovalsTable")]),
        policies.allow("AskTheExecutor", ("sqs:SendMessage",), [get_att("RemediationQueue")]),
    ]
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "Description": "incident-response approver: decide on remediation plans",
            "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
        },
    }


def resources(log_group: Any, log_group_name: str) -> Template:
    """The executor's resources; ``log_group`` is its log group resource, named ``log_group_name``."""
    return {
        "ApprovalsTable": {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "TableName": APPROVALS_TABLE,
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
                **approvals_table_schema(),
            },
        },
        "RemediationDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": REMEDIATION_DEAD_LETTER_QUEUE,
                "MessageRetentionPeriod": 1209600,
                "SqsManagedSseEnabled": True,
            },
        },
        "RemediationQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": REMEDIATION_QUEUE,
                "VisibilityTimeout": 6 * EXECUTOR_TIMEOUT,  # Lambda recommends six times the timeout
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": get_att("RemediationDeadLetterQueue"),
                    "maxReceiveCount": REMEDIATION_MAX_RECEIVES,
                },
            },
        },
        "ExecutorLogGroup": log_group,
        "ExecutorRole": policies.role(
            policies.executor_statements(log_group_name),
            "lambda.amazonaws.com",
            "incident-executor: the allowlisted writes on the watched function's own resources, its tables "
            "and queue",
        ),
        "ExecutorFunction": _function(),
        "RemediationEventSourceMapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "EventSourceArn": get_att("RemediationQueue"),
                "FunctionName": ref("ExecutorFunction"),
                "BatchSize": 1,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "Enabled": True,
            },
        },
        "ApproverPolicy": _approver_policy(),
    }


def outputs() -> Template:
    return {
        "ApprovalsTableName": {"Value": ref("ApprovalsTable")},
        "RemediationQueueUrl": {"Value": ref("RemediationQueue")},
        "ExecutorFunctionArn": {"Value": get_att("ExecutorFunction")},
        "ApproverPolicyArn": {"Value": ref("ApproverPolicy")},
    }
