"""Impact figures: what an event-driven failure holds back or has lost, each counted by one field of the
``get_event_sources`` answer. The rules brain reads them there; ``evidence.verify`` checks every submitted
figure the same way: it must cite the field that counts its kind, on the resource it names, and hold
exactly the value that field holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from supervisor.diagnosis.paths import resolve
from supervisor.schemas import EvidencePointer, ImpactFigure, ImpactKind

TOOL: Final = "get_event_sources"
_QUEUE_DEPTH = r"queue\.ApproximateNumberOfMessages"

# Each kind, the fields that count it (fullmatch), in words for the refusal message.
FIELDS: Final[Mapping[ImpactKind, tuple[re.Pattern[str], str]]] = {
    "messages_waiting": (
        re.compile(rf"mappings\.\d+\.{_QUEUE_DEPTH}"),
        "mappings.<n>.queue.ApproximateNumberOfMessages",
    ),
    "oldest_message_age_seconds": (
        re.compile(r"mappings\.\d+\.queue\.oldest_message_age_seconds"),
        "mappings.<n>.queue.oldest_message_age_seconds",
    ),
    "messages_in_dead_letter_queue": (
        re.compile(
            rf"mappings\.\d+\.dead_letter_{_QUEUE_DEPTH}|async_config\.destinations\.\d+\.{_QUEUE_DEPTH}"
        ),
        "mappings.<n>.dead_letter_queue.ApproximateNumberOfMessages or "
        "async_config.destinations.<n>.queue.ApproximateNumberOfMessages",
    ),
    "events_dropped": (
        re.compile(r"async_config\.metrics\.AsyncEventsDropped"),
        "async_config.metrics.AsyncEventsDropped",
    ),
    "deliveries_failed": (
        re.compile(r"async_config\.metrics\.(DeadLetterErrors|DestinationDeliveryFailures)"),
        "async_config.metrics.DeadLetterErrors or DestinationDeliveryFailures",
    ),
    "notifications_failed": (
        re.compile(r"subscriptions\.\d+\.notifications_failed"),
        "subscriptions.<n>.notifications_failed",
    ),
    "record_age_ms": (re.compile(r"mappings\.\d+\.iterator_age_ms"), "mappings.<n>.iterator_age_ms"),
}


def kind_of(field: str) -> ImpactKind | None:
    """The impact kind a get_event_sources field counts, or None."""
    return next((kind for kind, (pattern, _) in FIELDS.items() if pattern.fullmatch(field)), None)


def counted(response: Any, field: str) -> set[str]:
    """The names of the resource a field counts: a queue's ARN (and, for a mapping's queue, the mapping's
    source ARN), a stream mapping's source ARN, a destination's ARN, a topic's ARN, or the function (name
    and ARN) for its metrics."""
    parts = field.split(".")
    keys: tuple[str, ...]
    if parts[0] == "async_config" and parts[1] == "metrics":
        keys, owners = ("function_name", "function_arn"), [response]
    else:
        owners = [_get(response, ".".join(parts[:n])) for n in range(2, len(parts))]
        keys = ("QueueArn", "EventSourceArn", "Destination", "TopicArn")
    if parts[0] == "mappings" and parts[2] == "dead_letter_queue":
        owners = owners[1:]  # the dead-letter queue, not the mapping's source
    return {str(owner[key]) for owner in owners if isinstance(owner, dict) for key in keys if owner.get(key)}


def _get(data: Any, path: str) -> Any:
    try:
        return resolve(data, path)
    except LookupError:
        return None


def _same(value: float, observed: Any) -> bool:
    return isinstance(observed, int | float) and not isinstance(observed, bool) and float(observed) == value


def problem(figure: ImpactFigure, evidence: Sequence[EvidencePointer], held: Sequence[Sequence[Any]]) -> str:
    """Empty when the figure cites, among its verified pointers, the get_event_sources field that counts its
    kind on the resource it names, holding exactly its value; else why not."""
    pattern, what = FIELDS[figure.kind]
    for index in figure.evidence:
        pointer = evidence[index]
        if pointer.tool != TOOL or not pattern.fullmatch(pointer.field):
            continue
        for response in held[index]:
            observed = _get(response, pointer.field)
            names = counted(response, pointer.field)
            if figure.resource not in names:
                shown = ", ".join(sorted(names)) or "no named resource"
                return f"evidence {index} ({pointer.field}) counts {shown}, not {figure.resource}"
            if not _same(figure.value, observed):
                return f"evidence {index} ({pointer.field}) holds {observed!r}, not {figure.value:g}"
            return ""
    return f"a {figure.kind} figure must cite the get_event_sources field that counts it: {what}"
