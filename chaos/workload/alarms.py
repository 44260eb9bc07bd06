"""SNS notifications (the alarms' and the supervisor's) read from an SQS queue subscribed to their topic,
as they are or as the SNS events Lambda's trigger delivers. The alarms themselves: ``deploy/alarms.py``."""

from __future__ import annotations

import json
from typing import Any

# SNS spells two keys differently in the SQS envelope and in the Lambda event.
_ENVELOPE_TO_EVENT_KEYS = {"SigningCertURL": "SigningCertUrl", "UnsubscribeURL": "UnsubscribeUrl"}


def sns_event_from_envelope(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """Turn an SNS notification delivered to SQS into the event Lambda's SNS trigger would deliver."""
    record = {_ENVELOPE_TO_EVENT_KEYS.get(k, k): v for k, v in envelope.items()}
    record.setdefault("Subject", None)
    record.setdefault("MessageAttributes", {})
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": record,
            }
        ]
    }


def drain_envelopes(sqs: Any, queue_url: str, *, wait_seconds: int = 0) -> list[dict[str, Any]]:
    """Receive and delete every SNS notification waiting on an SQS queue subscribed to a topic: the
    envelopes (Subject, Message, MessageAttributes, ...), oldest first as far as SQS tells."""
    envelopes: list[dict[str, Any]] = []
    while True:
        response = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds if not envelopes else 0
        )
        messages = response.get("Messages", [])
        if not messages:
            return envelopes
        for message in messages:
            envelopes.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def drain_sns_events(
    sqs: Any, queue_url: str, subscription_arn: str, *, wait_seconds: int = 0
) -> list[dict[str, Any]]:
    """Receive every notification waiting on the trigger queue as SNS Lambda events (one record each),
    deleting them from the queue as Lambda's poller would after a successful handoff."""
    return [
        sns_event_from_envelope(envelope, subscription_arn)
        for envelope in drain_envelopes(sqs, queue_url, wait_seconds=wait_seconds)
    ]
