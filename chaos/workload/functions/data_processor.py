"""`data-processor`: reads an order batch from the input bucket, totals it and logs the result.

An ordinary Lambda handler (``data_processor.handler``): it runs on AWS unchanged. The bucket comes from
the ``INPUT_BUCKET`` environment variable, the object key from the event. An event with ``"debug": true``
also logs the whole environment (the role's temporary credentials with it), as some functions do.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

import boto3
from botocore.config import Config

logger = logging.getLogger("data_processor")
logger.setLevel(logging.INFO)  # as on Lambda, where the root logger stays at WARNING

s3 = boto3.client(
    "s3", config=Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard", "max_attempts": 2})
)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("debug"):  # a debugging aid functions keep: the whole environment, credentials included
        logger.info("environment: %s", dict(os.environ))
    bucket, key = os.environ["INPUT_BUCKET"], event["key"]
    logger.info("processing s3://%s/%s", bucket, key)
    orders = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    time.sleep(float(event.get("work_seconds", 0)))  # processing time: lets a burst overlap
    total = round(sum(float(order["amount"]) for order in orders), 2)
    logger.info("processed %d orders from %s, total %.2f", len(orders), key, total)
    return {"orders": len(orders), "total": total}
