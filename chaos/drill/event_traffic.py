"""Traffic on the world's event paths, as its callers send it: order messages into orders-queue (read by
order-worker's event source mapping), order events published to the order-events topic (delivered to
order-notifier asynchronously) and clicks written to the clickstream (read by click-aggregator's Kinesis
mapping), each to its two shards in turn, the second first. A poison message is one a consumer cannot
read at all."""

from __future__ import annotations

import time
from typing import Any, Final, Literal

import boto3

from chaos.sandbox import names

EventTraffic = Literal["queue", "poison-queue", "publish", "poison-publish", "stream"]
EVENT_TRAFFIC: Final[frozenset[str]] = frozenset(
    {"queue", "poison-queue", "publish", "poison-publish", "stream"}
)
# Explicit hash keys in the clickstream's two shards (each owns half of the 128-bit key space).
SHARD_HASH_KEYS: Final = ("0", str(2**127 + 1))
DRILL_ORDER: Final = "drill-order"  # every order the drill's traffic writes has this id (deleted after)
POISON: Final = "not an order: {{"
# The queues a scenario may leave messages in; emptied before the next one so it reads only its own.
QUEUES: Final = (names.ORDERS_QUEUE, names.ORDERS_DLQ, names.ORDER_NOTIFIER_DLQ)


def function_of(traffic: EventTraffic) -> str:
    if traffic == "stream":
        return names.CLICK_FUNCTION
    return names.ORDER_WORKER_FUNCTION if "queue" in traffic else names.ORDER_NOTIFIER_FUNCTION


def put_clicks(
    operator: boto3.Session, count: int, shards: tuple[int, ...] = (1, 0), page: str = "/checkout"
) -> int:
    """``count`` clicks on the clickstream, on ``shards`` in turn; the number written."""
    kinesis = operator.client("kinesis")
    for n in range(count):
        kinesis.put_record(
            StreamName=names.CLICK_STREAM,
            Data=names.click(page).encode(),
            PartitionKey=f"visitor-{n}",
            ExplicitHashKey=SHARD_HASH_KEYS[shards[n % len(shards)]],
        )
    return count


def send(operator: boto3.Session, traffic: EventTraffic, count: int) -> int:
    """Send ``count`` messages (the last one poison for the poison kinds); the number sent."""
    if traffic == "stream":
        return put_clicks(operator, count)
    bodies = [names.order_message(order_id=DRILL_ORDER) for _ in range(count)]
    if traffic in ("publish", "poison-publish"):
        bodies = [names.order_event(order_id=DRILL_ORDER) for _ in range(count)]
    if traffic.startswith("poison"):
        bodies[-1] = POISON
    if traffic in ("queue", "poison-queue"):
        sqs = operator.client("sqs")
        url = sqs.get_queue_url(QueueName=names.ORDERS_QUEUE)["QueueUrl"]
        for body in bodies:
            sqs.send_message(QueueUrl=url, MessageBody=body)
    else:
        sns = operator.client("sns")
        topic = _topic_arn(operator)
        for body in bodies:
            sns.publish(TopicArn=topic, Message=body)
    return len(bodies)


def _topic_arn(operator: boto3.Session) -> str:
    account = operator.client("sts").get_caller_identity()["Account"]
    return f"arn:aws:sns:{operator.region_name}:{account}:{names.ORDER_EVENTS_TOPIC}"


def empty(operator: boto3.Session) -> int:
    """Delete every visible message of the world's event queues (data-plane calls CloudTrail does not
    record); the number deleted."""
    sqs = operator.client("sqs")
    deleted = 0
    for queue in QUEUES:
        url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
        while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
            sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            deleted += len(entries)
    return deleted


def waiting(operator: boto3.Session, queue: str = names.ORDERS_QUEUE) -> int:
    """Messages in ``queue``, visible or in flight."""
    sqs = operator.client("sqs")
    url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
    attributes: dict[str, Any] = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def drained(operator: boto3.Session, timeout_seconds: float, queue: str = names.ORDERS_QUEUE) -> bool:
    """Whether ``queue`` empties within ``timeout_seconds`` (its consumer processes what waited)."""
    deadline = time.monotonic() + timeout_seconds
    while waiting(operator, queue):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True
