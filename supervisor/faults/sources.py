"""The sources that can corroborate a fault class: fields of the answers of tools whose data the function's
users cannot write (IAM, configuration, metrics, the network's verdict, the change history), each with what
its value must say (``supervisor.faults.meanings``)."""

from __future__ import annotations

from supervisor.faults import meanings, refused_calls
from supervisor.faults.declaration import Source, source

_METRICS = "get_function_metrics"
_EVENT_SOURCES = "get_event_sources"
_CHANGES = "get_recent_changes"
_CHANGE = r"events\.\d+(\..+)?"

ERRORS = source(
    _METRICS,
    r"errors|error_rate|first_error_minute|minutes\.\d+\.errors",
    "get_function_metrics errors above 0 (errors, error_rate, first_error_minute, minutes.<n>.errors)",
    meanings.above_zero,
)
POLICIES = source(
    "get_iam_state",
    r"(inline_policies|attached_policies|permissions_boundary)(\..+)?",
    "get_iam_state policies refusing a call the function makes (a deciding Deny or boundary, an Allow "
    "scoped elsewhere, no grant)",
    refused_calls.refuses_a_call,
)
THROTTLES = source(
    _METRICS,
    r"throttles|first_throttle_minute|minutes\.\d+\.throttles",
    "get_function_metrics throttles above 0 (throttles, first_throttle_minute, minutes.<n>.throttles)",
    meanings.above_zero,
)
LIMIT = source(
    "get_lambda_config",
    r"ReservedConcurrentExecutions",
    "get_lambda_config ReservedConcurrentExecutions 0, reached, or null while throttled",
    meanings.limit_reached,
)
CONCURRENCY = source(
    _METRICS,
    r"minutes\.\d+\.concurrent_executions_max",
    "get_function_metrics minutes.<n>.concurrent_executions_max of a throttled minute",
    meanings.throttled_minute,
)
VERDICT = source(
    "get_network_state",
    r"https_egress_allowed|egress(\..+)?|security_groups(\..+)?|subnets(\..+)?|nat_gateways(\..+)?",
    "get_network_state blocked verdicts (https_egress_allowed false, egress.<n>.allowed false, its reasons; "
    "security_groups, subnets, nat_gateways)",
    meanings.blocked,
)
DURATIONS = source(
    _METRICS,
    r"duration_to_timeout|max_duration_ms|minutes\.\d+\.duration_max_ms",
    "get_function_metrics durations at the timeout (duration_to_timeout, max_duration_ms, "
    "minutes.<n>.duration_max_ms)",
    meanings.at_timeout,
)
MEMORY = source(
    _METRICS,
    r"peak_memory_used_mb|memory_to_size",
    "get_function_metrics memory used at the size (peak_memory_used_mb, memory_to_size)",
    meanings.at_memory_size,
)
SETTINGS = source(
    "get_lambda_config",
    r"Handler|Runtime|EnvironmentVariableNames(\..+)?|State|StateReason|StateReasonCode|LastUpdateStatus"
    r"|Layers(\..+)?|Architectures(\..+)?|PackageType|KMSKeyArn|EphemeralStorageMb",
    "get_lambda_config a failed State, or a setting a change set (Handler, Runtime, "
    "EnvironmentVariableNames, Layers, ...)",
    meanings.setting_broken,
)
ENVIRONMENT_KEY = source(
    "get_lambda_config",
    r"EnvironmentKey\.(KeyState|DecryptGrantees)",
    "get_lambda_config EnvironmentKey.KeyState not Enabled, or DecryptGrantees without the Role",
    meanings.key_refuses,
)
STORAGE = source(
    "get_lambda_config",
    r"EphemeralStorageMb",
    "get_lambda_config EphemeralStorageMb while failed writes say no space left on device",
    meanings.storage_full,
)
FUNCTION_STATE = source(
    "get_lambda_config",
    r"State|StateReasonCode",
    "get_lambda_config State not Active, StateReasonCode SubnetOutOfIPAddresses, EniLimitExceeded, "
    "InvalidSubnet or InvalidSecurityGroup",
    meanings.state_refuses,
)
SUCCEEDED_BESIDE = source(
    _METRICS,
    r"minutes\.\d+\.invocations",
    "get_function_metrics minutes.<n>.invocations above that minute's errors (invocations succeeded "
    "beside the failures)",
    meanings.succeeded_beside,
)
PATH_REFUSED = source(
    _EVENT_SOURCES,
    r"mappings\.\d+\.LastProcessingResult|subscriptions\.\d+\.invoke_allowed|function_url\.invoke_allowed"
    r"|apis\.\d+\.routes\.\d+\.invoke_allowed|function_url\.granted_callers",
    "get_event_sources a refused path (mappings.<n>.LastProcessingResult naming permissions; "
    "invoke_allowed false of subscriptions.<n>, function_url or apis.<n>.routes.<m>; "
    "function_url.granted_callers missing one a change removed)",
    meanings.path_refused,
)
ANSWER_UNUSABLE = source(
    _EVENT_SOURCES,
    r"apis\.\d+\.execution_errors\.\d+\.(message|status)",
    "get_event_sources apis.<n>.execution_errors.<m>: a message of a malformed proxy response or a timeout; "
    "an HTTP API's status 503/504 beside a route shorter than max_duration_ms",
    meanings.answer_unusable,
)
PATH_STOPPED = source(
    _EVENT_SOURCES,
    r"mappings|subscriptions|mappings\.\d+\.State",
    "get_event_sources a stopped path (mappings.<n>.State Disabled, no mappings or subscriptions left)",
    meanings.path_stopped,
)
BACKLOG = source(
    _EVENT_SOURCES,
    r"mappings\.\d+\.queue\.(ApproximateNumberOfMessages|oldest_message_age_seconds|messages_\w+)"
    r"|subscriptions\.\d+\.notifications_failed",
    "get_event_sources backlog above 0 (mappings.<n>.queue.ApproximateNumberOfMessages, "
    "oldest_message_age_seconds, subscriptions.<n>.notifications_failed)",
    meanings.backlog,
)
STREAM_LAG = source(
    _EVENT_SOURCES,
    r"mappings\.\d+\.iterator_age(_max)?_ms",
    "get_event_sources mappings.<n>.iterator_age_ms above the function's timeout",
    meanings.waited_behind,
)
ASYNC_SETTINGS = source(
    _EVENT_SOURCES,
    r"async_config\.(configured|MaximumRetryAttempts|MaximumEventAgeInSeconds|destinations(\..+)?)"
    r"|mappings\.\d+\.(visibility_timeout_below_function_timeout|queue\.(VisibilityTimeout|"
    r"DeadLetterTargetArn|MaxReceiveCount))|timeout_seconds",
    "get_event_sources settings at fault (async_config while events are lost, a mapping's queue "
    "VisibilityTimeout below the timeout, no redrive while messages wait)",
    meanings.async_setting_at_fault,
)
ASYNC_LOSSES = source(
    _EVENT_SOURCES,
    r"async_config\.metrics\.\w+|async_config\.destinations\.\d+\.queue\.\w+"
    r"|mappings\.\d+\.dead_letter_queue\.\w+",
    "get_event_sources losses above 0 (async_config.metrics AsyncEventsDropped, DeadLetterErrors, "
    "DestinationDeliveryFailures; the dead-letter queues' depth)",
    meanings.lost,
)


