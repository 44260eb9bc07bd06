"""`click-aggregator`: counts page views from the ``clickstream`` Kinesis stream, read through an event
source mapping with Lambda's stream defaults.

A record that is not a JSON click (an object with a string ``page``) fails the whole invocation, as a
handler that trusts its producer would: Lambda then sends the same batch again and again, and the shard's
later records wait behind it.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import Counter
from typing import Any

logger = logging.getLogger("click_aggregator")
logger.setLevel(logging.INFO)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    pages: Counter[str] = Counter()
    for record in event["Records"]:
        click = json.loads(base64.b64decode(record["kinesis"]["data"]))
        pages[click["page"]] += 1
    logger.info("counted %d clicks on %d pages", sum(pages.values()), len(pages))
    return {"pages": dict(pages)}
