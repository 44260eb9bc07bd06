"""``dependency-remove``: delete the DynamoDB table or the S3 bucket the function uses; restore recreates it
with every item or object byte for byte.

``apply(chaos, target, prior, *, table: bool = False, bucket: bool = False)``, exactly one of them true.
The table is the one named by the function's ``TABLE_NAME`` variable, the bucket the one named by
``INPUT_BUCKET`` (else ``REPORT_BUCKET``). The saved state holds every dependency the function names
(capture cannot know which one ``apply`` will delete), so it must fit the ledger as a whole: 8192 bytes
of JSON (objects in base64), else the fault is refused before anything is changed.

- A table is saved with its key schema, attribute definitions, billing mode and throughput, indexes,
  stream, table class, KMS encryption, TTL, point-in-time recovery, tags and every item (Scan). A table
  with deletion protection is refused.
- A bucket is saved with its region, versioning, tags, policy, public access block, default encryption
  and every object (bytes, content type and headers, metadata, tags). Refused: a bucket in another region,
  with noncurrent versions, MFA delete, or a configuration not saved (lifecycle, CORS, website,
  replication, object lock, notifications, access logging). On AWS the name is free while the bucket is
  gone: another account could take it, and restore then fails.

A resource is deleted only when it holds exactly what was saved; restore recreates only one that is gone
(or that an interrupted restore recreated), never one that was not removed.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import MAX_VALUE_BYTES
from chaos.faults.support import check_fits, give_up, read_unless, shown_call

NAME = "dependency-remove"
TABLE_VARIABLES = ("TABLE_NAME",)
BUCKET_VARIABLES = ("INPUT_BUCKET", "REPORT_BUCKET")
WAIT_SECONDS = 300.0
BATCH = 25  # BatchWriteItem's limit
_OBJECT_HEADERS = ("ContentType", "CacheControl", "ContentDisposition", "ContentEncoding", "ContentLanguage")
_BUCKET_CONFIGURATIONS = (  # (read, error code when unset, what it is): refused when set
    ("get_bucket_lifecycle_configuration", "NoSuchLifecycleConfiguration", "a lifecycle configuration"),
    ("get_bucket_cors", "NoSuchCORSConfiguration", "a CORS configuration"),
    ("get_bucket_website", "NoSuchWebsiteConfiguration", "a website configuration"),
    ("get_bucket_replication", "ReplicationConfigurationNotFoundError", "replication"),
    ("get_object_lock_configuration", "ObjectLockConfigurationNotFoundError", "object lock"),
)
_NOTIFICATIONS = (
    "TopicConfigurations",
    "QueueConfigurations",
    "LambdaFunctionConfigurations",
    "EventBridgeConfiguration",
)


def _named(variables: dict[str, str], candidates: tuple[str, ...]) -> tuple[str, str] | None:
    return next(((v, variables[v]) for v in candidates if variables.get(v)), None)


def _wait(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not done():
        if time.monotonic() > deadline:
            raise ChaosError(f"{what} did not happen within {WAIT_SECONDS:.0f} s; run restore again later")
        time.sleep(1.0)


# --- DynamoDB items as JSON (binary attributes in base64) -----------------------------------------------


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


# --- the table ------------------------------------------------------------------------------------------


def _too_big(function_name: str, what: str) -> ChaosRefused:
    return ChaosRefused(
        f"refusing {NAME} on {function_name}: {what} would not fit the ledger, which keeps at most "
        f"{MAX_VALUE_BYTES} bytes per fault (one SSM parameter), so it could not be restored exactly. "
        "Nothing was changed"
    )


def _capture_table(chaos: Chaos, function_name: str, table: str) -> dict[str, Any] | None:
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    if described is None:
        return None
    d = described["Table"]
    if d.get("DeletionProtectionEnabled"):
        raise ChaosRefused(f"refusing {NAME} on {function_name}: table {table} has deletion protection")
    if int(d.get("TableSizeBytes", 0)) > MAX_VALUE_BYTES:
        raise _too_big(function_name, f"table {table} ({d['TableSizeBytes']} bytes)")
    billing = (d.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    provisioned = billing == "PROVISIONED"

    def throughput(described: dict[str, Any]) -> dict[str, Any]:
        units = described.get("ProvisionedThroughput") or {}
        return {"ProvisionedThroughput": {k: units[k] for k in ("ReadCapacityUnits", "WriteCapacityUnits")}}

    definition: dict[str, Any] = {
        "TableName": table,
        "KeySchema": d["KeySchema"],
        "AttributeDefinitions": d["AttributeDefinitions"],
        "BillingMode": billing,
        **(throughput(d) if provisioned else {}),
    }
    if d.get("GlobalSecondaryIndexes"):
        definition["GlobalSecondaryIndexes"] = [
            {"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]}
            | (throughput(i) if provisioned else {})
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

    tags: list[dict[str, str]] = []
    params: dict[str, Any] = {"ResourceArn": d["TableArn"]}
    while True:
        page = chaos.read("dynamodb", "list_tags_of_resource", **params)
        tags += page.get("Tags", [])
        if not page.get("NextToken"):
            break
        params["NextToken"] = page["NextToken"]
    ttl = chaos.read("dynamodb", "describe_time_to_live", TableName=table)["TimeToLiveDescription"]
    backups = read_unless(
        chaos, ("UnknownOperationException",), "dynamodb", "describe_continuous_backups", TableName=table
    )
    pitr = (backups or {}).get("ContinuousBackupsDescription", {}).get("PointInTimeRecoveryDescription", {})

    items: list[dict[str, Any]] = []
    size = 0
    scan: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = chaos.read("dynamodb", "scan", **scan)
        for item in page["Items"]:
            items.append(_to_json(item))
            size += len(json.dumps(items[-1]))
        if size > MAX_VALUE_BYTES:
            raise _too_big(function_name, f"the items of table {table} ({size} bytes so far)")
        if "LastEvaluatedKey" not in page:
            break
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return {
        "definition": definition,
        "created": d["CreationDateTime"].isoformat(),
        "tags": tags,
        "ttl": ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") else None,
        "pitr": pitr.get("PointInTimeRecoveryStatus") == "ENABLED",
        "items": items,
    }


def _table_created(chaos: Chaos, table: str) -> str | None:
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    return None if described is None else str(described["Table"]["CreationDateTime"].isoformat())


def _table_status(chaos: Chaos, table: str) -> str | None:
    described = read_unless(
        chaos, ("ResourceNotFoundException",), "dynamodb", "describe_table", TableName=table
    )
    return None if described is None else str(described["Table"]["TableStatus"])


def _remove_table(chaos: Chaos, table: str) -> None:
    chaos.call("dynamodb", "delete_table", TableName=table, tolerate=("ResourceNotFoundException",))
    if not chaos.dry_run:
        _wait(f"the deletion of table {table}", lambda: _table_status(chaos, table) is None)


def _restore_table(chaos: Chaos, saved: dict[str, Any]) -> None:
    table = saved["definition"]["TableName"]
    if _table_status(chaos, table) == "DELETING" and not chaos.dry_run:
        _wait(f"the deletion of table {table}", lambda: _table_status(chaos, table) is None)
    created = _table_created(chaos, table)
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
    items = [{k: _from_json(v) for k, v in item.items()} for item in saved["items"]]
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


# --- the bucket -----------------------------------------------------------------------------------------


def _bucket_created(chaos: Chaos, bucket: str) -> str | None:
    params: dict[str, Any] = {}
    while True:
        page = chaos.read("s3", "list_buckets", **params)
        for listed in page.get("Buckets", []):
            if listed["Name"] == bucket:
                return str(listed["CreationDate"].isoformat())
        if not page.get("ContinuationToken"):
            return None
        params["ContinuationToken"] = page["ContinuationToken"]


def _bucket_objects(
    chaos: Chaos, bucket: str, versioned: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(current objects, noncurrent versions and delete markers), each with Key, ETag, Size, VersionId."""
    current: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    params: dict[str, Any] = {"Bucket": bucket}
    while True:
        if versioned:
            page = chaos.read("s3", "list_object_versions", **params)
            for version in page.get("Versions", []):
                (current if version.get("IsLatest") else history).append(version)
            history += page.get("DeleteMarkers", [])
            if not page.get("IsTruncated"):
                return current, history
            params |= {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
        else:
            page = chaos.read("s3", "list_objects_v2", **params)
            current += page.get("Contents", [])
            if not page.get("IsTruncated"):
                return current, history
            params["ContinuationToken"] = page["NextContinuationToken"]


def _capture_bucket(chaos: Chaos, function_name: str, bucket: str) -> dict[str, Any] | None:
    location = read_unless(chaos, ("NoSuchBucket",), "s3", "get_bucket_location", Bucket=bucket)
    if location is None:
        return None
    region = {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(
        location.get("LocationConstraint"), location.get("LocationConstraint")
    )
    if region != chaos.client("s3").meta.region_name:
        raise ChaosRefused(f"refusing {NAME} on {function_name}: bucket {bucket} is in {region}, not here")
    refused = [
        what
        for method, unset, what in _BUCKET_CONFIGURATIONS
        if read_unless(chaos, (unset,), "s3", method, Bucket=bucket)
    ]
    notifications = chaos.read("s3", "get_bucket_notification_configuration", Bucket=bucket)
    if any(notifications.get(key) for key in _NOTIFICATIONS):
        refused.append("event notifications")
    if chaos.read("s3", "get_bucket_logging", Bucket=bucket).get("LoggingEnabled"):
        refused.append("access logging")
    versioning = chaos.read("s3", "get_bucket_versioning", Bucket=bucket)
    if versioning.get("MFADelete") == "Enabled":
        refused.append("MFA delete")
    current, history = _bucket_objects(chaos, bucket, bool(versioning.get("Status")))
    if history:
        refused.append(f"{len(history)} noncurrent object versions or delete markers")
    if refused:
        raise ChaosRefused(
            f"refusing {NAME} on {function_name}: bucket {bucket} has {', '.join(refused)}, which this "
            "fault does not save, so it could not be restored exactly. Nothing was changed"
        )
    if sum(int(o.get("Size", 0)) for o in current) * 4 // 3 > MAX_VALUE_BYTES:
        raise _too_big(function_name, f"the {len(current)} object(s) of bucket {bucket}, in base64,")

    objects = []
    for listed in current:
        got = chaos.read("s3", "get_object", Bucket=bucket, Key=listed["Key"])
        saved: dict[str, Any] = {
            "key": listed["Key"],
            "etag": listed["ETag"],
            "body": base64.b64encode(got["Body"].read()).decode(),
            "metadata": got.get("Metadata") or {},
            "headers": {h: got[h] for h in _OBJECT_HEADERS if got.get(h)},
            "tags": [],
        }
        if got.get("ServerSideEncryption") == "aws:kms":
            saved["headers"] |= {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": got["SSEKMSKeyId"]}
        if got.get("TagCount"):
            saved["tags"] = chaos.read("s3", "get_object_tagging", Bucket=bucket, Key=listed["Key"])["TagSet"]
        objects.append(saved)
    tagging = read_unless(chaos, ("NoSuchTagSet",), "s3", "get_bucket_tagging", Bucket=bucket)
    policy = read_unless(chaos, ("NoSuchBucketPolicy",), "s3", "get_bucket_policy", Bucket=bucket)
    access = read_unless(
        chaos, ("NoSuchPublicAccessBlockConfiguration",), "s3", "get_public_access_block", Bucket=bucket
    )
    encryption = read_unless(
        chaos,
        ("ServerSideEncryptionConfigurationNotFoundError",),
        "s3",
        "get_bucket_encryption",
        Bucket=bucket,
    )
    return {
        "name": bucket,
        "region": region,
        "created": _bucket_created(chaos, bucket),
        "versioning": versioning.get("Status"),
        "tags": (tagging or {}).get("TagSet", []),
        "policy": (policy or {}).get("Policy"),
        "public_access_block": (access or {}).get("PublicAccessBlockConfiguration"),
        "encryption": (encryption or {}).get("ServerSideEncryptionConfiguration"),
        "objects": objects,
    }


def _remove_bucket(chaos: Chaos, saved: dict[str, Any]) -> list[str]:
    """Empty and delete the bucket; the keys of objects that were not saved, instead, when there are any."""
    bucket = saved["name"]
    if _bucket_created(chaos, bucket) is None:
        chaos.say(f"  bucket {bucket} is already gone")
        return []
    current, history = _bucket_objects(chaos, bucket, bool(saved["versioning"]))
    known = {(o["key"], o["etag"]) for o in saved["objects"]}
    unsaved = [o["Key"] for o in current if (o["Key"], o["ETag"]) not in known] + [o["Key"] for o in history]
    if unsaved:
        return unsaved
    doomed = [
        {"Key": o["Key"]} | ({"VersionId": o["VersionId"]} if saved["versioning"] else {}) for o in current
    ]
    for start in range(0, len(doomed), 1000):
        batch = doomed[start : start + 1000]
        deleted = shown_call(
            chaos,
            "s3",
            "delete_objects",
            {"Bucket": bucket, "Delete": f"<{len(batch)} objects>"},
            Bucket=bucket,
            Delete={"Objects": batch, "Quiet": True},
        )
        if deleted and deleted.get("Errors"):
            first = deleted["Errors"][0]
            raise ChaosError(
                f"bucket {bucket}: {len(deleted['Errors'])} object(s) could not be deleted (e.g. "
                f"{first.get('Key')}: {first.get('Code')}); run restore to put back those that were"
            )
    chaos.call("s3", "delete_bucket", Bucket=bucket, tolerate=("NoSuchBucket",))
    return []


def _restore_bucket(chaos: Chaos, saved: dict[str, Any]) -> None:
    bucket = saved["name"]
    created = _bucket_created(chaos, bucket)
    if created == saved["created"]:
        chaos.say(f"  bucket {bucket} was not removed: nothing to recreate")
        return
    if created is None:
        where = (
            {}
            if saved["region"] == "us-east-1"
            else {"CreateBucketConfiguration": {"LocationConstraint": saved["region"]}}
        )
        chaos.call("s3", "create_bucket", Bucket=bucket, tolerate=("BucketAlreadyOwnedByYou",), **where)
    if saved["public_access_block"]:
        chaos.call(
            "s3",
            "put_public_access_block",
            Bucket=bucket,
            PublicAccessBlockConfiguration=saved["public_access_block"],
        )
    elif (
        created is None
        and not chaos.dry_run
        and read_unless(
            chaos, ("NoSuchPublicAccessBlockConfiguration",), "s3", "get_public_access_block", Bucket=bucket
        )
    ):  # AWS blocks public access on new buckets; this one had no block
        chaos.call("s3", "delete_public_access_block", Bucket=bucket)
    if saved["encryption"]:
        chaos.call(
            "s3",
            "put_bucket_encryption",
            Bucket=bucket,
            ServerSideEncryptionConfiguration=saved["encryption"],
        )
    if saved["versioning"]:
        chaos.call(
            "s3",
            "put_bucket_versioning",
            Bucket=bucket,
            VersioningConfiguration={"Status": saved["versioning"]},
        )
    if saved["tags"]:
        chaos.call("s3", "put_bucket_tagging", Bucket=bucket, Tagging={"TagSet": saved["tags"]})
    if saved["policy"]:
        chaos.call("s3", "put_bucket_policy", Bucket=bucket, Policy=saved["policy"])
    for saved_object in saved["objects"]:
        body = base64.b64decode(saved_object["body"])
        tagging = (
            {"Tagging": urlencode({t["Key"]: t["Value"] for t in saved_object["tags"]})}
            if saved_object["tags"]
            else {}
        )
        params = {"Bucket": bucket, "Key": saved_object["key"], **saved_object["headers"], **tagging}
        shown_call(
            chaos,
            "s3",
            "put_object",
            params | {"Body": f"<{len(body)} bytes>", "Metadata": saved_object["metadata"]},
            Body=body,
            Metadata=saved_object["metadata"],
            **params,
        )


# --- the fault ------------------------------------------------------------------------------------------


def _variables(target: Target) -> dict[str, str]:
    return dict((target.configuration.get("Environment") or {}).get("Variables") or {})


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    name, variables = target.function_name, _variables(target)
    table, bucket = _named(variables, TABLE_VARIABLES), _named(variables, BUCKET_VARIABLES)
    if table is None and bucket is None:
        raise ChaosRefused(
            f"nothing to remove: {name} names no table ({', '.join(TABLE_VARIABLES)}) and no bucket "
            f"({', '.join(BUCKET_VARIABLES)}) in its environment"
        )
    prior = {
        "function": name,
        "table_name": table[1] if table else None,
        "table": _capture_table(chaos, name, table[1]) if table else None,
        "bucket_name": bucket[1] if bucket else None,
        "bucket": _capture_bucket(chaos, name, bucket[1]) if bucket else None,
    }
    if prior["table"] is None and prior["bucket"] is None:
        missing = " and ".join(
            f"{kind} {prior[f'{kind}_name']}" for kind in ("table", "bucket") if prior[f"{kind}_name"]
        )
        raise ChaosRefused(f"nothing to remove: {missing} of {name} does not exist")
    saved = [f"{kind} {prior[f'{kind}_name']}" for kind in ("table", "bucket") if prior[kind] is not None]
    check_fits(NAME, name, prior, " and ".join(saved))
    return prior


def _untouched(chaos: Chaos, prior: dict[str, Any]) -> bool:
    """Whether every saved resource is still the one that was saved (never deleted)."""
    table, bucket = prior["table"], prior["bucket"]
    return (table is None or _table_created(chaos, prior["table_name"]) == table["created"]) and (
        bucket is None or _bucket_created(chaos, prior["bucket_name"]) == bucket["created"]
    )


def _apply(
    chaos: Chaos, target: Target, prior: dict[str, Any], *, table: bool = False, bucket: bool = False
) -> None:
    name = prior["function"]
    if table == bucket:
        error = ChaosError(f"{NAME}: choose exactly one of table, bucket")
        give_up(chaos, NAME, name, error, unchanged=_untouched(chaos, prior))
    kind = "table" if table else "bucket"
    if prior[kind] is None:
        variables = TABLE_VARIABLES if table else BUCKET_VARIABLES
        reason = (
            f"{kind} {prior[f'{kind}_name']} does not exist"
            if prior[f"{kind}_name"]
            else f"{name} names no {kind} ({', '.join(variables)})"
        )
        give_up(
            chaos,
            NAME,
            name,
            ChaosRefused(f"nothing to remove: {reason}"),
            unchanged=_untouched(chaos, prior),
        )
    if table:
        _remove_table(chaos, prior["table_name"])
        return
    unsaved = _remove_bucket(chaos, prior["bucket"])
    if unsaved:
        error = ChaosRefused(
            f"refusing to delete bucket {prior['bucket_name']}: it holds {len(unsaved)} object(s) written "
            f"since its state was saved (e.g. {unsaved[0]}), which restore would not bring back"
        )
        give_up(chaos, NAME, name, error, unchanged=_untouched(chaos, prior))


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    if prior["table"] is not None:
        _restore_table(chaos, prior["table"])
    if prior["bucket"] is not None:
        _restore_bucket(chaos, prior["bucket"])


DEPENDENCY_REMOVE = Fault(NAME, "the table or bucket the function uses deleted", _capture, _apply, _revert)
