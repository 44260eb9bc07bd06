"""Event source stopped: the source no longer delivers to the function while work backs up.

Read from the function's invocation paths (``get_event_sources``), which its users cannot write: an SQS event
source mapping whose State is Disabled while its queue holds messages (visible ones, or an oldest message with
an age); or, when the incident names the queue or topic that alarmed, no mapping or subscription left that
delivers it to the function, with the change that removed it in the change history (a
DeleteEventSourceMapping whose mapping read that queue, an Unsubscribe). A Disabled mapping over an empty
queue holds nothing back and is not a fault. The trigger is the change to that mapping (CloudTrail names
Lambda's events with an API version, UpdateEventSourceMapping20150331: matched by the operation).
"""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.event_paths import TOOL, backlog_pointers, backs_up, mappings
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.triggers import change_events

_FAULT = "event_source_stopped"
_STOPPED = frozenset({"Disabled", "Disabling"})


def _uuid_of(event: ChangeEvent) -> str | None:
    """The mapping a change names (CloudTrail writes the request's UUID as 'uUID'; matched without case)."""
    summary = event.event.get("summary") or {}
    return next((str(v) for k, v in summary.items() if k.lower() == "uuid"), None)


def _touches(operation: str, uuid: str | None) -> Any:
    def relevant(event: ChangeEvent) -> bool:
        named = _uuid_of(event)
        return event.operation == operation and (uuid is None or named is None or named == uuid)

    return relevant


def check(c: Conversation) -> Verdict:
    if not c.event_sources:
        return None
    for index, mapping in mappings(c):
        if mapping.get("State") in _STOPPED and backs_up(mapping.get("queue")):
            return _disabled(c, index, mapping)
    return _removed_mapping(c) or _removed_subscription(c)


def _disabled(c: Conversation, index: int, mapping: dict[str, Any]) -> Finding:
    where, uuid, source = f"mappings.{index}", str(mapping["UUID"]), str(mapping["EventSourceArn"])
    state = mapping["State"]
    pointers = [
        Pointer(TOOL, f"{where}.State", state, f"The mapping from {source} is {state}", _FAULT),
        Pointer(TOOL, f"{where}.UUID", uuid, "The mapping's UUID", None),
        *backlog_pointers(f"{where}.queue", mapping["queue"], _FAULT),
    ]
    if mapping.get("StateTransitionReason"):
        reason = mapping["StateTransitionReason"]
        pointers.append(Pointer(TOOL, f"{where}.StateTransitionReason", reason, "Why it changed state", None))
    remedy = Remedy(
        f"Enable the event source mapping {uuid} again",
        f"Lambda stopped reading {source} when the mapping was disabled; enabling it resumes polling from "
        "the messages still in the queue.",
        command(c, "lambda", "UpdateEventSourceMapping", {"UUID": uuid, "Enabled": True}),
        "low",
    )
    return Finding(
        _FAULT,
        f"The event source mapping {uuid} from {source} to {c.name} is {state}, and messages back up in "
        "the queue: nothing delivers them to the function.",
        "high",
        pointers,
        remedy,
        relevant_change=_touches("UpdateEventSourceMapping", uuid),
        resources=(source,),
    )


def _removal(c: Conversation, operation: str) -> ChangeEvent | None:
    return next((e for e in change_events(c) if e.operation == operation), None)  # the newest first


