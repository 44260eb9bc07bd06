"""Faults on a function's SQS event source mapping and its queue; restore puts the saved state back exactly.

Each one works on the function's one SQS mapping (``ListEventSourceMappings``); a function with none is
refused (nothing to break), one with several too (which one would be a guess).

- ``esm-disable`` (no parameter): ``UpdateEventSourceMapping`` ``Enabled=false``; Lambda stops polling and
  the queue backs up. Refused when the mapping is disabled already. Restore: ``Enabled=true``.
- ``esm-delete`` (no parameter): ``DeleteEventSourceMapping``. The saved state is the mapping's
  configuration (queue, function, ``BatchSize``, ``MaximumBatchingWindowInSeconds``,
  ``FunctionResponseTypes``, filter, scaling and metrics settings, enabled or not); restore creates it
  again with ``CreateEventSourceMapping`` (Lambda gives it a new UUID) unless a mapping of that queue to
  that function exists by then.
- ``queue-visibility`` (``apply(..., seconds=N)``): ``SetQueueAttributes`` ``VisibilityTimeout`` of the
  mapped queue, 0 to 43,200 seconds as SQS takes it
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html).
  Restore: the saved value.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import give_up

# What CreateEventSourceMapping takes back from a mapping ListEventSourceMappings shows, for an SQS source.
_RECREATED = (
    "BatchSize",
    "MaximumBatchingWindowInSeconds",
    "FunctionResponseTypes",
    "FilterCriteria",
    "ScalingConfig",
    "MetricsConfig",
    "KMSKeyArn",
)
_ENABLED_STATES = ("Enabled", "Enabling", "Updating", "Creating")
MAX_VISIBILITY_SECONDS = 43_200


def mappings_of(chaos: Chaos, function_name: str, service: str = "sqs") -> list[dict[str, Any]]:
    """The mappings of ``service``'s sources (``sqs``, ``kinesis``) whose ``FunctionArn`` names the function
    (with or without a qualifier). Read from the unfiltered list: moto 5.2.5 filters ``FunctionName`` by the
    string the mapping was created with, so a mapping created with the function's ARN is not listed under its
    name."""
    mappings: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        page = chaos.read("lambda", "list_event_source_mappings", **params)
        mappings += [
            m
            for m in page["EventSourceMappings"]
            if str(m["EventSourceArn"]).split(":")[2] == service
            and str(m.get("FunctionArn", "")).split(":")[6:7] == [function_name]
        ]
        if not page.get("NextMarker"):
            return mappings
        params["Marker"] = page["NextMarker"]


def sqs_mapping(chaos: Chaos, fault: str, function_name: str) -> dict[str, Any]:
    """The function's one SQS event source mapping; ChaosRefused when it has none or several."""
    mappings = mappings_of(chaos, function_name)
    if not mappings:
        raise ChaosRefused(
            f"refusing {fault} on {function_name}: it has no SQS event source mapping, so no queue feeds it"
        )
    if len(mappings) > 1:
        queues = ", ".join(sorted(m["EventSourceArn"] for m in mappings))
        raise ChaosRefused(
            f"refusing {fault} on {function_name}: it has {len(mappings)} SQS event source mappings "
            f"({queues}); the injector breaks a function's only one"
        )
    return mappings[0]


def queue_url(chaos: Chaos, queue_arn: str) -> str:
    """The URL of the queue ``arn:aws:sqs:<region>:<account>:<name>``."""
    _, _, _, _, account, name = queue_arn.split(":", 5)
    found = chaos.read("sqs", "get_queue_url", QueueName=name, QueueOwnerAWSAccountId=account)
    return str(found["QueueUrl"])


# --- esm-disable ----------------------------------------------------------------------------------------


def _capture_disable(chaos: Chaos, target: Target) -> dict[str, Any]:
    mapping = sqs_mapping(chaos, "esm-disable", target.function_name)
    if mapping.get("State") not in _ENABLED_STATES:
        raise ChaosRefused(
            f"nothing to disable: the event source mapping {mapping['UUID']} of {target.function_name} "
            f"is {mapping.get('State')}"
        )
    return {"function": target.function_name, "uuid": mapping["UUID"], "queue": mapping["EventSourceArn"]}


