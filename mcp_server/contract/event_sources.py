"""``get_event_sources``: how the function is invoked besides direct calls, and what is waiting or lost on
each path. Fields keep the AWS API's own casing where they copy an AWS value."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration

SourceMinutes = Annotated[
    int,
    Field(
        ge=5,
        le=1440,
        description="Minutes of metrics, back from the current minute.",
    ),
]


class GetEventSourcesArgs(TargetArguments):
    """Arguments of ``get_event_sources``: the function's event source mappings, asynchronous invocation
    settings, dead-letter queue, destinations and resource policy, with the depth of every queue."""

    minutes: SourceMinutes = 60


class QueueState(ContractModel):
    """An SQS queue the function reads or delivers to, as GetQueueAttributes and AWS/SQS show it."""

    QueueArn: str
    QueueUrl: str | None = None
    VisibilityTimeout: int | None = Field(default=None, description="Seconds; None: unreadable.")
    MessageRetentionPeriod: int | None = None
    DeadLetterTargetArn: str | None = Field(default=None, description="The redrive policy's queue.")
    MaxReceiveCount: int | None = Field(default=None, description="The redrive policy's maxReceiveCount.")
    ApproximateNumberOfMessages: int | None = Field(default=None, description="Visible messages now.")
    ApproximateNumberOfMessagesNotVisible: int | None = Field(
        default=None, description="Messages received and not yet deleted (in flight) now."
    )
    oldest_message_age_seconds: float | None = Field(
        default=None,
        description="The latest ApproximateAgeOfOldestMessage (Maximum) in the window; None: no datapoint.",
    )
    messages_sent: float | None = Field(default=None, description="NumberOfMessagesSent in the window (Sum).")
    messages_received: float | None = Field(
        default=None, description="NumberOfMessagesReceived in the window (Sum)."
    )
    messages_deleted: float | None = Field(
        default=None, description="NumberOfMessagesDeleted in the window (Sum)."
    )


class EventSourceMapping(ContractModel):
    """One event source mapping, as GetEventSourceMapping describes it."""

    UUID: str
    EventSourceArn: str
    FunctionArn: str
    State: str = Field(description="Enabled, Disabled, Creating, Enabling, Disabling, Updating, Deleting.")
    StateTransitionReason: str | None = None
    LastProcessingResult: str | None = Field(
        default=None, description="What Lambda last got polling the source, e.g. 'OK' or 'PROBLEM: ...'."
    )
    LastModified: str | None = Field(default=None, description="ISO-8601.")
    BatchSize: int | None = None
    MaximumBatchingWindowInSeconds: int | None = None
    FunctionResponseTypes: list[str] = Field(default_factory=list)
    queue: QueueState | None = Field(default=None, description="The source queue, when it is an SQS queue.")
    dead_letter_queue: QueueState | None = Field(
        default=None, description="The source queue's redrive dead-letter queue (its DeadLetterTargetArn)."
    )
    visibility_timeout_below_function_timeout: bool | None = Field(
        default=None,
        description="The source queue's VisibilityTimeout is shorter than the function's Timeout: messages "
        "still being processed become visible again and are received twice. None: not an SQS source.",
    )
    StartingPosition: str | None = omitted_when_null("Stream sources: TRIM_HORIZON, LATEST or AT_TIMESTAMP.")
    MaximumRetryAttempts: int | None = omitted_when_null(
        "Stream sources: retries of a failing batch; -1 retries it until its records expire, while the "
        "shard's later records wait."
    )
    MaximumRecordAgeInSeconds: int | None = omitted_when_null(
        "Stream sources: records older than this are given up on; -1: never, for their age."
    )
    BisectBatchOnFunctionError: bool | None = omitted_when_null(
        "Stream sources: a failed batch is split in two and each half retried."
    )
    on_failure_destination: str | None = omitted_when_null(
        "Stream sources: the queue or topic told of the records given up on (DestinationConfig.OnFailure)."
    )
    iterator_age_ms: float | None = omitted_when_null(
        "Stream sources: the function's IteratorAge (Maximum, ms) in the window's newest minute: how long "
        "the last record of a batch had been in the stream when Lambda sent it."
    )
    iterator_age_max_ms: float | None = omitted_when_null(
        "Stream sources: the largest IteratorAge (ms) in the window."
    )


class Destination(ContractModel):
    """Where failed (or successful) asynchronous events go: a destination or the dead-letter queue."""

    kind: str = Field(description="on_failure, on_success or dead_letter_queue.")
    Destination: str = Field(description="The target's ARN (SQS queue, SNS topic, function, event bus).")
    queue: QueueState | None = Field(default=None, description="The target, when it is an SQS queue.")


class AsyncMetrics(ContractModel):
    """The function's asynchronous-invocation metrics (AWS/Lambda) over the window; None: no datapoint."""

    AsyncEventsReceived: float | None = None
    AsyncEventsDropped: float | None = None
    AsyncEventAgeMaxMs: float | None = Field(default=None, description="Maximum AsyncEventAge, ms.")
    DeadLetterErrors: float | None = None
    DestinationDeliveryFailures: float | None = None


