"""Reading the function's invocation paths (``get_event_sources``): queues that back up, what they count, and
the impact figures the diagnosis states, each with the pointer to the field that counts it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from supervisor.diagnosis.impact import kind_of
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.findings import Pointer
from supervisor.faults.registry import FaultType

TOOL = "get_event_sources"
DEPTH, AGE = "ApproximateNumberOfMessages", "oldest_message_age_seconds"


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def backs_up(queue: dict[str, Any] | None) -> bool:
    """Messages wait in the queue: visible ones now, or an oldest message with an age."""
    return bool(queue) and (positive(queue.get(DEPTH)) or positive(queue.get(AGE)))  # type: ignore[union-attr]


def mappings(c: Conversation) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, mapping in enumerate(c.event_sources.get("mappings") or []):
        if isinstance(mapping, dict):
            yield index, mapping


def backlog_pointers(where: str, queue: dict[str, Any], supports: FaultType | None) -> list[Pointer]:
    """The depth and age of the oldest message of the queue at ``where`` ('mappings.0.queue'), when set."""
    name = queue.get("QueueArn", "the queue")
    pointers = []
    if positive(queue.get(DEPTH)):
        shown = f"{queue[DEPTH]} messages wait in {name}"
        pointers.append(Pointer(TOOL, f"{where}.{DEPTH}", queue[DEPTH], shown, supports))
    if positive(queue.get(AGE)):
        shown = f"The oldest message in {name} is {queue[AGE]:g} s old"
        pointers.append(Pointer(TOOL, f"{where}.{AGE}", queue[AGE], shown, supports))
    return pointers


def _numbers(value: Any, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{path}.{index}")
    elif positive(value):
        yield path, float(value)


def _resource(answer: dict[str, Any], field: str) -> str:
    """The resource a figure's field counts: the innermost queue, destination, topic or mapping's source,
    or the function."""
    parts = field.split(".")
    owner: Any = answer
    found = str(answer.get("function_arn") or answer.get("function_name"))
    for part in parts[:-1]:
        owner = owner[int(part)] if isinstance(owner, list) else owner[part]
        if isinstance(owner, dict):
            named = (
                owner.get("QueueArn")
                or owner.get("TopicArn")
                or owner.get("Destination")
                or owner.get("EventSourceArn")
            )
            found = str(named) if named else found
    return found


def impact(c: Conversation) -> list[tuple[dict[str, Any], Pointer]]:
    """Every figure the answer counts above zero: (kind, resource, value) and the pointer to its field."""
    answer = c.event_sources
    found = []
    for field, value in _numbers(answer, ""):
        kind = kind_of(field)
        if kind is None:
            continue
        resource = _resource(answer, field)
        pointer = Pointer(TOOL, field, _exact(answer, field), f"{kind}: {value:g} ({resource})", None)
        found.append(({"kind": kind, "resource": resource, "value": value}, pointer))
    return found


def _exact(answer: dict[str, Any], field: str) -> Any:
    owner: Any = answer
    for part in field.split("."):
        owner = owner[int(part)] if isinstance(owner, list) else owner[part]
    return owner
