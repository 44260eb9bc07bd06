"""`orders-api`: an API-style function (API Gateway proxy events) over the DynamoDB table named in
``TABLE_NAME``. ``GET /orders/{id}`` reads an order, ``POST /orders`` writes one."""

from __future__ import annotations

import json
import logging
import os
import uuid
from decimal import Decimal
from typing import Any

import boto3

logger = logging.getLogger("orders_api")
logger.setLevel(logging.INFO)

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def _response(status: int, body: Any) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body, default=str),
    }


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    method = event.get("httpMethod", "GET")
    if method == "POST":
        order = json.loads(event.get("body") or "{}", parse_float=Decimal)
        order.setdefault("order_id", str(uuid.uuid4()))
        table.put_item(Item=order)
        logger.info("stored order %s", order["order_id"])
        return _response(201, {"order_id": order["order_id"]})
    order_id = (event.get("pathParameters") or {}).get("order_id", "")
    item = table.get_item(Key={"order_id": order_id}).get("Item")
    if item is None:
        logger.info("order %s not found", order_id)
        return _response(404, {"message": f"order {order_id} not found"})
    return _response(200, item)
