"""Dependency failure: a resource or service the function calls is missing or failing, while its own role
allows the call."""

from __future__ import annotations

from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import failures, first_failure
from supervisor.diagnosis.rules.findings import Finding, Pointer, Remedy, Verdict

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


def check(c: Conversation) -> Verdict:
    errors = c.metrics.get("errors")
    if not errors:
        return None
    found = [f for f in failures(c) if f.error_code in DEPENDENCY_CODES]
    if not found:
        return None
    failure = found[-1]
    state = "is missing" if failure.error_code in MISSING else "is failing"
    pointers = [
        Pointer(
            "get_function_metrics", "errors", errors, "Invocations ended in an error", "dependency_failure"
        ),
        failure.pointer(f"{failure.operation} failed with {failure.error_code}", "dependency_failure"),
    ]
    return Finding(
        "dependency_failure",
        f"A resource {c.name} calls {state}: {failure.operation} fails with {failure.error_code} "
        "(its role allows the call; the resource itself is the problem).",
        "high",
        pointers,
        Remedy(
            f"Restore the resource {failure.operation} reads",
            f"{failure.headline.removeprefix('[ERROR] ')}: recreate or repair the resource the function "
            "calls (its name is in the function's configuration), or point the function at one that exists.",
        ),
        first_failure=first_failure(c),
    )
