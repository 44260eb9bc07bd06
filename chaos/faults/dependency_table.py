"""The DynamoDB table of ``dependency-remove``: saved (definition, settings, tags and every item, binary
attributes in base64), deleted, and recreated from what was saved.

Refusals name only what is refused; the fault says which fault and function refuse.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import MAX_VALUE_BYTES
from chaos.faults.support import read_unless, shown_call, too_big_for_ledger

WAIT_SECONDS = 300.0
BATCH = 25  # BatchWriteItem's limit


def _wait(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not done():
        if time.monotonic() > deadline:
            raise ChaosError(f"{what} did not happen within {WAIT_SECONDS:.0f} s; run restore again later")
        time.sleep(1.0)


# --- items as JSON --------------------------------------------------------------------------------------


def _to_json(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    return value


def _from_json(attribute: dict[str, Any]) -> dict[str, Any]:
    """One typed attribute value (``{"S": ...}``, ``{"B": ...}``, ``{"M": {...}}``...) back from JSON."""
    (kind, value), *_ = attribute.items()
    if kind == "B":
        return {"B": base64.b64decode(value)}
    if kind == "BS":
        return {"BS": [base64.b64decode(v) for v in value]}
    if kind == "M":
        return {"M": {k: _from_json(v) for k, v in value.items()}}
    if kind == "L":
        return {"L": [_from_json(v) for v in value]}
    return {kind: value}


# --- capture --------------------------------------------------------------------------------------------


def _throughput(described: dict[str, Any]) -> dict[str, Any]:
    units = described.get("ProvisionedThroughput") or {}
    return {"ProvisionedThroughput": {k: units[k] for k in ("ReadCapacityUnits", "WriteCapacityUnits")}}


def _definition(table: str, d: dict[str, Any]) -> dict[str, Any]:
    """The CreateTable parameters that make ``table`` (``d``, as DescribeTable describes it) again."""
    billing = (d.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    provisioned = billing == "PROVISIONED"
    definition: dict[str, Any] = {
        "TableName": table,
        "KeySchema": d["KeySchema"],
        "AttributeDefinitions": d["AttributeDefinitions"],
        "BillingMode": billing,
        **(_throughput(d) if provisioned else {}),
    }
    if d.get("GlobalSecondaryIndexes"):
        definition["GlobalSecondaryIndexes"] = [
            {"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]}
            | (_throughput(i) if provisioned else {})
            for i in d["GlobalSecondaryIndexes"]
        ]
    if d.get("LocalSecondaryIndexes"):
        definition["LocalSecondaryIndexes"] = [
            {"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]}
            for i in d["LocalSecondaryIndexes"]
        ]
    if (d.get("StreamSpecification") or {}).get("StreamEnabled"):
        definition["StreamSpecification"] = d["StreamSpecification"]
    if (d.get("TableClassSummary") or {}).get("TableClass"):
        definition["TableClass"] = d["TableClassSummary"]["TableClass"]
    sse = d.get("SSEDescription") or {}
    if sse.get("SSEType") == "KMS":
        definition["SSESpecification"] = {
            "Enabled": True,
            "SSEType": "KMS",
            "KMSMasterKeyId": sse["KMSMasterKeyArn"],
        }
    return definition


def _tags(chaos: Chaos, table_arn: str) -> list[dict[str, str]]:
    tags: list[dict[str, str]] = []
    params: dict[str, Any] = {"ResourceArn": table_arn}
    while True:
        page = chaos.read("dynamodb", "list_tags_of_resource", **params)
        tags += page.get("Tags", [])
        if not page.get("NextToken"):
            return tags
        params["NextToken"] = page["NextToken"]


def _items(chaos: Chaos, table: str) -> list[dict[str, Any]]:
    """Every item as JSON; refused as soon as they would not fit the ledger."""
    items: list[dict[str, Any]] = []
    size = 0
    scan: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = chaos.read("dynamodb", "scan", **scan)
        for item in page["Items"]:
            items.append(_to_json(item))
            size += len(json.dumps(items[-1]))
        if size > MAX_VALUE_BYTES:
            raise too_big_for_ledger(f"the items of table {table} ({size} bytes so far)")
        if "LastEvaluatedKey" not in page:
            return items
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def capture_table(chaos: Chaos, table: str) -> dict[str, Any] | None:
    """The table's saved state, or None when there is no such table."""
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    if described is None:
        return None
    d = described["Table"]
    if d.get("DeletionProtectionEnabled"):
        raise ChaosRefused(f"table {table} has deletion protection")
    if int(d.get("TableSizeBytes", 0)) > MAX_VALUE_BYTES:
        raise too_big_for_ledger(f"table {table} ({d['TableSizeBytes']} bytes)")
    definition = _definition(table, d)
    tags = _tags(chaos, d["TableArn"])
    ttl = chaos.read("dynamodb", "describe_time_to_live", TableName=table)["TimeToLiveDescription"]
    backups = read_unless(
        chaos, ("UnknownOperationException",), "dynamodb", "describe_continuous_backups", TableName=table
    )
    pitr = (backups or {}).get("ContinuousBackupsDescription", {}).get("PointInTimeRecoveryDescription", {})
    return {
        "definition": definition,
        "created": d["CreationDateTime"].isoformat(),
        "tags": tags,
        "ttl": ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") else None,
        "pitr": pitr.get("PointInTimeRecoveryStatus") == "ENABLED",
        "items": _items(chaos, table),
    }


