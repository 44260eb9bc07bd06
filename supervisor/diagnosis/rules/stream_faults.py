"""A bad record that blocks its shard: bad_input on a stream mapping, read from ``get_event_sources`` (the
mapping's settings and Lambda's ``IteratorAge``, which the function's users cannot write).

With Lambda's stream defaults (``MaximumRetryAttempts`` and ``MaximumRecordAgeInSeconds`` -1) a batch the
function fails on is sent again until its records expire, and every later record of its shard waits
(https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html: "a bad record can block
processing on the affected shard for up to one week"). Seen when bad_input's own test holds (other
invocations of the same version succeed between the failures since the latest change: not every input
fails, so not the code) and an enabled stream mapping that never gives up sends records older than the
function's timeout: they waited behind a batch longer than one invocation can run.

The command lets the shard move on: a retry limit with bisection, so that Lambda splits the failing batch
down to the record it fails on and gives up on that one (to the mapping's on-failure destination when it
has one; without one the record is lost, and the remedy says so before anyone approves it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.event_paths import TOOL, mappings, positive
from supervisor.diagnosis.rules.findings import Finding, Pointer, Remedy

RETRY_LIMIT = 2  # retries of a failing batch, each half of a bisected one too, before Lambda gives up on it
_NEVER = -1


def _stalled(mapping: dict[str, Any], timeout: Any) -> bool:
    """An enabled stream mapping that never gives up, whose records waited longer than an invocation runs."""
    age: Any = mapping.get("iterator_age_ms")
    return (
        mapping.get("State") == "Enabled"
        and mapping.get("MaximumRetryAttempts") == _NEVER
        and mapping.get("MaximumRecordAgeInSeconds") == _NEVER
        and positive(age)
        and positive(timeout)
        and age > timeout * 1000
    )


def stalled_mapping(c: Conversation) -> tuple[int, dict[str, Any]] | None:
    """The first enabled stream mapping that never gives up whose records waited longer than an invocation
    runs, with its index in the answer."""
    timeout = c.event_sources.get("timeout_seconds")
    return next(((i, m) for i, m in mappings(c) if _stalled(m, timeout)), None)


def on_blocked_shard(c: Conversation, finding: Finding) -> Finding:
    """bad_input's finding, when a stream mapping is stalled behind the failures: with the mapping's figures,
    the shard as what is held back, and the command that lets it move on instead of the gap."""
    timeout = c.event_sources.get("timeout_seconds")
    found = stalled_mapping(c)
    if found is None:
        return finding
    index, mapping = found
    where, stream, age = f"mappings.{index}", str(mapping["EventSourceArn"]), mapping["iterator_age_ms"]
    pointers = [
        Pointer(
            TOOL,
            f"{where}.iterator_age_ms",
            age,
            f"Records of {stream} were {age / 1000:g} s old when sent, past the {timeout} s an invocation "
            "may run: they waited behind a batch",
            "bad_input",
        ),
        Pointer(
            TOOL, f"{where}.MaximumRetryAttempts", _NEVER, "The mapping retries a failing batch forever", None
        ),
        Pointer(
            TOOL,
            f"{where}.MaximumRecordAgeInSeconds",
            _NEVER,
            "and never gives up on a record for its age",
            None,
        ),
    ]
    cause = (
        f"{finding.cause}. The stream mapping {mapping['UUID']} on {stream} retries the batch that fails "
        f"forever, so every later record of its shard waits: records were {age / 1000:g} s old when sent"
    )
    return replace(
        finding,
        cause=cause,
        pointers=[*finding.pointers, *pointers],
        remedy=_remedy(c, mapping),
        resources=(*finding.resources, stream),
        gaps=(),
    )


def _remedy(c: Conversation, mapping: dict[str, Any]) -> Remedy:
    uuid, destination = str(mapping["UUID"]), mapping.get("on_failure_destination")
    params = {"UUID": uuid, "MaximumRetryAttempts": RETRY_LIMIT, "BisectBatchOnFunctionError": True}
    kept = (
        f"Lambda describes the record it gives up on to {destination}: read it there and fix its producer."
        if destination
        else "The mapping has no on-failure destination: the record it gives up on is lost. To keep it, add "
        "one (--destination-config) before approving, and read the record there."
    )
    return Remedy(
        f"Let the shard move past the record: retry a failing batch {RETRY_LIMIT} times, bisecting it",
        f"With a retry limit and bisection Lambda splits the failing batch down to the record {c.name} fails "
        f"on and gives up on it after {RETRY_LIMIT} retries; the shard's waiting records are then processed. "
        f"{kept} The record's content is still the cause: no command fixes it.",
        command(c, "lambda", "UpdateEventSourceMapping", params),
        "medium",
    )
