"""The main CloudFormation stack: incident tables, the alert topic, the supervisor and watchdog Lambdas,
the executor's (``executor_stack``), the re-check queue of provisional diagnoses, the stale-check
schedule, the workload's alarms (its function's, and those of its event paths: event_alarms.py), and
least-privilege roles. Written to
``deploy/incident-response.template.json`` by ``python -m deploy.build``."""

from __future__ import annotations

from typing import Any

from deploy import event_alarms, executor_stack, policies
from deploy.alarms import function_alarms
from deploy.bundles import SUPERVISOR, WATCHDOG
from deploy.cfn import get_att, ref, sub, substituted
from supervisor.incident import resources
from supervisor.incident.tables import context_table_schema, state_table_schema, time_to_live

SUPERVISOR_FUNCTION = "incident-supervisor"
WATCHDOG_FUNCTION = "incident-watchdog"
STALE_CHECK_RULE = "incident-stale-check"
DEAD_LETTER_QUEUE = "incident-supervisor-dlq"
# Current Claude models are invoked through a cross-Region inference profile, not their bare model id.
# Claude Sonnet 4.5's US geographic profile, the newest Sonnet AWS's documentation shows with one
# (https://docs.aws.amazon.com/bedrock/latest/userguide/geographic-cross-region-inference.html,
# https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html).
DEFAULT_INFERENCE_PROFILE_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
# A system-defined profile id: a geographic prefix (the geographies of AWS's cross-Region profiles),
# the provider and the model, e.g. us.anthropic.claude-sonnet-4-5-20250929-v1:0 or global.anthropic.x.
INFERENCE_PROFILE_PATTERN = r"^(us|us-gov|eu|apac|jp|au|global)\.[a-z0-9-]+\.[a-z0-9-]+(:[0-9]+)?$"
RECHECK_QUEUE = resources.RECHECK_QUEUE
RECHECK_DEAD_LETTER_QUEUE = "incident-rechecks-dlq"
SUPERVISOR_TIMEOUT = 300
RECHECK_MAX_RECEIVES = 5  # deliveries of a re-check (held by another, or unrecorded) before its DLQ
EXAMPLE_WORKLOAD = "data-processor"  # the sandbox's example function, as the default to replace
LAMBDA_RUNTIME = "python3.12"

Template = dict[str, Any]


def _parameters() -> Template:
    return {
        "WorkloadFunctionName": {
            "Type": "String",
            "Default": EXAMPLE_WORKLOAD,
            "AllowedPattern": "^[A-Za-z0-9_-]{1,64}$",
            "Description": "The Lambda function to watch: its Errors, Throttles and log-silence alarms go "
            "to the topic.",
        },
        "McpServerUrl": {
            "Type": "String",
            "AllowedPattern": "^https?://.+",
            "Description": "The MCP server's SSE (…/sse) or Streamable HTTP (…/mcp) URL, e.g. the "
            "McpServerUrl output of the mcp-server stack.",
        },
        "McpKeyParameterName": {
            "Type": "String",
            "Default": resources.MCP_KEY_PARAMETER,
            "AllowedPattern": "^/[A-Za-z0-9_./-]+$",
            "Description": "SSM SecureString holding the MCP bearer key (create it before deploying; "
            "CloudFormation cannot create SecureStrings).",
        },
        "BedrockInferenceProfileId": {
            "Type": "String",
            "Default": DEFAULT_INFERENCE_PROFILE_ID,
            "AllowedPattern": INFERENCE_PROFILE_PATTERN,
            "ConstraintDescription": "a cross-Region inference profile id offered in this Region: a "
            "geographic prefix (us, us-gov, eu, apac, jp, au or global), a dot, then the model id, e.g. "
            f"{DEFAULT_INFERENCE_PROFILE_ID} (not a bare model id, not an ARN)",
            "Description": "The Bedrock cross-Region inference profile the supervisor invokes; it may "
            "invoke that profile, and its foundation model only through it, nothing else.",
        },
        "ArtifactBucket": {"Type": "String", "Description": "S3 bucket holding the Lambda zips."},
        "SupervisorCodeKey": {"Type": "String", "Default": "lambda/supervisor.zip"},
        "WatchdogCodeKey": {"Type": "String", "Default": "lambda/watchdog.zip"},
        "MaxIncidentsPerHour": {"Type": "Number", "Default": 20, "MinValue": 1},
        "MaxTokensPerIncident": {"Type": "Number", "Default": 100000, "MinValue": 1000},
        "ConsoleUrl": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^(https?://.+)?$",
            "Description": "Base URL of the incident console that notifications link to (empty: no link).",
        },
    }


def _tables() -> Template:
    keep = {
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
    }  # incident history outlives the stack
    common = {
        "BillingMode": "PAY_PER_REQUEST",
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
        "TimeToLiveSpecification": time_to_live(),
    }
    return {
        "StateTable": {
            "Type": "AWS::DynamoDB::Table",
            **keep,
            "Properties": {
                "TableName": resources.STATE_TABLE,
                **common,
                **state_table_schema(),
            },
        },
        "ContextTable": {
            "Type": "AWS::DynamoDB::Table",
            **keep,
            "Properties": {
                "TableName": resources.CONTEXT_TABLE,
                **common,
                **context_table_schema(),
            },
        },
    }