def _removed_mapping(c: Conversation) -> Finding | None:
    """The alarmed queue is the source of no mapping of the function, and a mapping was deleted."""
    queue = c.alarmed_resource
    if queue is None or not queue.startswith("arn:aws:sqs:"):
        return None
    listed = list(mappings(c))
    deleted = next(
        (
            e
            for e in change_events(c)  # the newest first
            if e.operation == "DeleteEventSourceMapping"
            and (e.event.get("summary") or {}).get("eventSourceArn") == queue
        ),
        None,
    )
    if any(m.get("EventSourceArn") == queue for _, m in listed) or deleted is None:
        return None
    pointers = [
        Pointer(TOOL, "mappings", [m for _, m in listed], f"No mapping reads {queue} any more", _FAULT)
    ]
    settings, created = _created_settings(c, queue, deleted)
    if created is not None:
        pointers.append(
            Pointer(
                "get_recent_changes",
                f"events.{created.index}.summary",
                created.event.get("summary"),
                "The mapping as it was created: its settings are put back with it",
                None,
            )
        )
    remedy = Remedy(
        f"Map {queue} to {c.name} again, as it was",
        "Its event source mapping was deleted; a new one with the settings it was created with (batch size, "
        "partial batch responses, ...) resumes delivery of the messages still waiting."
        if created is not None
        else "Its event source mapping was deleted and the change history does not show how it was created: "
        "check its batch size and partial batch responses (ReportBatchItemFailures) before you map it again.",
        command(
            c,
            "lambda",
            "CreateEventSourceMapping",
            {"FunctionName": c.name, "EventSourceArn": queue, **settings},
        ),
        "low",
    )
    return Finding(
        _FAULT,
        f"No event source mapping delivers {queue}, whose alarm opened the incident, to {c.name} any more: "
        "its mapping was deleted.",
        "high",
        pointers,
        remedy,
        relevant_change=lambda e: e.index == deleted.index,
        resources=(queue,),
    )


# The settings a mapping is created with, as CloudTrail records CreateEventSourceMapping's request
# (camelCase), and the API's names for them.
_MAPPING_SETTINGS = {
    "batchSize": "BatchSize",
    "maximumBatchingWindowInSeconds": "MaximumBatchingWindowInSeconds",
    "functionResponseTypes": "FunctionResponseTypes",
    "enabled": "Enabled",
    "scalingConfig": "ScalingConfig",
    "filterCriteria": "FilterCriteria",
}


def _created_settings(
    c: Conversation, queue: str, deleted: ChangeEvent
) -> tuple[dict[str, Any], ChangeEvent | None]:
    """The settings of the latest CreateEventSourceMapping of ``queue`` for the function before ``deleted``
    (the mapping that was deleted, as it was created), and that event; none when the history lacks it."""
    created = next(
        (
            e
            for e in change_events(c)  # the newest first
            if e.operation == "CreateEventSourceMapping"
            and e.time < deleted.time
            and (e.event.get("summary") or {}).get("eventSourceArn") == queue
        ),
        None,
    )
    if created is None:
        return {}, None
    summary = created.event.get("summary") or {}
    return {
        api: summary[key] for key, api in _MAPPING_SETTINGS.items() if summary.get(key) is not None
    }, created


def _removed_subscription(c: Conversation) -> Finding | None:
    """The alarmed topic has no subscription to the function any more, and a subscription was removed."""
    topic = c.alarmed_resource
    if topic is None or not topic.startswith("arn:aws:sns:"):
        return None
    subscriptions = c.event_sources.get("subscriptions") or []
    if any(s.get("TopicArn") == topic for s in subscriptions) or _removal(c, "Unsubscribe") is None:
        return None
    arn = str(c.event_sources.get("function_arn") or c.config.get("FunctionArn") or c.name)
    remedy = Remedy(
        f"Subscribe {c.name} to {topic} again",
        "Its subscription was removed: the topic's notifications no longer reach the function.",
        command(c, "sns", "Subscribe", {"TopicArn": topic, "Protocol": "lambda", "Endpoint": arn}),
        "low",
    )
    pointers = [
        Pointer(TOOL, "subscriptions", subscriptions, f"No subscription of {topic} delivers to it", _FAULT)
    ]
    return Finding(
        _FAULT,
        f"{topic}, whose alarm opened the incident, no longer delivers to {c.name}: its subscription was "
        "removed.",
        "high",
        pointers,
        remedy,
        relevant_change=_touches("Unsubscribe", None),
        resources=(topic,),
    )
