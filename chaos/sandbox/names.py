"""Fixed names of the sandbox world (docs/sandbox.md, "The world it provisions")."""

from __future__ import annotations

import json

from supervisor.incident import resources

ACCOUNT_ID = "123456789012"
SECOND_ACCOUNT_ID = "210987654321"
DEFAULT_REGION = "ca-central-1"

FUNCTION_NAME = "data-processor"
FUNCTION_HANDLER = "data_processor.handler"
FUNCTION_TIMEOUT_SECONDS = 3
ROLE_NAME = "data-processor-role"
INLINE_POLICY_NAME = "data-processor-access"
LOGS_POLICY_NAME = "data-processor-logs"
VPC_POLICY_NAME = "data-processor-vpc-access"
LOG_GROUP = f"/aws/lambda/{FUNCTION_NAME}"
INPUT_BUCKET = "data-processor-input"
INPUT_KEYS = ("incoming/orders-0001.json", "incoming/orders-0002.json", "incoming/orders-0003.json")
MISSING_INPUT_KEY = "incoming/orders-9999.json"  # a batch that does not exist: an application error
SECURITY_GROUP_NAME = "data-processor-sg"
NACL_NAME = "data-processor-private"
CHAOS_TAG = ("chaos-allowed", "true")

ORDERS_FUNCTION = "orders-api"
ORDERS_ROLE = "orders-api-role"
ORDERS_TABLE = "orders"
ORDERS_ALIAS = "live"
ORDERS_REST_API = "orders-rest-api"  # API Gateway REST API in front of orders-api:live (api_world.py)
ORDERS_API_STAGE = "prod"
ORDERS_API_STATEMENT = "orders-rest-api-invoke"  # orders-api:live's permission for API Gateway

REPORT_FUNCTION = "report-builder"
REPORT_ROLE = "report-builder-role"
REPORT_BUCKET = "report-builder-output"
# Its function URL (AuthType AWS_IAM), called with SigV4 by REPORT_READER, a user of the second account, whom
# the two statements below let invoke it through the URL (a caller from another account needs both its own
# policy's grant and the function's).
REPORT_READER = "report-reader"
REPORT_URL_STATEMENT = "report-reader-url"
REPORT_URL_INVOKE_STATEMENT = "report-reader-url-invoke"

# A Node.js function: API Gateway POSTs of new orders into the orders table (ES module, AWS SDK v3).
ORDER_INTAKE_FUNCTION = "order-intake"
ORDER_INTAKE_ROLE = "order-intake-role"
ORDER_INTAKE_RUNTIME = "nodejs22.x"
ORDER_INTAKE_HANDLER = "index.handler"
# Its function URL (AuthType NONE) and the two statements that let anyone call it through the URL.
ORDER_INTAKE_URL_STATEMENT = "order-intake-url"
ORDER_INTAKE_URL_INVOKE_STATEMENT = "order-intake-url-invoke"

# Event-driven functions. orders-queue (redrive to orders-queue-dlq) feeds order-worker through an SQS event
# source mapping with partial batch responses; the order-events topic invokes order-notifier asynchronously
# through a statement of its resource policy, and order-notifier's failed events go to its dead-letter queue.
ORDER_WORKER_FUNCTION = "order-worker"
ORDER_WORKER_ROLE = "order-worker-role"
ORDER_WORKER_TIMEOUT_SECONDS = 2
ORDERS_QUEUE = "orders-queue"
ORDERS_QUEUE_VISIBILITY_SECONDS = 2  # at least the function's timeout, or Lambda refuses the mapping
ORDERS_DLQ = "orders-queue-dlq"
ORDERS_MAX_RECEIVE_COUNT = 2
ORDERS_BATCH_SIZE = 5
ORDER_WORKER_KEY_ALIAS = "alias/order-worker-environment"  # its environment variables' customer managed key
ORDER_NOTIFIER_FUNCTION = "order-notifier"
ORDER_NOTIFIER_ROLE = "order-notifier-role"
ORDER_EVENTS_TOPIC = "order-events"
ORDER_NOTIFIER_DLQ = "order-notifier-dlq"
ORDER_EVENTS_STATEMENT = "order-events-invoke"  # the resource-policy statement that lets the topic invoke
ORDER_NOTIFIER_RETRIES = 0  # MaximumRetryAttempts: a failed event goes to the dead-letter queue at once
# The sandbox's threshold on orders-queue's ApproximateAgeOfOldestMessage; the deploy template's default
# is 300 s. Shorter here so that a drill scenario waits seconds, not minutes, yet well above maxReceiveCount
# x the visibility timeout (4 s), the least a failing message spends before its redrive: on a busy machine
# the poller's receives come late and it stays longer (docs/sandbox.md).
QUEUE_AGE_ALARM_SECONDS = 10

# A stream consumer: the clickstream Kinesis stream (two shards) feeds click-aggregator through an event
# source mapping with Lambda's stream defaults (a failing batch is retried until its records expire).
CLICK_FUNCTION = "click-aggregator"
CLICK_ROLE = "click-aggregator-role"
CLICK_STREAM = "clickstream"
CLICK_STREAM_SHARDS = 2
CLICK_BATCH_SIZE = 10
CLICK_TIMEOUT_SECONDS = 3
# The sandbox's threshold on click-aggregator's IteratorAge (milliseconds); shorter than a team would set
# (minutes), so that a drill scenario waits seconds, yet above the function's timeout: a record older than
# one invocation can run waited behind another batch.
ITERATOR_AGE_ALARM_MS = 6000