class AsyncConfig(ContractModel):
    """Asynchronous invocation: retries, maximum event age, destinations and the dead-letter queue."""

    configured: bool | None = Field(
        description="False: no event invoke config, Lambda's defaults apply; None: unreadable (see gaps)."
    )
    MaximumRetryAttempts: int | None = Field(description="0-2; 2 when not configured; None: unreadable.")
    MaximumEventAgeInSeconds: int | None = Field(
        description="60-21600; 21600 when not configured; None: unreadable."
    )
    destinations: list[Destination] = Field(default_factory=list)
    metrics: AsyncMetrics = Field(default_factory=AsyncMetrics)


class PolicyStatement(ContractModel):
    """One statement of the function's resource-based policy: who may invoke it."""

    Sid: str
    Effect: str
    Principal: str = Field(description="The service or account, e.g. 'sns.amazonaws.com'.")
    Action: str
    SourceArn: str | None = Field(default=None, description="The ArnLike/ArnEquals AWS:SourceArn condition.")
    SourceAccount: str | None = None
    FunctionUrlAuthType: str | None = omitted_when_null("Its lambda:FunctionUrlAuthType condition.")
    InvokedViaFunctionUrl: str | None = omitted_when_null("Its lambda:InvokedViaFunctionUrl condition.")


class FunctionUrl(ContractModel):
    """The function's URL (GetFunctionUrlConfig), whether its callers may use it, and how they fared."""

    FunctionUrl: str
    AuthType: str
    invoke_allowed: bool | None = Field(
        description="AuthType NONE: statements let everyone both lambda:InvokeFunctionUrl and "
        "lambda:InvokeFunction (which URLs made since October 2025 need), and no Deny matches. None: "
        "AWS_IAM (each caller's own policy decides too), or the policy is unreadable (see gaps)."
    )
    granted_callers: list[str] | None = omitted_when_null(
        "AuthType AWS_IAM: the principals the resource policy lets invoke through the URL (both actions, no "
        "Deny). A caller of another account must be here and granted by its own policies; one of the "
        "function's account may be let in by its own policies alone."
    )
    requests: float | None = Field(default=None, description="UrlRequestCount in the window (Sum).")
    client_errors: float | None = Field(default=None, description="Url4xxCount in the window (Sum).")
    server_errors: float | None = Field(default=None, description="Url5xxCount in the window (Sum).")


class ApiRoute(ContractModel):
    """A route whose Lambda proxy integration invokes the function."""

    route: str = Field(
        description="Method and resource path, e.g. 'POST /orders' (an HTTP API's may be '$default')."
    )
    qualifier: str | None = omitted_when_null("The alias or version the integration invokes.")
    timeout_ms: int = Field(
        description="The integration's timeout (unless set: 29000 for REST, 30000 for HTTP)."
    )
    invoke_allowed: bool | None = Field(
        description="A statement of the invoked function's (or alias's) policy lets apigateway.amazonaws.com "
        "lambda:InvokeFunction with an AWS:SourceArn matching this route on this stage, and no Deny matches. "
        "None: the policy is unreadable (see gaps)."
    )


class ExecutionLogLine(ContractModel):
    """One line of a stage's execution log."""

    at: str = Field(description="ISO-8601 time of the line.")
    message: str = Field(
        description="'(<request id>) <message>' as API Gateway wrote it, e.g. 'Execution failed due to "
        "configuration error: Malformed Lambda proxy response'; an HTTP API's: its access log line."
    )
    status: int | None = omitted_when_null(
        "An HTTP API's line: the status its caller got ($context.status), e.g. 503 when the integration's "
        "TimeoutInMillis ran out before the function answered."
    )


