"""`report-builder`: renders a report in memory and stores it in the bucket named in ``REPORT_BUCKET``.

Hungry on purpose: it holds ``REPORT_MB`` (or the event's ``size_mb``) of rendered report in memory and
works for ``work_seconds``, so its memory size and timeout are close to what it needs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from typing import Any

import boto3

logger = logging.getLogger("report_builder")
logger.setLevel(logging.INFO)

s3 = boto3.client("s3")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    size_mb = int(event.get("size_mb", os.environ.get("REPORT_MB", "100")))
    started = time.monotonic()
    rendered = b"r" * (size_mb << 20)  # the whole report, resident in memory
    digest = hashlib.sha256(rendered).hexdigest()
    time.sleep(max(0.0, float(event.get("work_seconds", 1.0)) - (time.monotonic() - started)))
    key = f"reports/{context.aws_request_id}.json"
    summary = {"size_mb": size_mb, "sha256": digest}
    s3.put_object(Bucket=os.environ["REPORT_BUCKET"], Key=key, Body=json.dumps(summary).encode())
    logger.info("report of %d MB stored at %s", size_mb, key)
    return summary
