"""Fixed names of the sandbox world (see DESIGN.md "Fixed names")."""

from __future__ import annotations

ACCOUNT_ID = "123456789012"
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
SECURITY_GROUP_NAME = "data-processor-sg"
CHAOS_TAG = ("chaos-allowed", "true")

TOPIC_NAME = "incident-alerts"
TRIGGER_QUEUE_NAME = "incident-alerts-lambda-trigger"
STATE_TABLE = "incident-state"
CONTEXT_TABLE = "incident-context"
MCP_KEY_PARAMETER = "/incident-response/mcp-api-key"

# AWS profiles written by the sandbox.
OPERATOR = "operator"
MCP_SERVER = "mcp-server"
SUPERVISOR = "supervisor"
WATCHDOG = "watchdog"
LAMBDA_SERVICE = "lambda-service"  # plays the Lambda service and CloudWatch alarms
PROFILES = (OPERATOR, MCP_SERVER, SUPERVISOR, WATCHDOG, LAMBDA_SERVICE)


def input_event(index: int = 0, work_seconds: float = 0.0) -> dict[str, object]:
    """An invocation event for `data-processor`: process one input batch."""
    return {"bucket": INPUT_BUCKET, "key": INPUT_KEYS[index], "work_seconds": work_seconds}
