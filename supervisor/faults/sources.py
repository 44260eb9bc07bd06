"""The sources that can corroborate a fault class: fields of the answers of tools whose data the function's
users cannot write (IAM, configuration, metrics, the network's verdict, the change history)."""

from __future__ import annotations

from supervisor.faults.declaration import source

_METRICS = "get_function_metrics"
_CHANGE = r"events\.\d+(\..+)?"
_IAM = "iam.amazonaws.com"
_LAMBDA = "lambda.amazonaws.com"
_EC2 = "ec2.amazonaws.com"

ERRORS = source(
    _METRICS,
    r"errors|error_rate|first_error_minute|minutes\.\d+\.errors",
    "get_function_metrics errors (errors, error_rate, first_error_minute, minutes.<n>.errors)",
)
POLICIES = source(
    "get_iam_state",
    r"(inline_policies|attached_policies|permissions_boundary)(\..+)?",
    "get_iam_state policy statements (inline_policies, attached_policies, permissions_boundary)",
)
IAM_CHANGE = source("get_recent_changes", _CHANGE, "an IAM event in get_recent_changes (events.<n>)", _IAM)
THROTTLES = source(
    _METRICS,
    r"throttles|first_throttle_minute|minutes\.\d+\.throttles",
    "get_function_metrics throttles (throttles, first_throttle_minute, minutes.<n>.throttles)",
)
LIMIT = source(
    "get_lambda_config", r"ReservedConcurrentExecutions", "get_lambda_config ReservedConcurrentExecutions"
)
CONCURRENCY = source(
    _METRICS,
    r"minutes\.\d+\.concurrent_executions_max",
    "get_function_metrics minutes.<n>.concurrent_executions_max",
)
LAMBDA_CHANGE = source(
    "get_recent_changes", _CHANGE, "a Lambda event in get_recent_changes (events.<n>)", _LAMBDA
)
VERDICT = source(
    "get_network_state",
    r"https_egress_allowed|egress(\..+)?|security_groups(\..+)?|subnets(\..+)?|nat_gateways(\..+)?",
    "get_network_state verdicts and rules (https_egress_allowed, egress, security_groups, subnets, "
    "nat_gateways)",
)
NETWORK_CHANGE = source(
    "get_recent_changes", _CHANGE, "an EC2 event in get_recent_changes (events.<n>)", _EC2
)
DURATIONS = source(
    _METRICS,
    r"duration_to_timeout|max_duration_ms|minutes\.\d+\.duration_max_ms",
    "get_function_metrics durations (duration_to_timeout, max_duration_ms, minutes.<n>.duration_max_ms)",
)
MEMORY = source(
    _METRICS,
    r"peak_memory_used_mb|memory_to_size",
    "get_function_metrics memory (peak_memory_used_mb, memory_to_size)",
)
SETTINGS = source(
    "get_lambda_config",
    r"Handler|Runtime|EnvironmentVariableNames(\..+)?|State|StateReason|StateReasonCode|LastUpdateStatus"
    r"|Layers(\..+)?|Architectures(\..+)?|PackageType|KMSKeyArn|EphemeralStorageMb",
    "get_lambda_config settings (Handler, Runtime, EnvironmentVariableNames, State, Layers, ...)",
)
DEPLOYMENT = source(
    "get_lambda_config",
    r"CodeSha256|Versions(\..+)?|Aliases(\..+)?|Version|LastModified",
    "get_lambda_config deployment (CodeSha256, Versions, Aliases)",
)
SUCCEEDED_BESIDE = source(
    _METRICS,
    r"minutes\.\d+\.invocations",
    "get_function_metrics minutes.<n>.invocations above that minute's errors (invocations succeeded "
    "beside the failures)",
)
_EVENT_SOURCES = "get_event_sources"
EVENT_PATHS = source(
    _EVENT_SOURCES,
    r"mappings|mappings\.\d+\.(State|StateTransitionReason|LastProcessingResult|UUID|EventSourceArn)"
    r"|subscriptions(\.\d+(\..+)?)?|policy_statements(\.\d+(\..+)?)?",
    "get_event_sources paths (mappings.<n>.State, LastProcessingResult, subscriptions, policy_statements)",
)
BACKLOG = source(
    _EVENT_SOURCES,
    r"mappings\.\d+\.queue\.(ApproximateNumberOfMessages|oldest_message_age_seconds|messages_\w+)"
    r"|subscriptions\.\d+\.notifications_failed",
    "get_event_sources backlog (mappings.<n>.queue.ApproximateNumberOfMessages, "
    "oldest_message_age_seconds, subscriptions.<n>.notifications_failed)",
)
ASYNC_SETTINGS = source(
    _EVENT_SOURCES,
    r"async_config\.(configured|MaximumRetryAttempts|MaximumEventAgeInSeconds|destinations(\..+)?)"
    r"|mappings\.\d+\.(visibility_timeout_below_function_timeout|queue\.(VisibilityTimeout|"
    r"DeadLetterTargetArn|MaxReceiveCount))|timeout_seconds",
    "get_event_sources settings (async_config destinations and retries, a mapping's queue "
    "VisibilityTimeout and redrive policy)",
)
ASYNC_LOSSES = source(
    _EVENT_SOURCES,
    r"async_config\.metrics\.\w+|async_config\.destinations\.\d+\.queue\.\w+"
    r"|mappings\.\d+\.dead_letter_queue\.\w+",
    "get_event_sources losses (async_config.metrics AsyncEventsDropped, DeadLetterErrors, "
    "DestinationDeliveryFailures; the dead-letter queues' depth)",
)
SNS_CHANGE = source(
    "get_recent_changes", _CHANGE, "an SNS event in get_recent_changes (events.<n>)", "sns.amazonaws.com"
)
SQS_CHANGE = source(
    "get_recent_changes", _CHANGE, "an SQS event in get_recent_changes (events.<n>)", "sqs.amazonaws.com"
)
