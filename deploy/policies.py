"""The IAM policies of the deployed identities, built from the code's own permission lists
(``supervisor/permissions.py``, ``watchdog/permissions.py``, ``executor/permissions.py``,
``mcp_server/permissions.py``, ``console/permissions.py``), so the
template, the sandbox identities and docs/tools.md cannot drift apart. Resources are CloudFormation
expressions: each identity reaches only its own tables, parameter, model, topic, log group and queues."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.permissions import TABLE_ACTIONS as CONSOLE_TABLE_ACTIONS
from deploy.cfn import get_att, ref, sub
from deploy.mcp_parameters import HAS_CROSS_ACCOUNT_ROLES
from executor.permissions import PARAMETER_ACTIONS as EXECUTOR_PARAMETER_ACTIONS
from executor.permissions import PLAN_READ_ACTIONS as EXECUTOR_READ_ACTIONS
from executor.permissions import QUEUE_ACTIONS as EXECUTOR_QUEUE_ACTIONS
from executor.permissions import TABLE_ACTIONS as EXECUTOR_TABLE_ACTIONS
from executor.permissions import TOPIC_ACTIONS as EXECUTOR_TOPIC_ACTIONS
from executor.permissions import write_statements
from mcp_server.contract.history import FUNCTION_INDEX, HISTORY_INDEX
from mcp_server.permissions import ASSUME_OPERATIONS, READ_OPERATIONS, STARTUP_OPERATIONS, iam_actions
from supervisor.permissions import (
    NOTIFY_ACTIONS,
    PARAMETER_ACTIONS,
    PLAN_READ_ACTIONS,
    RECHECK_ACTIONS,
    RECHECK_POLL_ACTIONS,
    REMEDIATION_ACTIONS,
)
from supervisor.permissions import TABLE_ACTIONS as SUPERVISOR_TABLE_ACTIONS
from watchdog.permissions import CONTEXT_ACTIONS as WATCHDOG_CONTEXT_ACTIONS
from watchdog.permissions import QUEUE_ACTIONS as WATCHDOG_QUEUE_ACTIONS
from watchdog.permissions import TABLE_ACTIONS as WATCHDOG_TABLE_ACTIONS
from watchdog.permissions import TOPIC_ACTIONS as WATCHDOG_TOPIC_ACTIONS

Statement = dict[str, Any]

# Converse is authorized as bedrock:InvokeModel (ConverseStream would need InvokeModelWithResponseStream;
# supervisor/agent/models.py builds the model with streaming off).
BEDROCK_ACTIONS = ("bedrock:InvokeModel",)
LOG_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")  # the log group itself is in the template
DEAD_LETTER_ACTIONS = ("sqs:SendMessage",)  # Lambda sends failed async events as the function's role
SECRET_INJECTION_ACTIONS = ("secretsmanager:GetSecretValue",)  # what ECS reads a container's secret with


def parameter_arn(parameter_name_ref: str) -> dict[str, str]:
    """The ARN of an SSM parameter whose name (starting with '/') is the template parameter given."""
    return sub(
        f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter${{{parameter_name_ref}}}"
    )


def log_streams_arn(log_group: str) -> dict[str, str]:
    """The log streams of one log group (the group is created by the template, so no CreateLogGroup)."""
    return sub(f"arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:{log_group}:*")


def allow(sid: str, actions: tuple[str, ...] | list[str], resources: list[Any] | dict[str, Any]) -> Statement:
    return {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}


def inference_profile_arn(profile_id_ref: str) -> dict[str, str]:
    """The ARN of the inference profile the template parameter names, in the stack's Region."""
    return sub(
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/"
        f"${{{profile_id_ref}}}"
    )


def profile_model_arn(profile_id_ref: str) -> dict[str, Any]:
    """The foundation model a cross-Region profile routes to, in every Region it may route to: the profile
    id without its geographic prefix (``us.anthropic.m-v1:0`` -> ``anthropic.m-v1:0``). The parameter's
    AllowedPattern guarantees the id has exactly three dot-separated parts."""
    parts = {"Fn::Split": [".", ref(profile_id_ref)]}
    return {
        "Fn::Sub": [
            "arn:${AWS::Partition}:bedrock:*::foundation-model/${Provider}.${Model}",
            {"Provider": {"Fn::Select": [1, parts]}, "Model": {"Fn::Select": [2, parts]}},
        ]
    }


def bedrock_statements(profile_id_ref: str) -> list[Statement]:
    """Invoking a cross-Region inference profile needs the profile and the foundation model in each Region
    it routes to; the model is granted only through that profile (the bedrock:InferenceProfileArn
    condition). Forms and condition from AWS's documentation:
    https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html and
    https://docs.aws.amazon.com/bedrock/latest/userguide/geographic-cross-region-inference.html"""
    profile = inference_profile_arn(profile_id_ref)
    through_profile = {"StringEquals": {"bedrock:InferenceProfileArn": profile}}
    return [
        allow("BedrockInferenceProfile", BEDROCK_ACTIONS, [profile]),
        allow("BedrockModelThroughProfile", BEDROCK_ACTIONS, [profile_model_arn(profile_id_ref)])
        | {"Condition": through_profile},
    ]


