"""Dependency failure: a resource or service the function calls is missing or failing, while its own role
allows the call."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import alike, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Relevant, Remedy, Verdict

MISSING = frozenset(
    {
        "ResourceNotFoundException",
        "NoSuchBucket",
        "NotFoundException",
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
        "ParameterNotFound",
        "TableNotFoundException",
    }
)
FAILING = frozenset(
    {
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalServerError",
        "InternalFailure",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "SlowDown",
    }
)
DEPENDENCY_CODES = MISSING | FAILING  # not NoSuchKey: an object the input names is the caller's data
# What can take a resource away or refuse its callers (DeleteTable, PutBucketPolicy, DisableKey, ...), not
# what made it (CreateTable) or only labels it.
_BREAKING = ("Delete", "Put", "Update", "Disable", "Purge", "Revoke", "Retire", "Schedule", "Remove", "Set")


def check(c: Conversation) -> Verdict:
    errors = c.metrics.get("errors")
    if not errors:
        return None
    found = [f for f in failures(c) if f.error_code in DEPENDENCY_CODES]
    if not found:
        return None
    failure = found[-1]
    state = "is missing" if failure.error_code in MISSING else "is failing"
    call = failure.operation or "a call"  # the AWS SDK for JavaScript's errors do not name the operation
    pointers = [
        Pointer(
            "get_function_metrics", "errors", errors, "Invocations ended in an error", "dependency_failure"
        ),
        failure.pointer(f"{call} failed with {failure.error_code}", "dependency_failure"),
    ]
    # Without the operation (the SDK for JavaScript does not name it), any grant of the role can name it.
    granted = list(_granted(c, failure.operation))
    names = sorted({name for name, _ in granted})
    resource = names[0] if len(names) == 1 else None
    if resource is not None:
        pointers += [
            Pointer("get_iam_state", path, arn, f"The role allows {call} on {resource} only", None)
            for _, (path, arn) in granted
        ]
    return Finding(
        "dependency_failure",
        f"A resource {c.name} calls {state}: {call} fails with {failure.error_code} "
        + (f"on {resource}, the only one its role allows it on " if resource else "")
        + "(its role allows the call; the resource itself is the problem).",
        "high",
        pointers,
        Remedy(
            f"Restore the resource {failure.operation or 'the failing call'} reads",
            f"{failure.summary}: recreate or repair the resource the function "
            "calls (its name is in the function's configuration), or point the function at one that exists.",
        ),
        relevant_change=_breaks(resource),
        first_failure=first_failure(c, requests=alike(c, failure)),
        last_failure=last_failure(c, requests=alike(c, failure)),
        resources=(resource,) if resource else (),
    )


def _breaks(resource: str | None) -> Relevant:
    """A change whose request names the resource (by name or ARN) and can break it."""

    def relevant(event: ChangeEvent) -> bool:
        values = [v for v in (event.event.get("summary") or {}).values() if isinstance(v, str)]
        named = any(resource in (value, _resource_name(value)) for value in values)
        return resource is not None and named and event.operation.startswith(_BREAKING)

    return relevant


def _granted(c: Conversation, operation: str | None) -> Iterator[tuple[str, tuple[str, str]]]:
    """(resource name, (IAM answer path, ARN)) for each resource an Allow statement of the role's inline
    policies grants ``operation`` (any operation when None) on (any service): a DynamoDB table or an S3
    bucket."""
    for policy, document in (c.iam.get("inline_policies") or {}).items():
        statements = document.get("Statement") if isinstance(document, dict) else None
        for n, statement in enumerate(statements if isinstance(statements, list) else [statements]):
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            actions = _listed(statement.get("Action"))
            if operation is not None and not any(
                fnmatch.fnmatchcase(f"x:{operation}".lower(), f"x:{a.split(':', 1)[-1]}".lower())
                for a in actions
            ):
                continue
            resources = statement.get("Resource")
            for m, arn in enumerate(_listed(resources)):
                name = _resource_name(arn)
                if name:
                    path = f"inline_policies.{policy}.Statement" + (
                        f".{n}.Resource" if isinstance(statements, list) else ".Resource"
                    )
                    yield name, (path if isinstance(resources, str) else f"{path}.{m}", arn)


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]


def _resource_name(arn: str) -> str | None:
    """'orders' of ``arn:aws:dynamodb:...:table/orders``; 'input' of ``arn:aws:s3:::input/*``."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or "*" in parts[5].split("/", 1)[0]:
        return None
    if parts[2] == "dynamodb" and parts[5].startswith("table/"):
        return parts[5].split("/")[1]
    if parts[2] == "s3":
        return parts[5].split("/", 1)[0] or None
    return None
