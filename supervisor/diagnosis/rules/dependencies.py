"""Dependency failure: a resource or service the function calls is missing or failing, while its own role
allows the call."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import Failure, alike, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Relevant, Remedy, Verdict
from supervisor.diagnosis.rules.platform import key_remedy

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
# A KMS key that is not Enabled (https://docs.aws.amazon.com/kms/latest/developerguide/key-state.html): KMS
# names it by ARN in the message, "<arn> is disabled." or "<arn> is pending deletion.".
KEY_REFUSED = frozenset({"DisabledException", "KMSInvalidStateException", "KeyUnavailableException"})
# Not NoSuchKey: an object the input names is the caller's data.
DEPENDENCY_CODES = MISSING | FAILING | KEY_REFUSED
# The resource an AWS error names by ARN: a table, a bucket or a key (a full stop after it is not part of it).
_NAMED_ARN = re.compile(
    r"arn:aws[a-z-]*:(?:dynamodb|s3|kms):[^\s\\\"'`,;()<>\[\]{}]*[^\s\\\"'`,;()<>\[\]{}.]"
)
_KEY_STATES = {"is disabled": "Disabled", "is pending deletion": "PendingDeletion"}
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
    call = failure.operation or "a call"  # the AWS SDK for JavaScript's errors do not name the operation
    state, key_state = _state(failure)
    pointers = [
        Pointer(
            "get_function_metrics", "errors", errors, "Invocations ended in an error", "dependency_failure"
        ),
        failure.pointer(f"{call} failed with {failure.error_code}", "dependency_failure"),
    ]
    resource, why = _named(failure), "the resource the error names"
    if resource is None:
        # Without the operation (the SDK for JavaScript does not name it), any grant of the role can name it.
        granted = list(_granted(c, failure.operation))
        names = sorted({name for name, _ in granted})
        resource, why = (names[0] if len(names) == 1 else None), "the only one its role allows it on"
        if resource is not None:
            pointers += [
                Pointer("get_iam_state", path, arn, f"The role allows {call} on {resource} only", None)
                for _, (path, arn) in granted
            ]
    remedy = Remedy(
        f"Restore the resource {failure.operation or 'the failing call'} reads",
        f"{failure.summary}: recreate or repair the resource the function "
        "calls (its name is in the function's configuration), or point the function at one that exists.",
    )
    if resource is not None and key_state is not None:
        remedy = key_remedy(c, resource, key_state, f"{c.name} use it again") or remedy
    return Finding(
        "dependency_failure",
        f"A resource {c.name} calls {state}: {call} fails with {failure.error_code} "
        + (f"on {resource}, {why} " if resource else "")
        + "(its role allows the call; the resource itself is the problem).",
        "high",
        pointers,
        remedy,
        relevant_change=_breaks(resource),
        first_failure=first_failure(c, requests=alike(c, failure)),
        last_failure=last_failure(c, requests=alike(c, failure)),
        resources=(resource,) if resource else (),
    )


def _state(failure: Failure) -> tuple[str, str | None]:
    """How the failure says the resource is, and the KMS key state it names (None: not a key's)."""
    if failure.error_code in MISSING:
        return "is missing", None
    if failure.error_code not in KEY_REFUSED:
        return "is failing", None
    said = next((phrase for phrase in _KEY_STATES if phrase in failure.text), None)
    return (said, _KEY_STATES[said]) if said else ("refuses to be used", None)


def _named(failure: Failure) -> str | None:
    """The table or bucket (by name) or the key (by ARN) the error names by ARN, when it names one."""
    for arn in _NAMED_ARN.findall(failure.text):
        if ":kms:" in arn:
            if arn.split(":", 5)[5].startswith("key/"):
                return str(arn)
        elif name := _resource_name(arn):
            return name
    return None


def _breaks(resource: str | None) -> Relevant:
    """A change whose request names the resource (by name or ARN; a key by its ARN or id) and can break
    it."""
    names = {resource, resource.rsplit("/", 1)[-1]} if resource and ":kms:" in resource else {resource}

    def relevant(event: ChangeEvent) -> bool:
        values = [v for v in (event.event.get("summary") or {}).values() if isinstance(v, str)]
        named = any(value in names or _resource_name(value) in names for value in values)
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