def _log_group_name(function_name: str) -> str:
    return f"/aws/lambda/{function_name}"


def _log_group(function_name: str) -> Template:
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {"LogGroupName": _log_group_name(function_name), "RetentionInDays": 30},
    }


def _invoke_permission(function: str, principal: str, source_arn: Any) -> Template:
    """Lets ``principal`` invoke the template's ``function`` (a logical id) for ``source_arn`` only."""
    return {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "FunctionName": ref(function),
            "Action": "lambda:InvokeFunction",
            "Principal": principal,
            "SourceArn": source_arn,
        },
    }


def _dead_letter_queue(name: str = DEAD_LETTER_QUEUE) -> Template:
    return {
        "Type": "AWS::SQS::Queue",
        "Properties": {
            "QueueName": name,
            "MessageRetentionPeriod": 1209600,  # 14 days, the most SQS keeps a message
            "SqsManagedSseEnabled": True,
        },
    }


def _rechecks() -> Template:
    """The re-check queue of provisional diagnoses (pipeline.md#provisional-and-final-diagnoses): the
    supervisor sends each re-check delayed until its time, the queue delivers it to the supervisor one at a
    time, and a re-check delivered ``RECHECK_MAX_RECEIVES`` times goes to its dead-letter queue (the
    watchdog then makes the diagnosis final as it stands)."""
    return {
        "RecheckDeadLetterQueue": _dead_letter_queue(RECHECK_DEAD_LETTER_QUEUE),
        "RecheckQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": RECHECK_QUEUE,
                # Lambda asks for at least the function's timeout, and recommends six times it.
                "VisibilityTimeout": 6 * SUPERVISOR_TIMEOUT,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": get_att("RecheckDeadLetterQueue"),
                    "maxReceiveCount": RECHECK_MAX_RECEIVES,
                },
            },
        },
        "RecheckEventSourceMapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "EventSourceArn": get_att("RecheckQueue"),
                "FunctionName": ref("SupervisorFunction"),
                "BatchSize": 1,  # one investigation per invocation, each with the whole deadline
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "Enabled": True,
            },
        },
    }


def _supervisor_function() -> Template:
    return {
        "Type": "AWS::Lambda::Function",
        "DependsOn": ["SupervisorLogGroup"],
        "Properties": {
            "FunctionName": SUPERVISOR_FUNCTION,
            "Description": "Diagnoses the failing Lambda named by each SNS alarm",
            "Runtime": LAMBDA_RUNTIME,
            "Handler": SUPERVISOR.entry_point.replace(":", "."),
            "Code": {"S3Bucket": ref("ArtifactBucket"), "S3Key": ref("SupervisorCodeKey")},
            "Role": get_att("SupervisorRole"),
            "Timeout": SUPERVISOR_TIMEOUT,
            "MemorySize": 1024,
            "DeadLetterConfig": {"TargetArn": get_att("SupervisorDeadLetterQueue")},
            "Environment": {
                "Variables": {
                    "MCP_SERVER_URL": ref("McpServerUrl"),
                    "MCP_API_KEY_SSM_PARAMETER": ref("McpKeyParameterName"),
                    "SUPERVISOR_MODEL": sub("bedrock:${BedrockInferenceProfileId}"),
                    "INCIDENT_STATE_TABLE": ref("StateTable"),
                    "INCIDENT_CONTEXT_TABLE": ref("ContextTable"),
                    "MAX_INCIDENTS_PER_HOUR": ref("MaxIncidentsPerHour"),
                    "MAX_TOKENS_PER_INCIDENT": ref("MaxTokensPerIncident"),
                    "SUPERVISOR_DIAGNOSES_TOPIC_ARN": ref("DiagnosesTopic"),
                    "SUPERVISOR_CONSOLE_URL": ref("ConsoleUrl"),
                    "RECHECK_QUEUE_URL": ref("RecheckQueue"),
                    "REMEDIATION": ref("Remediation"),
                    "REMEDIATION_QUEUE_URL": ref("RemediationQueue"),
                }
            },
        },
    }


def _watchdog_function() -> Template:
    return {
        "Type": "AWS::Lambda::Function",
        "DependsOn": ["WatchdogLogGroup"],
        "Properties": {
            "FunctionName": WATCHDOG_FUNCTION,
            "Description": "Fails incidents stuck in RECEIVED or INVESTIGATING and notifies them; covers "
            "re-checks that never ran",
            "Runtime": LAMBDA_RUNTIME,
            "Handler": WATCHDOG.entry_point.replace(":", "."),
            "Code": {"S3Bucket": ref("ArtifactBucket"), "S3Key": ref("WatchdogCodeKey")},
            "Role": get_att("WatchdogRole"),
            "Timeout": 60,
            "MemorySize": 256,
            "Environment": {
                "Variables": {
                    "INCIDENT_STATE_TABLE": ref("StateTable"),
                    "INCIDENT_CONTEXT_TABLE": ref("ContextTable"),
                    "WATCHDOG_DIAGNOSES_TOPIC_ARN": ref("DiagnosesTopic"),
                    "WATCHDOG_CONSOLE_URL": ref("ConsoleUrl"),
                    "RECHECK_QUEUE_URL": ref("RecheckQueue"),
                    "REMEDIATION_QUEUE_URL": ref("RemediationQueue"),
                    "WATCHDOG_EXECUTOR_LEASE_SECONDS": str(executor_stack.EXECUTOR_TIMEOUT),
                }
            },
        },
    }


