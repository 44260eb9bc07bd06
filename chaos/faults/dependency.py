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
(or that an interrupted restore recreated), never one that was not removed. How a table and a bucket are
saved, removed and recreated: ``dependency_table`` and ``dependency_bucket``.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.dependency_bucket import bucket_created, capture_bucket, remove_bucket, restore_bucket
from chaos.faults.dependency_table import capture_table, remove_table, restore_table, table_created
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import check_fits, give_up

NAME = "dependency-remove"
TABLE_VARIABLES = ("TABLE_NAME",)
BUCKET_VARIABLES = ("INPUT_BUCKET", "REPORT_BUCKET")


def _named(variables: dict[str, str], candidates: tuple[str, ...]) -> tuple[str, str] | None:
    return next(((v, variables[v]) for v in candidates if variables.get(v)), None)


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
    try:
        prior = {
            "function": name,
            "table_name": table[1] if table else None,
            "table": capture_table(chaos, table[1]) if table else None,
            "bucket_name": bucket[1] if bucket else None,
            "bucket": capture_bucket(chaos, bucket[1]) if bucket else None,
        }
    except ChaosRefused as refusal:
        raise ChaosRefused(f"refusing {NAME} on {name}: {refusal}") from None
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
    return (table is None or table_created(chaos, prior["table_name"]) == table["created"]) and (
        bucket is None or bucket_created(chaos, prior["bucket_name"]) == bucket["created"]
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
        remove_table(chaos, prior["table_name"])
        return
    unsaved = remove_bucket(chaos, prior["bucket"])
    if unsaved:
        error = ChaosRefused(
            f"refusing to delete bucket {prior['bucket_name']}: it holds {len(unsaved)} object(s) written "
            f"since its state was saved (e.g. {unsaved[0]}), which restore would not bring back"
        )
        give_up(chaos, NAME, name, error, unchanged=_untouched(chaos, prior))


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    if prior["table"] is not None:
        restore_table(chaos, prior["table"])
    if prior["bucket"] is not None:
        restore_bucket(chaos, prior["bucket"])


DEPENDENCY_REMOVE = Fault(NAME, "the table or bucket the function uses deleted", _capture, _apply, _revert)
