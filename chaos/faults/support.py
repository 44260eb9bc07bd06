"""What the config, deploy and dependency injectors share: calls shown other than as made (values
masked, bytes by their size), reads that tolerate a missing resource, the wait for a Lambda update to
finish, a function's deployed package, the ledger size checks, and giving up cleanly after the prior
state was saved."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterable
from typing import Any, NoReturn

from botocore.exceptions import ClientError

from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import MAX_VALUE_BYTES

UPDATE_TIMEOUT_SECONDS = 120.0
_SAVED_AT_EXAMPLE = "2000-01-01T00:00:00+00:00"  # as long as the ledger's timestamp


def shown_call(
    chaos: Chaos,
    service: str,
    method: str,
    shown: dict[str, Any],
    *,
    tolerate: Iterable[str] = (),
    secrets: Iterable[str] = (),
    **params: Any,
) -> Any:
    """``Chaos.call``, recorded and printed with the parameters ``shown`` (values masked, bytes by their
    size); error messages are scrubbed of ``secrets``."""
    return chaos.call(service, method, tolerate=tolerate, shown=shown, secrets=secrets, **params)


def error_code(error: BaseException) -> str:
    """The AWS error code behind a ChaosError from ``Chaos.read``/``Chaos.call`` ("" if none)."""
    cause = error.__cause__
    if isinstance(cause, ClientError):
        return str(cause.response.get("Error", {}).get("Code", ""))
    return ""


def read_unless(chaos: Chaos, missing: Collection[str], service: str, method: str, **params: Any) -> Any:
    """``Chaos.read``, or None when AWS answers with one of the error codes ``missing``."""
    try:
        return chaos.read(service, method, **params)
    except ChaosError as error:
        if error_code(error) in missing:
            return None
        raise


def wait_until_updated(
    chaos: Chaos, function_name: str, *, check_failed: bool = True, poll_seconds: float = 1.0
) -> None:
    """Until the function's last update is no longer InProgress (nothing to wait for in a dry run);
    ChaosError when it Failed (and ``check_failed``) or takes longer than UPDATE_TIMEOUT_SECONDS."""
    if chaos.dry_run:
        return
    deadline = time.monotonic() + UPDATE_TIMEOUT_SECONDS
    while True:
        config = chaos.read("lambda", "get_function_configuration", FunctionName=function_name)
        status = config.get("LastUpdateStatus")
        if status == "Failed" and check_failed:
            reason = " ".join(
                filter(None, (config.get("LastUpdateStatusReasonCode"), config.get("LastUpdateStatusReason")))
            )
            raise ChaosError(
                f"the update of {function_name} failed: {reason or 'no reason given'}; its prior state is "
                "saved: restore it"
            )
        if status != "InProgress" and config.get("State") != "Pending":
            return
        if time.monotonic() > deadline:
            raise ChaosError(
                f"{function_name} is still updating after {UPDATE_TIMEOUT_SECONDS:.0f} s; try again later"
            )
        time.sleep(poll_seconds)


def sha256(data: bytes) -> str:
    """A package's hash as Lambda shows it (``CodeSha256``: base64 of the SHA-256 digest)."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def download_package(chaos: Chaos, fault: str, configuration: dict[str, Any]) -> bytes:
    """The function's deployed package, fetched as Lambda does (``GetFunction`` → ``Code.Location``);
    ChaosRefused when it does not match the ``CodeSha256`` of ``configuration``."""
    name = configuration["FunctionName"]
    location = chaos.read("lambda", "get_function", FunctionName=name)["Code"]["Location"]
    try:
        with urllib.request.urlopen(location, timeout=30) as response:  # noqa: S310 - Lambda's presigned URL
            package: bytes = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise ChaosError(f"could not download the deployed package of {name}: {error}") from None
    if sha256(package) != configuration["CodeSha256"]:
        raise ChaosRefused(
            f"refusing {fault} on {name}: the downloaded package does not match its CodeSha256"
        )
    return package


def check_fits(fault: str, function_name: str, prior: dict[str, Any], what: str) -> None:
    """ChaosRefused (before anything is saved or changed) when ``prior`` would not fit the ledger."""
    entry = {"fault": fault, "function": function_name, "saved_at": _SAVED_AT_EXAMPLE, "prior": prior}
    size = len(json.dumps(entry, sort_keys=True).encode())
    if size > MAX_VALUE_BYTES:
        raise ChaosRefused(
            f"refusing {fault} on {function_name}: its saved state ({what}) would take {size} bytes, and "
            f"the ledger keeps at most {MAX_VALUE_BYTES} bytes per fault (one SSM parameter); without it "
            "no exact restore is possible. Nothing was changed"
        )


def too_big_for_ledger(what: str) -> ChaosRefused:
    """The refusal of a part of the prior state that alone would not fit the ledger (the fault names
    itself and the function in front of it)."""
    return ChaosRefused(
        f"{what} would not fit the ledger, which keeps at most {MAX_VALUE_BYTES} bytes per fault (one SSM "
        "parameter), so it could not be restored exactly. Nothing was changed"
    )


def give_up(chaos: Chaos, fault: str, function_name: str, error: ChaosError, *, unchanged: bool) -> NoReturn:
    """Raise ``error`` from ``apply`` (the prior state is saved by then); when nothing is changed, the
    saved state would restore nothing, so it is deleted first: ``status`` shows no fault."""
    if unchanged and not chaos.dry_run:
        chaos.ledger.delete(function_name, fault)
    raise error
