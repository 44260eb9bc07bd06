"""Where the sandbox's Lambda service sends the outcome of an asynchronous invocation: the invocation record
to an on-success or on-failure destination, the event to the function's dead-letter queue. Every delivery
is made with the function's role, so a role that may not send is refused by the emulator's IAM.

Shapes (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html):
- the invocation record: ``version`` "1.0", ``timestamp``, ``requestContext{requestId, functionArn,
  condition, approximateInvokeCount}``, ``requestPayload``, ``responseContext{statusCode, executedVersion,
  functionError}``, ``responsePayload``; to SQS and SNS as the message, to a function as its payload;
- the dead-letter message: the event as it was sent, with the ``RequestID`` (String), ``ErrorCode``
  (Number, "the HTTP status code") and ``ErrorMessage`` (String, "the first 1 KB of the error message")
  message attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import boto3
from botocore.exceptions import ClientError

from chaos.workload.runtime import Invocation

Kind = Literal["on_success", "on_failure", "dead_letter"]
Condition = Literal["Success", "RetriesExhausted", "EventAgeExceeded"]
ERROR_MESSAGE_BYTES = 1024
REFUSED_STATUS = 502  # the Invoke API's status for an environment-variable key it cannot decrypt with


@dataclass(frozen=True)
class Delivery:
    kind: Kind
    target_arn: str
    delivered: bool
    error: str | None = None
    emulated: bool = True  # False: a destination type the sandbox does not deliver to (no metric counted)


def _timestamp(at: float) -> str:
    moment = datetime.fromtimestamp(at, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def error_parts(invocation: Invocation) -> tuple[str, str]:
    """The error's type and message, as the runtime reported them (``error`` is ``"<type>: <message>"``
    for a function's own error, the platform's text otherwise)."""
    error_type = invocation.error_type or "Unknown"
    error = invocation.error or ""
    return error_type, error.removeprefix(f"{error_type}: ")


def invocation_record(
    *,
    request_id: str,
    function_arn: str,
    condition: Condition,
    invoke_count: int,
    payload: Any,
    last: Invocation | None,
    at: float,
) -> dict[str, Any]:
    """The record Lambda sends a destination. ``last`` is the last attempt: ``None`` (or throttled) when the
    function never ran; the docs show no record for that case, so the record then carries Lambda's
    throttling answer (status 429, ``TooManyRequestsException``): our choice."""
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": _timestamp(at),
        "requestContext": {
            "requestId": request_id,
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": payload,
    }
    version = last.version if last is not None else "$LATEST"
    if last is None or last.status == "throttled":
        record["responseContext"] = {"statusCode": 429, "executedVersion": version}
        record["responsePayload"] = {
            "errorMessage": "Rate Exceeded.",
            "errorType": "TooManyRequestsException",
        }
    elif last.status == "succeeded":
        record["responseContext"] = {"statusCode": 200, "executedVersion": version}
        record["responsePayload"] = last.result
    elif last.status == "refused":  # Invoke's own error (HTTP 502), not the function's: our choice as well
        error_type, message = error_parts(last)
        record["responseContext"] = {"statusCode": REFUSED_STATUS, "executedVersion": version}
        record["responsePayload"] = {"errorMessage": message, "errorType": error_type}
    else:
        error_type, message = error_parts(last)
        record["responseContext"] = {
            "statusCode": 200,
            "executedVersion": version,
            "functionError": "Unhandled",
        }
        record["responsePayload"] = {"errorMessage": message, "errorType": error_type}
    return record


def dead_letter_attributes(request_id: str, last: Invocation | None) -> dict[str, dict[str, str]]:
    """``ErrorCode``: 200 after a function error (the status of an invocation that returned one, as the
    record's ``responseContext.statusCode``), 429 when the function was throttled until the event expired;
    the docs name only "the HTTP status code", so these values are our choice."""
    if last is None or last.status == "throttled":
        code, message = "429", "Rate Exceeded."
    else:
        code = str(REFUSED_STATUS) if last.status == "refused" else "200"
        message = error_parts(last)[1]
    clipped = message.encode()[:ERROR_MESSAGE_BYTES].decode(errors="ignore")
    return {
        "RequestID": {"DataType": "String", "StringValue": request_id},
        "ErrorCode": {"DataType": "Number", "StringValue": code},
        "ErrorMessage": {"DataType": "String", "StringValue": clipped},
    }


def _queue_url(sqs: Any, arn: str) -> str:
    _, _, _, _, account, name = arn.split(":", 5)
    return f"{sqs.meta.endpoint_url}/{account}/{name}"


def send(
    role: boto3.Session,
    kind: Kind,
    target_arn: str,
    body: str,
    attributes: dict[str, dict[str, str]] | None = None,
) -> Delivery:
    """Send ``body`` to an SQS queue, an SNS topic or (destinations only) a function, as ``role``."""
    service = target_arn.split(":")[2] if target_arn.count(":") >= 5 else ""
    extra = {"MessageAttributes": attributes} if attributes else {}
    try:
        if service == "sqs":
            sqs = role.client("sqs")
            sqs.send_message(QueueUrl=_queue_url(sqs, target_arn), MessageBody=body, **extra)
        elif service == "sns":
            role.client("sns").publish(TopicArn=target_arn, Message=body, **extra)
        elif service == "lambda" and kind != "dead_letter":
            role.client("lambda").invoke(
                FunctionName=target_arn, InvocationType="Event", Payload=body.encode()
            )
        else:
            reason = f"the sandbox does not deliver to {service or target_arn}"
            return Delivery(kind, target_arn, False, reason, emulated=False)
    except ClientError as error:
        detail = error.response.get("Error", {})
        return Delivery(kind, target_arn, False, f"{detail.get('Code', '')}: {detail.get('Message', error)}")
    return Delivery(kind, target_arn, True)