# --- remove and restore ---------------------------------------------------------------------------------


def table_created(chaos: Chaos, table: str) -> str | None:
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    return None if described is None else str(described["Table"]["CreationDateTime"].isoformat())


def _table_status(chaos: Chaos, table: str) -> str | None:
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    return None if described is None else str(described["Table"]["TableStatus"])


def remove_table(chaos: Chaos, table: str) -> None:
    chaos.call("dynamodb", "delete_table", TableName=table, tolerate=("ResourceNotFoundException",))
    if not chaos.dry_run:
        _wait(f"the deletion of table {table}", lambda: _table_status(chaos, table) is None)


def _put_items(chaos: Chaos, table: str, saved_items: list[dict[str, Any]]) -> None:
    items = [{k: _from_json(v) for k, v in item.items()} for item in saved_items]
    for start in range(0, len(items), BATCH):
        pending = {table: [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH]]}
        for attempt in range(8):
            shown = {"RequestItems": {table: f"<{len(pending[table])} items>"}}
            done = shown_call(chaos, "dynamodb", "batch_write_item", shown, RequestItems=pending)
            pending = (done or {}).get("UnprocessedItems") or {}
            if not pending:
                break
            time.sleep(0.1 * 2**attempt)
        else:
            raise ChaosError(f"table {table}: DynamoDB kept items unprocessed; run restore again")


def restore_table(chaos: Chaos, saved: dict[str, Any]) -> None:
    table = saved["definition"]["TableName"]
    if _table_status(chaos, table) == "DELETING" and not chaos.dry_run:
        _wait(f"the deletion of table {table}", lambda: _table_status(chaos, table) is None)
    created = table_created(chaos, table)
    if created == saved["created"]:
        chaos.say(f"  table {table} was not removed: nothing to recreate")
        return
    if created is None:
        tags = {"Tags": saved["tags"]} if saved["tags"] else {}
        chaos.call(
            "dynamodb", "create_table", tolerate=("ResourceInUseException",), **saved["definition"], **tags
        )
    if not chaos.dry_run:
        _wait(f"the creation of table {table}", lambda: _table_status(chaos, table) == "ACTIVE")
    if saved["ttl"]:
        chaos.call(
            "dynamodb",
            "update_time_to_live",
            TableName=table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": saved["ttl"]},
            tolerate=("ValidationException",),  # already enabled
        )
    if saved["pitr"]:
        chaos.call(
            "dynamodb",
            "update_continuous_backups",
            TableName=table,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    _put_items(chaos, table, saved["items"])
