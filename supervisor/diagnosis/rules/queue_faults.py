"""Existing fault classes on an SQS event source mapping, read from ``get_event_sources`` (which the
function's users cannot write) and, where it only describes, from the function's own log lines.

- A poison record (bad_input): the source queue's redrive policy moved messages to its dead-letter queue
  while the mapping delivered and deleted the others; the function's warnings name the same message in two
  invocations or more (it was received again and again). The queue's visibility timeout is not below the
  function's timeout (else the message was received again while still processed: a configuration error).
- A role that may not poll (permission_loss): the execution role's policies, evaluated now, refuse one of the
  actions Lambda's poller makes with it on the source queue (sqs:ReceiveMessage, sqs:DeleteMessage,
  sqs:GetQueueAttributes, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html) while an
  enabled mapping's queue backs up: a Deny, or no Allow when Lambda reports that polling failed
  (LastProcessingResult 'PROBLEM: ...'; the queue's own policy may grant what the role's do not). The
  trigger is the role's change; the remedy undoes it (``undo``, the permission_loss check's own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from supervisor.diagnosis.iam_policy import Evaluation, StatementRef, evaluate_role
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.event_paths import DEPTH, TOOL, backlog_pointers, backs_up, mappings, positive
from supervisor.diagnosis.rules.findings import Finding, Gap, Pointer, Remedy
from supervisor.diagnosis.rules.grants import is_role_change

_LOGS, _IAM = "get_recent_logs", "get_iam_state"
POLLER_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
_DENYING = ("denied", "implicit_deny", "boundary_excludes")
# The permission_loss check's remedy for a role: (the statements that refuse) -> (remedy, pointers).
Undo = Callable[[Sequence[StatementRef]], tuple[Remedy, list[Pointer]]]
# A message id: SQS gives every message a UUID (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
# APIReference/API_Message.html, MessageId); request ids are UUIDs too and are left out.
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
# A line the function wrote at warning level or above: Python's text format ('[WARNING]'), Node.js's
# ('<time>\t<request id>\tWARN\t'), and the JSON format's "level" field.
_WARNING = re.compile(
    r"^\[(WARN|WARNING|ERROR|CRITICAL)\]|\t(WARN|ERROR|FATAL)\t|\"level\"\s*:\s*\"(WARN|WARNING|ERROR|FATAL)\"",
    re.IGNORECASE,
)


def _warnings(c: Conversation) -> Iterator[tuple[int, str, set[str]]]:
    """(index in the answer's events, request id, the message ids named) of each warning line."""
    requests = {str(i.get("request_id")) for i in c.logs.get("invocations") or []}
    for index, event in enumerate(c.logs.get("events") or []):
        text = str(event.get("message") or "")
        if event.get("kind") != "function" or not _WARNING.search(text):
            continue
        named = {m.lower() for m in _UUID.findall(text)} - requests - {str(event.get("request_id"))}
        if named and event.get("request_id"):
            yield index, str(event["request_id"]), named


def repeated_message(c: Conversation) -> tuple[str, list[int]] | None:
    """The message id that the function's warnings name in the most invocations, two at least, with the
    indices of the first line of each invocation that names it."""
    seen: dict[str, dict[str, int]] = {}
    for index, request, named in _warnings(c):
        for message in named:
            seen.setdefault(message, {}).setdefault(request, index)
    found = max(seen.items(), key=lambda item: len(item[1]), default=None)
    if found is None or len(found[1]) < 2:
        return None
    return found[0], sorted(found[1].values())


def poison_record(c: Conversation) -> Finding | None:
    """bad_input: messages of the mapping's source queue moved to its dead-letter queue while the others
    were deleted, one of them named failing in several invocations."""
    for index, mapping in mappings(c):
        queue, dlq = mapping.get("queue") or {}, mapping.get("dead_letter_queue") or {}
        if mapping.get("visibility_timeout_below_function_timeout") is not False:
            continue  # unknown, or received again while still processed (configuration_error)
        if not positive(dlq.get(DEPTH)) or not positive(queue.get("messages_deleted")):
            continue
        repeated = repeated_message(c)
        if repeated is None:
            return None
        return _poison(c, index, queue, dlq, repeated)
    return None


def _poison(
    c: Conversation, index: int, queue: dict[str, Any], dlq: dict[str, Any], repeated: tuple[str, list[int]]
) -> Finding:
    where, (message, lines) = f"mappings.{index}", repeated
    source, target, depth = str(queue["QueueArn"]), str(dlq["QueueArn"]), dlq[DEPTH]
    pointers = _poison_pointers(c, where, queue, dlq, repeated)
    receives = queue.get("MaxReceiveCount")
    shown = f" {receives} times" if isinstance(receives, int) else " repeatedly"
    cause = (
        f"A poison record: message {message} of {source} failed in {c.name} each time it was received "
        f"({len(lines)} invocations read) while the other messages were processed and deleted; after being "
        f"received{shown} it was moved to the dead-letter queue {target}, which holds {depth:g} message(s). "
        "The message's content, not the function, its configuration or its permissions, is the cause"
    )
    dlq_name = target.rsplit(":", 1)[-1]
    remedy = Remedy(
        f"Inspect the message in {dlq_name} and fix it at its source",
        f"Read the message from {target} (aws sqs receive-message) and fix its producer, or make {c.name} "
        "handle or drop such a record. Only then move it back to the source queue (aws sqs "
        "start-message-move-task): moved back as it is, it fails again and returns to the dead-letter queue.",
        None,
        "low",
    )
    gap = Gap(
        "remediation",
        f"No command can fix a record's content: inspect the message {message} held in {dlq_name} and the "
        f"producer that sent it to {source.rsplit(':', 1)[-1]}; a redrive (start-message-move-task) before "
        "that only sends it back to fail again.",
        (pointers[0],),
    )
    return Finding(
        "bad_input",
        cause,
        "medium",
        pointers,
        remedy,
        resources=(source, target),
        gaps=(gap,),
        from_change=False,
    )


def _poison_pointers(
    c: Conversation, where: str, queue: dict[str, Any], dlq: dict[str, Any], repeated: tuple[str, list[int]]
) -> list[Pointer]:
    """The dead-letter queue's depth and the deletions beside it (which corroborate), the redrive counts
    and the function's lines naming the message (which describe)."""
    message, lines = repeated
    source, depth = str(queue["QueueArn"]), dlq[DEPTH]
    said = (f"The function reports message {message} as failed", "and again when it is received again")
    return [
        Pointer(
            TOOL,
            f"{where}.dead_letter_queue.{DEPTH}",
            depth,
            f"{depth} messages of {source} were moved to its dead-letter queue {dlq['QueueArn']}",
            "bad_input",
        ),
        Pointer(
            TOOL,
            f"{where}.queue.messages_deleted",
            queue["messages_deleted"],
            "Messages the mapping processed and deleted beside them",
            "bad_input",
        ),
        *_redrive_pointers(where, queue),
        *(
            Pointer(_LOGS, f"events.{line}.message", c.logs["events"][line]["message"], text, None)
            for line, text in zip(lines[:2], said, strict=False)
        ),
    ]


def _redrive_pointers(where: str, queue: dict[str, Any]) -> list[Pointer]:
    pointers = []
    if positive(queue.get("messages_received")):
        shown = f"Messages received, {queue.get('messages_sent')} sent: some were received more than once"
        received = queue["messages_received"]
        pointers.append(Pointer(TOOL, f"{where}.queue.messages_received", received, shown, None))
    if isinstance(queue.get("MaxReceiveCount"), int):
        shown = "Receives after which the redrive policy moves a message to the dead-letter queue"
        count = queue["MaxReceiveCount"]
        pointers.append(Pointer(TOOL, f"{where}.queue.MaxReceiveCount", count, shown, None))
    return pointers


def receive_denied(c: Conversation, undo: Undo) -> Finding | None:
    """permission_loss: an enabled mapping's queue backs up and the role refuses what the poller calls."""
    if not c.iam:
        return None
    for index, mapping in mappings(c):
        queue = mapping.get("queue") or {}
        if mapping.get("State") != "Enabled" or not backs_up(queue):
            continue
        evaluations = [evaluate_role(c.iam, action, str(queue["QueueArn"])) for action in POLLER_ACTIONS]
        refused = [e for e in evaluations if e.decision in _DENYING]
        # Without a Deny, the queue's own policy may still grant what the role's policies do not: only
        # Lambda's report that polling failed settles it.
        reported = str(mapping.get("LastProcessingResult") or "").startswith("PROBLEM")
        if any(e.decision == "denied" for e in refused) or (refused and reported):
            return _receive_denied(c, index, mapping, refused, undo)
    return None


def _receive_denied(
    c: Conversation, index: int, mapping: dict[str, Any], refused: list[Evaluation], undo: Undo
) -> Finding:
    where, queue = f"mappings.{index}", mapping["queue"]
    source, role = str(queue["QueueArn"]), str(c.iam.get("role_name") or "the execution role")
    refs = [m.statement for e in refused for m in e.deciding]
    remedy, restore = undo(refs)
    pointers = [*_refusal_pointers(c, refused), *backlog_pointers(f"{where}.queue", queue, None), *restore]
    result = str(mapping.get("LastProcessingResult") or "")
    if result.startswith("PROBLEM"):
        shown = "What Lambda last got polling the queue"
        pointers.append(Pointer(TOOL, f"{where}.LastProcessingResult", result, shown, "permission_loss"))
    actions = ", ".join(e.action for e in refused)
    lost, dlq = "", mapping.get("dead_letter_queue") or {}
    if positive(dlq.get(DEPTH)) and dlq.get("QueueArn"):
        lost = f"; {dlq[DEPTH]} messages it could not finish were moved to {dlq['QueueArn']}"
        shown = f"{dlq[DEPTH]} messages of {source} were moved to its dead-letter queue"
        pointers.append(Pointer(TOOL, f"{where}.dead_letter_queue.{DEPTH}", dlq[DEPTH], shown, None))
    return Finding(
        "permission_loss",
        f"The execution role {role} of {c.name} no longer allows {actions} on {source}: Lambda polls the "
        f"queue with the function's role, so the mapping cannot finish its messages{lost}.",
        "high",
        pointers,
        remedy,
        relevant_change=is_role_change,
        resources=(source, str(dlq["QueueArn"])) if lost else (source,),
        # the poller's invocations stop; without sqs:DeleteMessage they go on
        ends_successes=any(e.action == "sqs:ReceiveMessage" for e in refused),
    )


def _refusal_pointers(c: Conversation, refused: list[Evaluation]) -> list[Pointer]:
    """The statements that refuse each action (a Deny, a boundary), or the policies with nothing for it."""
    pointers = []
    for evaluation in refused:
        for match in evaluation.deciding[:2]:
            ref = match.statement
            value = list(ref.action) if isinstance(ref.action, tuple) else ref.action
            shown = f"Decides against {evaluation.action} ({evaluation.reason})"
            pointers.append(Pointer(_IAM, f"{ref.path}.Action", value, shown, "permission_loss"))
        if not evaluation.deciding:
            policies = c.iam.get("inline_policies") or {}
            shown = f"No statement allows {evaluation.action} on the queue"
            pointers.append(Pointer(_IAM, "inline_policies", policies, shown, "permission_loss"))
    return list({(p.field, p.interpretation): p for p in pointers}.values())