FUNCTION_ROLES = (
    ROLE_NAME,
    ORDERS_ROLE,
    REPORT_ROLE,
    ORDER_INTAKE_ROLE,
    ORDER_WORKER_ROLE,
    ORDER_NOTIFIER_ROLE,
    CLICK_ROLE,
)
FUNCTIONS = (
    FUNCTION_NAME,
    ORDERS_FUNCTION,
    REPORT_FUNCTION,
    ORDER_INTAKE_FUNCTION,
    ORDER_WORKER_FUNCTION,
    ORDER_NOTIFIER_FUNCTION,
    CLICK_FUNCTION,
)

# The second account: a copy of orders-api, and a read-only role the mcp-server identity may assume.
READ_ONLY_ROLE = "incident-response-readonly"
READ_ONLY_EXTERNAL_ID = "incident-response-sandbox"

# The product's resources, under the names the deploy template gives them.
TOPIC_NAME = resources.ALERTS_TOPIC
DIAGNOSES_TOPIC_NAME = resources.DIAGNOSES_TOPIC
STATE_TABLE = resources.STATE_TABLE
CONTEXT_TABLE = resources.CONTEXT_TABLE
APPROVALS_TABLE = resources.APPROVALS_TABLE
MCP_KEY_PARAMETER = resources.MCP_KEY_PARAMETER
RECHECK_QUEUE = resources.RECHECK_QUEUE
REMEDIATION_QUEUE = resources.REMEDIATION_QUEUE
TRIGGER_QUEUE_NAME = "incident-alerts-lambda-trigger"  # on the alerts topic, as Lambda's SNS trigger
DIAGNOSES_QUEUE_NAME = "incident-diagnoses-reader"  # on the diagnoses topic, read by the drill and tests

# AWS profiles written by the sandbox.
OPERATOR = "operator"
MCP_SERVER = "mcp-server"
SUPERVISOR = "supervisor"
WATCHDOG = "watchdog"
CONSOLE = "console"  # incident-console: reads the incident tables, writes a decision on a plan
EXECUTOR = "executor"  # the executor: the allowlisted writes on the watched functions' resources
LAMBDA_SERVICE = "lambda-service"  # plays the Lambda service
APIGATEWAY_SERVICE = "apigateway-service"  # plays API Gateway: reads the API, writes its logs and metrics
SECOND_OPERATOR = "second-operator"  # admin of the second account
# The Lambda service of the second account: its user there is also named LAMBDA_SERVICE, the principal
# that account's execution roles trust; it runs (and only it may run) that account's functions.
SECOND_LAMBDA_SERVICE = "second-lambda-service"
SECOND_ACCOUNT_PROFILES = (SECOND_OPERATOR, SECOND_LAMBDA_SERVICE, REPORT_READER)
PROFILES = (
    OPERATOR,
    MCP_SERVER,
    SUPERVISOR,
    WATCHDOG,
    CONSOLE,
    EXECUTOR,
    LAMBDA_SERVICE,
    APIGATEWAY_SERVICE,
    SECOND_OPERATOR,
    SECOND_LAMBDA_SERVICE,
    REPORT_READER,
)


def input_event(index: int = 0, work_seconds: float = 0.0) -> dict[str, object]:
    """An invocation event for `data-processor`: process one input batch."""
    return {"key": INPUT_KEYS[index], "work_seconds": work_seconds}


def order_request(order_id: str = "0001-000") -> dict[str, object]:
    """An API Gateway proxy event for `orders-api`: read one order."""
    return {"httpMethod": "GET", "path": f"/orders/{order_id}", "pathParameters": {"order_id": order_id}}


def order_submission(
    amount: float = 42.5, customer: str = "c-0001", order_id: str | None = None
) -> dict[str, object]:
    """An API Gateway proxy event for `order-intake`: submit one order (a new id unless ``order_id``)."""
    order: dict[str, object] = {"amount": amount, "customer": customer}
    if order_id is not None:
        order["order_id"] = order_id
    return {
        "httpMethod": "POST",
        "path": "/orders",
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(order),
    }


def report_request(size_mb: int = 100, work_seconds: float = 1.0) -> dict[str, object]:
    """An invocation event for `report-builder`."""
    return {"size_mb": size_mb, "work_seconds": work_seconds}


def order_message(order_id: str = "0001-000", amount: float = 42.5) -> str:
    """The body of one orders-queue message for `order-worker`."""
    return json.dumps({"order_id": order_id, "amount": amount, "customer": "c-0001"})


def click(page: str = "/checkout") -> str:
    """A click event as the website's collector writes it to the clickstream."""
    return json.dumps({"page": page, "visitor": "v-0001", "at": "2026-11-30T08:00:00Z"})


def order_event(order_id: str = "0001-000", status: str = "shipped") -> str:
    """The message of one order-events notification for `order-notifier`."""
    return json.dumps({"order_id": order_id, "status": status})