def _stale_check_rule() -> Template:
    return {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "Name": STALE_CHECK_RULE,
            "Description": "Runs incident-watchdog every 5 minutes",
            "ScheduleExpression": "rate(5 minutes)",
            "State": "ENABLED",
            "Targets": [{"Arn": get_att("WatchdogFunction"), "Id": "incident-watchdog"}],
        },
    }


def _functions() -> Template:
    """The supervisor (invoked by the alerts topic, failed events to its dead-letter queue) and the
    watchdog (invoked by the stale-check schedule), each with its log group and role."""
    return {
        "SupervisorDeadLetterQueue": _dead_letter_queue(),
        "SupervisorLogGroup": _log_group(SUPERVISOR_FUNCTION),
        "SupervisorRole": policies.role(
            policies.supervisor_statements(_log_group_name(SUPERVISOR_FUNCTION)),
            "lambda.amazonaws.com",
            "incident-supervisor: its two tables, its SSM parameter, one Bedrock profile, its topic, "
            "its re-check queue, a plan's reads, sending to the executor's queue",
        ),
        "SupervisorFunction": _supervisor_function(),
        "SupervisorTopicPermission": _invoke_permission(
            "SupervisorFunction", "sns.amazonaws.com", ref("AlertsTopic")
        ),
        "WatchdogLogGroup": _log_group(WATCHDOG_FUNCTION),
        "WatchdogRole": policies.role(
            policies.watchdog_statements(_log_group_name(WATCHDOG_FUNCTION)),
            "lambda.amazonaws.com",
            "incident-watchdog: the state table, diagnoses in the context table, the diagnoses topic, "
            "sending to the re-check and the executor's queues",
        ),
        "WatchdogFunction": _watchdog_function(),
        "StaleCheckRule": _stale_check_rule(),
        "WatchdogSchedulePermission": _invoke_permission(
            "WatchdogFunction", "events.amazonaws.com", get_att("StaleCheckRule")
        ),
    }


def _topics() -> Template:
    """The alerts topic, which invokes the supervisor, and the diagnoses topic it notifies outcomes on."""
    return {
        "AlertsTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": resources.ALERTS_TOPIC,
                "Subscription": [{"Protocol": "lambda", "Endpoint": get_att("SupervisorFunction")}],
            },
        },
        "DiagnosesTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {"TopicName": resources.DIAGNOSES_TOPIC},
        },
    }


def _workload_alarms() -> Template:
    """The workload's alarms: the same three the sandbox world gives every function."""
    function = "${WorkloadFunctionName}"
    definitions = function_alarms(function, _log_group_name(function), ref("AlertsTopic"))
    logical_ids = ("WorkloadErrorsAlarm", "WorkloadThrottlesAlarm", "WorkloadLogSilenceAlarm")
    return {
        logical_id: {"Type": "AWS::CloudWatch::Alarm", "Properties": substituted(definition)}
        for logical_id, definition in zip(logical_ids, definitions, strict=True)
    }


def build() -> Template:
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "incident-response: the supervisor and watchdog Lambdas, incident state in DynamoDB, "
        "the alert and diagnoses topics and the workload's alarms",
        "Parameters": _parameters() | executor_stack.parameters() | event_alarms.parameters(),
        "Conditions": event_alarms.conditions(),
        "Resources": _tables()
        | _functions()
        | _rechecks()
        | executor_stack.resources(
            _log_group(executor_stack.EXECUTOR_FUNCTION), _log_group_name(executor_stack.EXECUTOR_FUNCTION)
        )
        | _topics()
        | _workload_alarms()
        | event_alarms.resources(ref("AlertsTopic")),
        "Outputs": {
            "AlertsTopicArn": {"Value": ref("AlertsTopic")},
            "DiagnosesTopicArn": {"Value": ref("DiagnosesTopic")},
            "StateTableName": {"Value": ref("StateTable")},
            "ContextTableName": {"Value": ref("ContextTable")},
            "SupervisorFunctionArn": {"Value": get_att("SupervisorFunction")},
            "WatchdogFunctionArn": {"Value": get_att("WatchdogFunction")},
            "DeadLetterQueueUrl": {"Value": ref("SupervisorDeadLetterQueue")},
            "RecheckQueueUrl": {"Value": ref("RecheckQueue")},
            "RecheckDeadLetterQueueUrl": {"Value": ref("RecheckDeadLetterQueue")},
            **executor_stack.outputs(),
        },
    }
