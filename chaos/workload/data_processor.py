"""The `data-processor` Lambda handler: reads an order batch from S3, totals it and logs the result.

It is an ordinary handler — deployed as ``data_processor.handler`` it runs on AWS unchanged. The local
runtime passes ``session`` (credentials of the function's role); on AWS it is the default session.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import boto3
from botocore.config import Config

logger = logging.getLogger("data_processor")
logger.setLevel(logging.INFO)  # as on Lambda, where the root logger stays at WARNING

_CLIENT_CONFIG = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard", "max_attempts": 2})


def handler(event: dict[str, Any], context: Any, *, session: boto3.Session | None = None) -> dict[str, Any]:
    s3 = (session or boto3.Session()).client("s3", config=_CLIENT_CONFIG)
    bucket, key = event["bucket"], event["key"]
    logger.info("processing s3://%s/%s", bucket, key)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    orders = json.loads(body)
    # Simulated processing time: lets a burst overlap, as real work would.
    time.sleep(float(event.get("work_seconds", 0)))
    total = round(sum(float(order["amount"]) for order in orders), 2)
    logger.info("processed %d orders from %s, total %.2f", len(orders), key, total)
    return {"orders": len(orders), "total": total}
