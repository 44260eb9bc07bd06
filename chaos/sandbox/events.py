"""The events Lambda hands a function for an SQS batch, an SNS notification and a Kinesis batch, for invoking
the world's event-driven functions directly (``incident-sandbox invoke``, tests).

Their shapes follow AWS's examples: "Example Amazon SQS message event" in
https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Example Amazon SNS message event" in
https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html and "Example event" in
https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html (its sequence numbers made up here). What the
examples leave open, chosen here: the sender of a message is the account (``SenderId``; AWS gives the sending
principal's id), a direct invocation's receipt handle is a random token that names no received message, and
the sandbox does not sign notifications (``Signature`` and ``SigningCertUrl`` are empty).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Any


def sqs_record(body: str, queue_arn: str, message_id: str | None = None) -> dict[str, Any]:
    """One record of an SQS event: a message received for the first time, just now."""
    now_ms = str(int(time.time() * 1000))
    _, _, _, region, account, _ = queue_arn.split(":", 5)
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": secrets.token_urlsafe(48),
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": now_ms,
            "SenderId": account,
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),  # noqa: S324 - SQS's own digest of the body
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def sqs_event(queue_arn: str, *bodies: str) -> dict[str, Any]:
    """An SQS event source mapping's event: one record per body."""
    return {"Records": [sqs_record(body, queue_arn) for body in bodies]}


def kinesis_event(stream_arn: str, *data: str) -> dict[str, Any]:
    """A Kinesis event source mapping's event: one record per datum, on the stream's first shard."""
    region, shard, now = stream_arn.split(":")[3], "shardId-000000000000", round(time.time(), 3)
    records = []
    for n, datum in enumerate(data):
        sequence = f"{int(now * 1000)}{n:06d}"
        records.append(
            {
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": "1",
                    "sequenceNumber": sequence,
                    "data": base64.b64encode(datum.encode()).decode(),
                    "approximateArrivalTimestamp": now,
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": f"{shard}:{sequence}",
                "eventName": "aws:kinesis:record",
                "awsRegion": region,
                "eventSourceARN": stream_arn,
            }
        )
    return {"Records": records}


def sns_event(
    topic_arn: str, message: str, subscription_arn: str | None = None, subject: str | None = None
) -> dict[str, Any]:
    """The event SNS invokes a subscribed function with: one notification of ``message``."""
    subscription = subscription_arn or f"{topic_arn}:{uuid.uuid4()}"
    region = topic_arn.split(":")[3]
    return {
        "Records": [
            {
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription,
                "EventSource": "aws:sns",
                "Sns": {
                    "SignatureVersion": "1",
                    "Timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "Signature": "",
                    "SigningCertUrl": "",
                    "MessageId": str(uuid.uuid4()),
                    "Message": message,
                    "MessageAttributes": {},
                    "Type": "Notification",
                    "UnsubscribeUrl": f"https://sns.{region}.amazonaws.com/?Action=Unsubscribe"
                    f"&SubscriptionArn={subscription}",
                    "TopicArn": topic_arn,
                    "Subject": subject,
                },
            }
        ]
    }