class ApiStage(ContractModel):
    """A deployed stage of a REST or HTTP API (API Gateway) with routes that invoke the function, and how
    its callers fared over the window."""

    api_id: str
    api_name: str
    stage: str
    protocol: str | None = omitted_when_null("HTTP: an HTTP API (API Gateway v2). Absent: a REST API.")
    logging_level: str = Field(
        description="The stage's execution logging for all methods: OFF, ERROR or INFO; an HTTP API's "
        "(which writes no execution log): ACCESS (access logging on) or OFF. OFF: what API Gateway did "
        "with the function's answers is not recorded."
    )
    routes: list[ApiRoute]
    api_source_arn: str = Field(
        description="The AWS:SourceArn of a statement that lets every route of the API invoke the function, "
        "as the console writes it: arn:<partition>:execute-api:<region>:<account>:<api id>/*."
    )
    requests: float | None = Field(default=None, description="Count in the window (AWS/ApiGateway, Sum).")
    client_errors: float | None = Field(default=None, description="4XXError in the window (Sum).")
    server_errors: float | None = Field(default=None, description="5XXError in the window (Sum).")
    execution_errors: list[ExecutionLogLine] = Field(
        default_factory=list,
        description="The newest failure lines of the stage's execution log in the window, oldest first; an "
        "HTTP API's: its access log's lines of 5XX answers (when the log is JSON with $context.status).",
    )


class Subscription(ContractModel):
    """An SNS subscription that delivers to the function (protocol lambda)."""

    SubscriptionArn: str
    TopicArn: str
    invoke_allowed: bool | None = Field(
        description="A resource-policy statement lets this topic invoke the function (sns.amazonaws.com, "
        "with no SourceArn condition or one matching the topic). None: the policy is unreadable (see gaps)."
    )
    notifications_failed: float | None = Field(
        default=None, description="The topic's NumberOfNotificationsFailed in the window (AWS/SNS, Sum)."
    )
    notifications_delivered: float | None = Field(
        default=None, description="The topic's NumberOfNotificationsDelivered in the window (AWS/SNS, Sum)."
    )


class EventSourcesResponse(ContractModel):
    """Answer of ``get_event_sources``."""

    function_name: str
    function_arn: str
    timeout_seconds: int = Field(description="The function's configured Timeout.")
    window_start: str = Field(description="ISO-8601 start of the metrics window.")
    window_end: str = Field(description="ISO-8601 end of the metrics window.")
    mappings: list[EventSourceMapping] = Field(
        default_factory=list, description="Every event source mapping of the function, any state."
    )
    async_config: AsyncConfig
    policy_statements: list[PolicyStatement] = Field(
        default_factory=list, description="The function's resource-based policy (empty: none)."
    )
    subscriptions: list[Subscription] = Field(
        default_factory=list, description="SNS subscriptions whose endpoint is the function."
    )
    function_url: FunctionUrl | None = omitted_when_null("The function's URL, when it has one.")
    apis: list[ApiStage] | None = omitted_when_null(
        "REST and HTTP API stages in front of the function (Lambda proxy integrations); none: no API "
        "calls it."
    )
    gaps: Gaps = Field(default_factory=list)


GET_EVENT_SOURCES = ToolDeclaration(
    name="get_event_sources",
    title="Lambda event sources",
    description=(
        "How the function is invoked besides direct calls, and what waits or is lost on each path: event "
        "source mappings with their queues or streams (depth, age, redrive, retries), asynchronous "
        "invocation "
        "(retries, destinations, dead-letter queue, dropped events), SNS subscriptions, the function URL, "
        "APIs and the resource policy."
    ),
    arguments=GetEventSourcesArgs,
    response=EventSourcesResponse,
    implementation="mcp_server.tools.event_sources:event_sources",
    reads=(
        ("lambda", "GetFunctionConfiguration"),
        ("lambda", "ListEventSourceMappings"),
        ("lambda", "GetFunctionEventInvokeConfig"),
        ("lambda", "GetPolicy"),
        ("lambda", "GetFunctionUrlConfig"),
        ("apigateway", "GetRestApis"),
        ("apigateway", "GetResources"),
        ("apigateway", "GetStages"),
        ("apigatewayv2", "GetApis"),
        ("apigatewayv2", "GetIntegrations"),
        ("apigatewayv2", "GetRoutes"),
        ("apigatewayv2", "GetStages"),
        ("logs", "FilterLogEvents"),
        ("sqs", "GetQueueUrl"),
        ("sqs", "GetQueueAttributes"),
        ("sns", "ListSubscriptions"),
        ("cloudwatch", "GetMetricData"),
    ),
    order=70,
)
