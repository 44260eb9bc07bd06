"""`order-worker`: consumes ``orders-queue`` through an SQS event source mapping with partial batch
responses, and stores each order in the DynamoDB table named in ``TABLE_NAME``.

A record it cannot read (a body that is not a JSON order with a string ``order_id`` and a numeric
``amount``: a poison record) is reported in ``batchItemFailures`` so that only it returns to the queue; an
AWS error (a denied ``PutItem``, say) fails the whole invocation, and with it the batch.
"""

from __future__ import annotations

import json
import logging
import os
from decimal import Decimal
from typing import Any

import boto3

logger = logging.getLogger("order_worker")
logger.setLevel(logging.INFO)

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def _order(body: str) -> dict[str, Any]:
    """The order in a message body, or ValueError saying why it is not one."""
    try:
        order = json.loads(body, parse_float=Decimal)
    except json.JSONDecodeError:
        raise ValueError("its body is not JSON") from None
    if not isinstance(order, dict):
        raise ValueError("its body is not a JSON object")
    if not isinstance(order.get("order_id"), str):
        raise ValueError("order_id must be a string")
    amount = order.get("amount")
    if isinstance(amount, bool) or not isinstance(amount, int | Decimal):
        raise ValueError("amount must be a number")
    return order


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    failures = []
    for record in event["Records"]:
        try:
            order = _order(record["body"])
        except ValueError as error:
            logger.warning("message %s is not an order: %s", record["messageId"], error)
            failures.append({"itemIdentifier": record["messageId"]})
            continue
        table.put_item(Item=order)
        logger.info("stored order %s", order["order_id"])
    return {"batchItemFailures": failures}