def _change(service: str, what: str, *operations: str) -> Source:
    return source(
        _CHANGES,
        _CHANGE,
        f"{what} in get_recent_changes (events.<n>)",
        meanings.change_of(*operations),
        service,
    )


IAM_CHANGE = _change(
    "iam.amazonaws.com",
    "an IAM policy change",
    "PutRolePolicy",
    "DeleteRolePolicy",
    "AttachRolePolicy",
    "DetachRolePolicy",
    "PutRolePermissionsBoundary",
    "CreatePolicyVersion",
    "SetDefaultPolicyVersion",
)
CONCURRENCY_CHANGE = _change(
    "lambda.amazonaws.com", "a concurrency change", "PutFunctionConcurrency", "DeleteFunctionConcurrency"
)
CONFIGURATION_CHANGE = _change(
    "lambda.amazonaws.com",
    "a Lambda configuration change",
    "UpdateFunctionConfiguration",
    "CreateFunction",
    "PutFunctionEventInvokeConfig",
    "UpdateFunctionEventInvokeConfig",
    "DeleteFunctionEventInvokeConfig",
    "CreateEventSourceMapping",
    "UpdateEventSourceMapping",
)
QUEUE_CHANGE = _change("sqs.amazonaws.com", "an SQS queue change", "SetQueueAttributes")
# The EC2 calls that can cut a VPC function's path (the rules brain reads the same list).
NETWORK_OPERATIONS = (
    "RevokeSecurityGroupEgress",
    "ModifySecurityGroupRules",
    "ModifyNetworkInterfaceAttribute",
    "CreateNetworkAclEntry",
    "ReplaceNetworkAclEntry",
    "DeleteNetworkAclEntry",
    "ReplaceNetworkAclAssociation",
    "CreateRoute",
    "ReplaceRoute",
    "DeleteRoute",
    "AssociateRouteTable",
    "ReplaceRouteTableAssociation",
    "DisassociateRouteTable",
    "DeleteNatGateway",
    "DeleteVpcEndpoints",
)
NETWORK_CHANGE = _change("ec2.amazonaws.com", "an EC2 network change", *NETWORK_OPERATIONS)
MAPPING_CHANGE = _change(
    "lambda.amazonaws.com",
    "a mapping or caller change",
    "UpdateEventSourceMapping",
    "DeleteEventSourceMapping",
    "RemovePermission",
)
SUBSCRIPTION_CHANGE = _change(
    "sns.amazonaws.com",
    "an SNS subscription change",
    "Unsubscribe",
    "DeleteTopic",
    "SetSubscriptionAttributes",
)
