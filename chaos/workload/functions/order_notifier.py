"""`order-notifier`: invoked asynchronously by the ``order-events`` SNS topic; tells the customer about
each order event it carries.

An event whose message is not a JSON order event (a string ``order_id`` and ``status``: a poison event)
fails the invocation with a ValueError, so that Lambda retries it and then sends it to the function's
dead-letter queue.
"""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger("order_notifier")
logger.setLevel(logging.INFO)


def _order_event(message: str) -> dict[str, Any]:
    try:
        event = json.loads(message)
    except json.JSONDecodeError:
        raise ValueError("its message is not JSON") from None
    if not isinstance(event, dict):
        raise ValueError("its message is not a JSON object")
    for key in ("order_id", "status"):
        if not isinstance(event.get(key), str):
            raise ValueError(f"{key} must be a string")
    return event


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    notified = []
    for record in event["Records"]:
        notification = record["Sns"]
        try:
            order_event = _order_event(notification["Message"])
        except ValueError as error:
            raise ValueError(f"order event {notification['MessageId']} cannot be read: {error}") from None
        logger.info("order %s is %s: customer notified", order_event["order_id"], order_event["status"])
        notified.append(order_event["order_id"])
    return {"notified": notified}
