"""A bad record on the stream a function reads through its one Kinesis event source mapping.

- ``stream-poison`` (no parameter): ``PutRecord`` of a record that is not JSON on the stream's first shard
  (an explicit hash key of 0), as a producer with a bug would write it. A stream data event: CloudTrail's
  event history does not record it, so no change in the history explains what follows. The saved state is
  the mapping's retry and failure settings; restore puts them back when a remediation changed them. The
  record stays in the stream (Kinesis deletes none before its retention ends): the shard moves past it
  only when Lambda gives up on it.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused
from chaos.faults.event_sources import mappings_of

POISON = b"not a click {"
FIRST_SHARD_HASH_KEY = "0"
# The mapping's settings a remediation may change to let the shard move on (UpdateEventSourceMapping).
_SETTINGS = ("MaximumRetryAttempts", "MaximumRecordAgeInSeconds", "BisectBatchOnFunctionError")


def _stream_mapping(chaos: Chaos, function_name: str) -> dict[str, Any]:
    """The function's one Kinesis mapping; ChaosRefused when it has none or several."""
    found = mappings_of(chaos, function_name, "kinesis")
    if len(found) != 1:
        raise ChaosRefused(
            f"refusing stream-poison on {function_name}: it has {len(found)} Kinesis event source mappings; "
            "the injector writes to the stream of its only one"
        )
    return found[0]


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    mapping = _stream_mapping(chaos, target.function_name)
    return {
        "function": target.function_name,
        "uuid": mapping["UUID"],
        "stream": mapping["EventSourceArn"],
        "settings": {key: mapping[key] for key in _SETTINGS if key in mapping},
        "destination": mapping.get("DestinationConfig") or {"OnFailure": {}},
    }


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    chaos.call(
        "kinesis",
        "put_record",
        StreamARN=prior["stream"],
        Data=POISON,
        PartitionKey="poison",
        ExplicitHashKey=FIRST_SHARD_HASH_KEY,
    )


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    mapping = chaos.read("lambda", "get_event_source_mapping", UUID=prior["uuid"])
    now = {key: mapping.get(key) for key in prior["settings"]}
    destination = mapping.get("DestinationConfig") or {"OnFailure": {}}
    if now == prior["settings"] and destination == prior["destination"]:
        return
    chaos.call(
        "lambda",
        "update_event_source_mapping",
        UUID=prior["uuid"],
        DestinationConfig=prior["destination"],
        **prior["settings"],
    )


STREAM_POISON = Fault(
    "stream-poison", "a record the function cannot read on its stream", _capture, _apply, _revert
)
