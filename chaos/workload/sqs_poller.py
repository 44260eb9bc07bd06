"""The Lambda service's pollers for SQS event source mappings (docs/sandbox.md, "SQS event source mappings").

``poll_once()`` lists the account's mappings (as ``lambda-service``) and, for each ``Enabled`` one on an SQS
queue, does what Lambda does (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html) with the
function's execution role: ``GetQueueAttributes``, ``ReceiveMessage`` (up to ``BatchSize``; the queue's
visibility timeout hides what it returns), one synchronous invocation with the SQS event, then
``DeleteMessage``: every message on success; with ``ReportBatchItemFailures``, all but the
``batchItemFailures``; none after a function error, or a response the partial-batch rules call a complete
failure (services-sqs-errorhandling.html): the messages come back after the visibility timeout, and the
queue's redrive policy moves them to its dead-letter queue after ``maxReceiveCount`` receives.

``MaximumBatchingWindowInSeconds`` never blocks: a batch is what immediate receives (10 messages each, as
SQS allows) return until ``BatchSize`` is reached or the queue has no more visible messages; the poller never
waits for more. LastProcessingResult is reported through the emulator's control route when it changes.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from chaos.workload.runtime import LocalLambdaRuntime, assumed_role_session

CONTROL_PATH = "/_sandbox/lambda/event-source-mappings/"
POLL_VIEW_PATH = "/_sandbox/lambda/sqs-poll-view"  # extensions/event_source_mappings.py
FULL_POLL_SECONDS = 2.0  # a full poll at least this often, whatever the queues hold
OK = "OK"
FUNCTION_FAILED = "PROBLEM: Function call failed"
# AWS documents no LastProcessingResult for an SQS mapping whose role is refused; this is the wording of
# EVENT_SOURCE_AUTHZ_ERROR in the Amazon MQ mapping errors (services-mq-errors.html).
ACCESS_PROBLEM = "PROBLEM: Lambda does not have the required permissions to access the event source."
SQS_RECEIVE_MAX = 10
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=5, read_timeout=30)
_ROLE_SESSION_SECONDS = 600.0


@dataclass(frozen=True)
class BatchOutcome:
    """What one mapping's poll did."""

    uuid: str
    function_arn: str
    received: int
    deleted: int
    result: str | None  # the LastProcessingResult it leads to; None when the queue was empty


class SqsPoller:
    """``platform`` is the Lambda service's session (``lambda-service``); ``runtime`` runs the functions."""

    def __init__(self, runtime: LocalLambdaRuntime, platform: boto3.Session) -> None:
        self._runtime = runtime
        self._endpoint = str(platform.client("lambda").meta.endpoint_url).rstrip("/")
        self._roles: dict[str, tuple[float, Any]] = {}  # role ARN → (when assumed, its SQS client)
        self._clients: dict[int, Any] = {}  # each account's Lambda service's lambda client
        self._last_full: tuple[float, str | None] = (0.0, None)  # when, and the mappings' digest then
        self._queues: set[str] = set()  # the queues of every SQS mapping, any state, the last time listed

    def poll_once(self) -> list[BatchOutcome]:
        """One poll of every enabled SQS mapping of every account, one after the other; nothing when every
        queue the last full poll read is empty and that poll is recent (see ``_idle``)."""
        view = self._view()
        if self._idle(view):
            return []
        outcomes = []
        for platform in self._runtime.sessions():
            for mapping in self._mappings(platform):
                if mapping.get("State") != "Enabled" or ":sqs:" not in str(mapping.get("EventSourceArn")):
                    continue
                outcome = self._poll(platform, mapping)
                if outcome.result is not None and outcome.result != mapping.get("LastProcessingResult"):
                    self._report(outcome.uuid, outcome.result)
                outcomes.append(outcome)
        self._last_full = (time.monotonic(), view.get("mappings") if view else None)
        return outcomes

    def _view(self) -> dict[str, Any] | None:
        return poll_view(self._endpoint)

    def _idle(self, view: dict[str, Any] | None) -> bool:
        """Whether this poll can be skipped: the last full poll is less than ``FULL_POLL_SECONDS`` old, no
        mapping changed since, and no queue of an SQS mapping holds a visible message. Lambda's pollers
        long-poll (ReceiveMessage's WaitTimeSeconds) and answer as soon as a message arrives; short polls
        every half second in their place would cost the sandbox a dozen requests a second for nothing. What
        a skipped poll would have missed (a role's changed permissions) a full poll sees within
        ``FULL_POLL_SECONDS``."""
        polled_at, digest = self._last_full
        if view is None or digest != view.get("mappings") or time.monotonic() - polled_at > FULL_POLL_SECONDS:
            return False
        return not any(count for arn, count in view.get("visible", {}).items() if arn in self._queues)

    def _lambda(self, platform: boto3.Session) -> Any:
        if id(platform) not in self._clients:
            self._clients[id(platform)] = platform.client("lambda", config=_CLIENT_CONFIG)
        return self._clients[id(platform)]

    def _mappings(self, platform: boto3.Session) -> list[dict[str, Any]]:
        pages = self._lambda(platform).get_paginator("list_event_source_mappings").paginate()
        found = [m for page in pages for m in page.get("EventSourceMappings", [])]
        self._queues |= {
            str(m.get("EventSourceArn")) for m in found if ":sqs:" in str(m.get("EventSourceArn"))
        }
        return found

    def _sqs(self, platform: boto3.Session, role_arn: str) -> Any:
        """An SQS client with the role's credentials, kept as long as its role session."""
        cached = self._roles.get(role_arn)
        if cached is None or time.monotonic() - cached[0] > _ROLE_SESSION_SECONDS:
            session = assumed_role_session(platform, role_arn, "sqs-poller")
            cached = (time.monotonic(), session.client("sqs", config=_CLIENT_CONFIG))
            self._roles[role_arn] = cached
        return cached[1]

    def _poll(self, platform: boto3.Session, mapping: dict[str, Any]) -> BatchOutcome:
        """Poll with the function's role, as its own account's Lambda service assumes it."""
        uuid, function_arn, queue_arn = mapping["UUID"], mapping["FunctionArn"], mapping["EventSourceArn"]
        role_arn = self._lambda(platform).get_function(FunctionName=function_arn)["Configuration"]["Role"]
        sqs = self._sqs(platform, role_arn)
        queue_url = _queue_url(str(sqs.meta.endpoint_url), queue_arn)
        try:
            sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])
            messages = receive_batch(sqs, queue_url, int(mapping.get("BatchSize") or SQS_RECEIVE_MAX))
        except ClientError as error:
            if _access_denied(error):
                return BatchOutcome(uuid, function_arn, 0, 0, ACCESS_PROBLEM)
            raise
        if not messages:
            return BatchOutcome(uuid, function_arn, 0, 0, None)
        event = {"Records": [sqs_record(m, queue_arn) for m in messages]}
        parts = function_arn.split(":")  # the ARN, not the name: the runtime runs it in its own account
        invocation = self._runtime.invoke(":".join(parts[:7]), event, parts[7] if len(parts) > 7 else None)
        if invocation.status != "succeeded":
            return BatchOutcome(uuid, function_arn, len(messages), 0, FUNCTION_FAILED)
        failed: set[str] | None = set()
        if "ReportBatchItemFailures" in (mapping.get("FunctionResponseTypes") or []):
            failed = batch_item_failures(invocation.result, {m["MessageId"] for m in messages})
        if failed is None:  # a response that counts as a complete failure
            return BatchOutcome(uuid, function_arn, len(messages), 0, FUNCTION_FAILED)
        done = [m for m in messages if m["MessageId"] not in failed]
        try:
            deleted = delete_messages(sqs, queue_url, done)
        except ClientError as error:
            if _access_denied(error):
                return BatchOutcome(uuid, function_arn, len(messages), 0, ACCESS_PROBLEM)
            raise
        return BatchOutcome(uuid, function_arn, len(messages), deleted, OK)

    def _report(self, uuid: str, result: str) -> None:
        report_result(self._endpoint, uuid, result)