def supervisor_statements(log_group: str) -> list[Statement]:
    return [
        allow(
            "IncidentTables",
            SUPERVISOR_TABLE_ACTIONS,
            [
                get_att("StateTable"),
                sub("${StateTable.Arn}/index/*"),
                get_att("ContextTable"),
            ],
        ),
        allow("McpKeyParameter", PARAMETER_ACTIONS, [parameter_arn("McpKeyParameterName")]),
        *bedrock_statements("BedrockInferenceProfileId"),
        allow("DiagnosesTopic", NOTIFY_ACTIONS, [ref("DiagnosesTopic")]),
        allow("OwnLogs", LOG_ACTIONS, [log_streams_arn(log_group)]),
        allow("DeadLetterQueue", DEAD_LETTER_ACTIONS, [get_att("SupervisorDeadLetterQueue")]),
        # Sends each re-check; Lambda's event source mapping receives and deletes them as this role.
        allow("RecheckQueue", [*RECHECK_ACTIONS, *RECHECK_POLL_ACTIONS], [get_att("RecheckQueue")]),
        allow("PlanReads", PLAN_READ_ACTIONS, ["*"]),  # a plan's preconditions: reads only
        allow("RemediationQueue", REMEDIATION_ACTIONS, [get_att("RemediationQueue")]),
    ]


def watchdog_statements(log_group: str) -> list[Statement]:
    return [
        allow(
            "IncidentStateTable",
            WATCHDOG_TABLE_ACTIONS,
            [get_att("StateTable"), sub("${StateTable.Arn}/index/*")],
        ),
        allow("IncidentContextTable", WATCHDOG_CONTEXT_ACTIONS, [get_att("ContextTable")]),
        allow("DiagnosesTopic", WATCHDOG_TOPIC_ACTIONS, [ref("DiagnosesTopic")]),
        allow("Queues", WATCHDOG_QUEUE_ACTIONS, [get_att("RecheckQueue"), get_att("RemediationQueue")]),
        allow("OwnLogs", LOG_ACTIONS, [log_streams_arn(log_group)]),
    ]


def executor_statements(log_group: str) -> list[Any]:
    """The only role that writes: the allowlisted calls on the watched function's own resources
    (``executor.permissions``), the plan's reads, its three tables, its queue, the MCP key and the
    notices."""
    tables = [get_att("StateTable"), get_att("ContextTable"), get_att("ApprovalsTable")]
    function = (
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${WorkloadFunctionName}"
    )
    functions = [sub(function), sub(function + ":*")]
    roles = [sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:role/${WorkloadRoleName}")]
    return [
        allow("IncidentTables", EXECUTOR_TABLE_ACTIONS, tables),
        allow("McpKeyParameter", EXECUTOR_PARAMETER_ACTIONS, [parameter_arn("McpKeyParameterName")]),
        allow("RemediationQueue", EXECUTOR_QUEUE_ACTIONS, [get_att("RemediationQueue")]),
        allow("PlanReads", EXECUTOR_READ_ACTIONS, ["*"]),  # the preconditions, read before each call
        allow("DiagnosesTopic", EXECUTOR_TOPIC_ACTIONS, [ref("DiagnosesTopic")]),
        *write_statements(functions, roles, conditions=True),
        allow("OwnLogs", LOG_ACTIONS, [log_streams_arn(log_group)]),
    ]


def mcp_server_statements() -> list[Any]:
    """Exactly "Required IAM permissions" in docs/tools.md: the tools' reads (describe-style APIs that
    take no resource ARN are granted on "*"; DynamoDB's only on the incident-state indexes that
    get_incident_history queries), the key parameter, read once at startup, and, when other accounts are
    configured, sts:AssumeRole on their read-only roles only."""
    reads = iam_actions(READ_OPERATIONS)
    history = [action for action in reads if action.startswith("dynamodb:")]
    indexes = [
        dynamodb_table_arn("StateTableName", f"/index/{index}") for index in (FUNCTION_INDEX, HISTORY_INDEX)
    ]
    return [
        allow("DiagnosticReads", [action for action in reads if action not in history], ["*"]),
        allow("IncidentHistoryReads", history, indexes),
        allow("McpKeyParameter", iam_actions(STARTUP_OPERATIONS), [parameter_arn("McpKeyParameterName")]),
        {
            "Fn::If": [
                HAS_CROSS_ACCOUNT_ROLES,
                allow(
                    "OtherAccountsReadOnlyRoles", iam_actions(ASSUME_OPERATIONS), ref("CrossAccountRoleArns")
                ),
                ref("AWS::NoValue"),
            ]
        },
    ]


def dynamodb_table_arn(table_name_ref: str, suffix: str = "") -> dict[str, str]:
    """The ARN of a DynamoDB table whose name is the template parameter given (plus ``suffix``)."""
    return sub(
        f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/${{{table_name_ref}}}"
        + suffix
    )


def console_statements(indexes: Iterable[str]) -> list[Statement]:
    """The console reads the two tables (made by the other stack, named by parameters) and the state
    table's indexes, and nothing else: no Scan, no writes."""
    return [
        allow(
            "IncidentTablesRead",
            CONSOLE_TABLE_ACTIONS,
            [
                dynamodb_table_arn("StateTableName"),
                *(dynamodb_table_arn("StateTableName", f"/index/{index}") for index in indexes),
                dynamodb_table_arn("ContextTableName"),
            ],
        )
    ]


def injected_secret(sid: str, secret_logical_id: str) -> Statement:
    """An ECS task execution role's grant to read one Secrets Manager secret of the template (its Ref is
    the ARN), to inject it into a container: that secret, no other."""
    return allow(sid, SECRET_INJECTION_ACTIONS, [ref(secret_logical_id)])


def role(statements: list[Statement], service: str, description: str) -> dict[str, Any]:
    """An AWS::IAM::Role that ``service`` assumes, with ``statements`` as its one inline policy."""
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Description": description,
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
                ],
            },
            "Policies": [
                {
                    "PolicyName": "least-privilege",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
                }
            ],
        },
    }


def actions(statements: list[Statement]) -> set[str]:
    return {action for statement in statements for action in statement["Action"]}
