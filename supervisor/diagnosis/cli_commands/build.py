"""``build_command``: an AWS CLI command rendered from botocore names and boto3-style parameters."""

from __future__ import annotations

import decimal
import json
import math
import shlex
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from supervisor.diagnosis.cli_commands.service_model import (
    BOTOCORE_TO_CLI,
    FILE_PREFIXES,
    CommandError,
    botocore_services,
    check_region,
    check_required,
    kebab,
    kind_of,
    operations_of,
    signature_of,
    suggest,
    validate,
)


def build_command(
    service: str, operation: str, params: Mapping[str, Any], *, region: str | None = None
) -> str:
    """The AWS CLI command for a botocore operation, checked against the model and quoted for a shell."""
    if service not in botocore_services():
        raise CommandError(f"unknown botocore service {service!r}{suggest(service, botocore_services())}")
    operations = operations_of(service)
    if operation not in operations.values():
        if operation in operations:
            hint = f"; did you mean {operations[operation]}? (botocore names are CamelCase)"
        else:
            hint = suggest(operation, operations.values())
        raise CommandError(f"unknown operation {operation!r} for botocore service {service}{hint}")
    cli_service = BOTOCORE_TO_CLI.get(service, service)
    words = ["aws", cli_service, kebab(operation)]
    where = " ".join(words)
    signature = signature_of(service, operation)
    given = dict(params)
    for member in given:
        if member not in signature.flags:
            hint = suggest(member, signature.flags) or f"; its members are {', '.join(signature.flags)}"
            raise CommandError(f"{where} has no member {member!r}{hint}")
    check_required(where, signature, given)
    validate(where, signature, given)
    for member, (flag, negation) in signature.flags.items():
        if member in given:
            words.extend(_render(flag, negation, signature.args[flag].shape, given[member]))
    if region is not None:
        check_region(region)
        words.extend(["--region", region])
    return " ".join(words)


def _render(flag: str, negation: str | None, shape: Any, value: Any) -> list[str]:
    kind = kind_of(shape)
    if kind == "switch":
        return [flag] if value else [str(negation)]
    if kind == "scalar":
        text = _scalar_text(flag, shape, value)
        # argparse would take a separate value starting with "-" for an option; "--flag=value" is read right.
        return [shlex.quote(f"{flag}={text}")] if text.startswith("-") else [flag, shlex.quote(text)]
    if kind == "list":
        items = [_scalar_text(flag, shape.member, item) for item in value]
        if items and not any(item.startswith("-") or item.lstrip().startswith("[") for item in items):
            return [flag, *(shlex.quote(item) for item in items)]
        # The CLI also takes a list as JSON, which carries an empty list and awkward items.
        return [flag, shlex.quote(_json(flag, [_plain(item) for item in value]))]
    return [flag, shlex.quote(_json(flag, value))]


def _scalar_text(flag: str, shape: Any, value: Any) -> str:
    kind = shape.type_name
    if kind in ("integer", "long"):
        if isinstance(value, bool):
            raise CommandError(f"{flag} takes an integer, not a boolean ({value!r})")
        return str(int(value))
    if kind in ("float", "double"):
        if not math.isfinite(value):
            raise CommandError(f"{flag} takes a finite number, not {value!r}")
        return str(value) if isinstance(value, decimal.Decimal) else repr(value)
    if kind == "timestamp" and isinstance(value, (datetime, date)):
        return value.isoformat()
    if not isinstance(value, str):
        raise CommandError(f"{flag} takes text here, not {type(value).__name__}")
    if value.lower().startswith(FILE_PREFIXES):
        raise CommandError(f"{flag} {value!r} would make the CLI read a local file; give the value inline")
    return value


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (datetime, date)) else value


def _json(flag: str, value: Any) -> str:
    def default(item: Any) -> Any:
        if isinstance(item, (datetime, date)):
            return item.isoformat()
        if isinstance(item, decimal.Decimal):
            return int(item) if item == item.to_integral_value() else float(item)
        raise TypeError(f"{type(item).__name__} is not JSON")

    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"{flag}: the value cannot be written as JSON ({exc})") from None