def poll_view(endpoint: str) -> dict[str, Any] | None:
    """The emulator's digest of every mapping, each queue's visible messages and each stream's records;
    None if unreadable."""
    try:
        with urllib.request.urlopen(f"{endpoint}{POLL_VIEW_PATH}", timeout=5) as answer:  # noqa: S310
            view: dict[str, Any] = json.loads(answer.read())
    except (OSError, ValueError):
        return None
    return view


def report_result(endpoint: str, mapping_uuid: str, result: str) -> None:
    """Set the mapping's LastProcessingResult through the emulator's control route."""
    request = urllib.request.Request(  # noqa: S310 - the sandbox emulator's own loopback URL
        f"{endpoint}{CONTROL_PATH}{mapping_uuid}",
        data=json.dumps({"LastProcessingResult": result}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5):  # noqa: S310
        pass


def _queue_url(endpoint: str, queue_arn: str) -> str:
    """The queue's URL, built from its ARN (Lambda needs no sqs:GetQueueUrl)."""
    _, _, _, _, account, name = queue_arn.split(":", 5)
    return f"{endpoint.rstrip('/')}/{account}/{name}"


def _access_denied(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in ("AccessDenied", "AccessDeniedException") or code.endswith("AccessDenied")


def receive_batch(sqs: Any, queue_url: str, batch_size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while len(messages) < batch_size:
        answer = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(SQS_RECEIVE_MAX, batch_size - len(messages)),
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        received = answer.get("Messages", [])
        messages += received
        if not received:
            break
    return messages


def delete_messages(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> int:
    """One ``DeleteMessage`` each: moto 5.2.5 authorizes ``DeleteMessageBatch`` as an IAM action of its
    own, which AWS does not have (a batch needs ``sqs:DeleteMessage``, sqs-batch-api.html), so a role that
    AWS lets delete would be refused here."""
    for message in messages:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


def sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """One record of the event Lambda sends (with-sqs.html, "Example standard queue message event")."""
    attributes = message.get("Attributes", {})
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            key: str(attributes[key])
            for key in (
                "ApproximateReceiveCount",
                "SentTimestamp",
                "SenderId",
                "ApproximateFirstReceiveTimestamp",
            )
            if key in attributes
        },
        "messageAttributes": {
            name: _message_attribute(value)
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """SQS's ``MessageAttributeValue`` as the Lambda event spells it (camelCase, list fields always
    present), as in the aws_lambda_events crate's example-sqs-event.json fixture."""
    answer: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value["DataType"]}
    if "StringValue" in value:
        answer["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        answer["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return answer


def batch_item_failures(response: Any, message_ids: set[str]) -> set[str] | None:
    """The message ids a partial batch response names as failed, or None when Lambda treats the response as
    a complete failure (services-sqs-errorhandling.html, "Success and failure conditions"): an empty or null
    response, or an empty or null ``batchItemFailures``, is a complete success; a response that is not a
    JSON object, an ``itemIdentifier`` that is empty, null, under another key or not a message of the batch is
    a complete failure."""
    if response is None or response == "":
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    named: set[str] = set()
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            return None
        named.add(identifier)
    return named
