"""The S3 bucket of ``dependency-remove``: saved (region, versioning, tags, policy, public access block,
default encryption and every object, bytes in base64), emptied and deleted, and recreated from what was
saved.

Refusals name only what is refused; the fault says which fault and function refuse.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import MAX_VALUE_BYTES
from chaos.faults.support import read_unless, shown_call, too_big_for_ledger

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


def bucket_created(chaos: Chaos, bucket: str) -> str | None:
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


# --- capture --------------------------------------------------------------------------------------------


def _region(chaos: Chaos, bucket: str) -> str | None:
    """The bucket's region; None when there is no such bucket; refused in another region than ours."""
    location = read_unless(chaos, ("NoSuchBucket",), "s3", "get_bucket_location", Bucket=bucket)
    if location is None:
        return None
    region = {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(
        location.get("LocationConstraint"), location.get("LocationConstraint")
    )
    if region != chaos.client("s3").meta.region_name:
        raise ChaosRefused(f"bucket {bucket} is in {region}, not here")
    return str(region)


def _unsaved_configuration(chaos: Chaos, bucket: str) -> list[str]:
    """The configurations set on the bucket that this fault does not save (and so refuses)."""
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
    return refused


def _saved_object(chaos: Chaos, bucket: str, listed: dict[str, Any]) -> dict[str, Any]:
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
    return saved


def _settings(chaos: Chaos, bucket: str) -> dict[str, Any]:
    """The bucket's tags, policy, public access block and default encryption (None or empty when unset)."""
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
        "tags": (tagging or {}).get("TagSet", []),
        "policy": (policy or {}).get("Policy"),
        "public_access_block": (access or {}).get("PublicAccessBlockConfiguration"),
        "encryption": (encryption or {}).get("ServerSideEncryptionConfiguration"),
    }


def capture_bucket(chaos: Chaos, bucket: str) -> dict[str, Any] | None:
    """The bucket's saved state, or None when there is no such bucket."""
    region = _region(chaos, bucket)
    if region is None:
        return None
    refused = _unsaved_configuration(chaos, bucket)
    versioning = chaos.read("s3", "get_bucket_versioning", Bucket=bucket)
    if versioning.get("MFADelete") == "Enabled":
        refused.append("MFA delete")
    current, history = _bucket_objects(chaos, bucket, bool(versioning.get("Status")))
    if history:
        refused.append(f"{len(history)} noncurrent object versions or delete markers")
    if refused:
        raise ChaosRefused(
            f"bucket {bucket} has {', '.join(refused)}, which this fault does not save, so it could not be "
            "restored exactly. Nothing was changed"
        )
    if sum(int(o.get("Size", 0)) for o in current) * 4 // 3 > MAX_VALUE_BYTES:
        raise too_big_for_ledger(f"the {len(current)} object(s) of bucket {bucket}, in base64,")
    objects = [_saved_object(chaos, bucket, listed) for listed in current]
    settings = _settings(chaos, bucket)
    return {
        "name": bucket,
        "region": region,
        "created": bucket_created(chaos, bucket),
        "versioning": versioning.get("Status"),
        **settings,
        "objects": objects,
    }


# --- remove and restore ---------------------------------------------------------------------------------


def remove_bucket(chaos: Chaos, saved: dict[str, Any]) -> list[str]:
    """Empty and delete the bucket; the keys of objects that were not saved, instead, when there are any."""
    bucket = saved["name"]
    if bucket_created(chaos, bucket) is None:
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


def _restore_public_access_block(chaos: Chaos, bucket: str, saved: dict[str, Any], recreated: bool) -> None:
    if saved["public_access_block"]:
        chaos.call(
            "s3",
            "put_public_access_block",
            Bucket=bucket,
            PublicAccessBlockConfiguration=saved["public_access_block"],
        )
    elif (
        recreated
        and not chaos.dry_run
        and read_unless(
            chaos, ("NoSuchPublicAccessBlockConfiguration",), "s3", "get_public_access_block", Bucket=bucket
        )
    ):  # AWS blocks public access on new buckets; this one had no block
        chaos.call("s3", "delete_public_access_block", Bucket=bucket)


def _restore_settings(chaos: Chaos, bucket: str, saved: dict[str, Any]) -> None:
    """Default encryption, versioning, tags and policy, each when it was set."""
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


def _put_object(chaos: Chaos, bucket: str, saved_object: dict[str, Any]) -> None:
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


def restore_bucket(chaos: Chaos, saved: dict[str, Any]) -> None:
    bucket = saved["name"]
    created = bucket_created(chaos, bucket)
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
    _restore_public_access_block(chaos, bucket, saved, recreated=created is None)
    _restore_settings(chaos, bucket, saved)
    for saved_object in saved["objects"]:
        _put_object(chaos, bucket, saved_object)