def _apply_disable(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    chaos.call("lambda", "update_event_source_mapping", UUID=prior["uuid"], Enabled=False)


def _revert_disable(chaos: Chaos, prior: dict[str, Any]) -> None:
    chaos.call("lambda", "update_event_source_mapping", UUID=prior["uuid"], Enabled=True)


# --- esm-delete -----------------------------------------------------------------------------------------


def _capture_delete(chaos: Chaos, target: Target) -> dict[str, Any]:
    mapping = sqs_mapping(chaos, "esm-delete", target.function_name)
    settings = {key: mapping[key] for key in _RECREATED if mapping.get(key) not in (None, [], {})}
    return {
        "function": target.function_name,
        "uuid": mapping["UUID"],
        "queue": mapping["EventSourceArn"],
        "function_arn": mapping["FunctionArn"],
        "enabled": mapping.get("State") in _ENABLED_STATES,
        "settings": settings,
    }


def _apply_delete(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    chaos.call(
        "lambda", "delete_event_source_mapping", UUID=prior["uuid"], tolerate=("ResourceNotFoundException",)
    )


def _revert_delete(chaos: Chaos, prior: dict[str, Any]) -> None:
    present = [m for m in mappings_of(chaos, prior["function"]) if m["EventSourceArn"] == prior["queue"]]
    if present:  # mapped again (a remediation): given back its saved settings, so the world is as it was
        chaos.say(f"  {prior['queue']} is mapped to {prior['function']} again ({present[0]['UUID']})")
        chaos.call(
            "lambda",
            "update_event_source_mapping",
            UUID=present[0]["UUID"],
            Enabled=prior["enabled"],
            **prior["settings"],
        )
        return
    qualified = len(str(prior["function_arn"]).split(":")) > 7
    chaos.call(
        "lambda",
        "create_event_source_mapping",
        EventSourceArn=prior["queue"],
        FunctionName=prior["function_arn"] if qualified else prior["function"],
        Enabled=prior["enabled"],
        **prior["settings"],
    )


# --- queue-visibility -----------------------------------------------------------------------------------


def _capture_visibility(chaos: Chaos, target: Target) -> dict[str, Any]:
    mapping = sqs_mapping(chaos, "queue-visibility", target.function_name)
    url = queue_url(chaos, mapping["EventSourceArn"])
    attributes = chaos.read("sqs", "get_queue_attributes", QueueUrl=url, AttributeNames=["VisibilityTimeout"])
    return {
        "function": target.function_name,
        "queue_url": url,
        "visibility": attributes["Attributes"]["VisibilityTimeout"],
    }


def _set_visibility(chaos: Chaos, url: str, seconds: str) -> None:
    chaos.call("sqs", "set_queue_attributes", QueueUrl=url, Attributes={"VisibilityTimeout": seconds})


def _apply_visibility(chaos: Chaos, target: Target, prior: dict[str, Any], *, seconds: int) -> None:
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not 0 <= seconds <= MAX_VISIBILITY_SECONDS
    ):
        error = ChaosError(
            f"queue-visibility: seconds must be a whole number from 0 to {MAX_VISIBILITY_SECONDS}, "
            f"not {seconds!r}"
        )
        current = chaos.read(
            "sqs", "get_queue_attributes", QueueUrl=prior["queue_url"], AttributeNames=["VisibilityTimeout"]
        )
        unchanged = current["Attributes"]["VisibilityTimeout"] == prior["visibility"]
        give_up(chaos, "queue-visibility", prior["function"], error, unchanged=unchanged)
    _set_visibility(chaos, prior["queue_url"], str(seconds))


def _revert_visibility(chaos: Chaos, prior: dict[str, Any]) -> None:
    _set_visibility(chaos, prior["queue_url"], prior["visibility"])


ESM_DISABLE = Fault(
    "esm-disable", "SQS event source mapping disabled", _capture_disable, _apply_disable, _revert_disable
)
ESM_DELETE = Fault(
    "esm-delete", "SQS event source mapping deleted", _capture_delete, _apply_delete, _revert_delete
)
QUEUE_VISIBILITY = Fault(
    "queue-visibility",
    "visibility timeout of the mapped queue changed",
    _capture_visibility,
    _apply_visibility,
    _revert_visibility,
)
