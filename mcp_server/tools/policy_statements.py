"""A resource-based policy's statements as the tools show them, and ``ArnLike`` as IAM matches it: the
function's callers (topics, URLs, APIs) are judged by these."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

from mcp_server.contract.event_sources import PolicyStatement


def _condition(condition: dict[str, Any], operators: tuple[str, ...], key: str) -> str | None:
    """A condition's value for ``key`` under any of ``operators`` (condition keys ignore case)."""
    for operator, values in condition.items():
        if operator in operators and isinstance(values, dict):
            for name, value in values.items():
                if name.lower() == key.lower():
                    return ", ".join(value) if isinstance(value, list) else str(value)
    return None


def _joined(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def statement(raw: dict[str, Any]) -> PolicyStatement:
    """A policy statement as the answer shows it: the principal's service or account, the conditions on the
    caller's ARN and account."""
    principal = raw.get("Principal", "")
    if isinstance(principal, dict):
        principal = principal.get("Service") or principal.get("AWS") or json.dumps(principal)
    condition = raw.get("Condition") or {}
    return PolicyStatement(
        Sid=str(raw.get("Sid", "")),
        Effect=str(raw.get("Effect", "")),
        Principal=_joined(principal),
        Action=_joined(raw.get("Action", "")),
        SourceArn=_condition(condition, ("ArnLike", "ArnEquals"), "AWS:SourceArn"),
        SourceAccount=_condition(condition, ("StringEquals",), "AWS:SourceAccount"),
        FunctionUrlAuthType=_condition(condition, ("StringEquals",), "lambda:FunctionUrlAuthType"),
        InvokedViaFunctionUrl=_condition(condition, ("Bool",), "lambda:InvokedViaFunctionUrl"),
    )


def statements(document: str) -> list[PolicyStatement]:
    """The statements of a resource-based policy document (one statement may stand alone)."""
    found = json.loads(document).get("Statement") or []
    return [statement(raw) for raw in (found if isinstance(found, list) else [found])]


def arn_like(arn: str, pattern: str) -> bool:
    """ArnLike: each of the six colon-separated parts matched on its own, with ``*`` and ``?``."""
    parts, wanted = arn.split(":", 5), pattern.split(":", 5)
    return len(parts) == len(wanted) and all(fnmatchcase(p, w) for p, w in zip(parts, wanted, strict=True))
