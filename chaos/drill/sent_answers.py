"""What the MCP server sent, as the drill's independent judge reads it: the answers its answer log holds for
an incident, and a walker that follows a pointer's dotted path into them with its own code (a dict key may
hold dots, so every way of joining the segments into keys is followed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

METRICS: Final = "get_function_metrics"
CONFIG: Final = "get_lambda_config"
NETWORK: Final = "get_network_state"
IAM: Final = "get_iam_state"
SOURCES: Final = "get_event_sources"
CHANGES: Final = "get_recent_changes"
LOGS: Final = "get_recent_logs"
HISTORY: Final = "get_incident_history"


@dataclass(frozen=True)
class SentAnswer:
    """One answer as the server sent it."""

    tool: str
    arguments: dict[str, Any]
    answer: dict[str, Any]


def sent_answers(log: Path, incident_id: str) -> list[SentAnswer]:
    """The answers the server's answer log holds for ``incident_id`` (errors carry no evidence)."""
    if not log.exists():
        return []
    needle = json.dumps(incident_id)
    answers = []
    with log.open(encoding="utf-8") as lines:
        for line in lines:
            if needle not in line:  # most lines are other incidents': skip them unparsed
                continue
            entry = json.loads(line)
            if entry.get("incident_id") == incident_id and isinstance(entry.get("answer"), dict):
                answers.append(SentAnswer(entry["tool"], entry["arguments"], entry["answer"]))
    return answers


KeyPath = tuple[str | int, ...]  # a concrete path: dict keys (which may hold dots) and list indices


def reached(node: Any, parts: list[str], path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Every (concrete path, value) that ``parts`` lead to in ``node``."""
    if not parts:
        yield path, node
        return
    if isinstance(node, list):
        if parts[0].isdecimal() and int(parts[0]) < len(node):
            index = int(parts[0])
            yield from reached(node[index], parts[1:], (*path, index))
    elif isinstance(node, dict):
        for end in range(1, len(parts) + 1):
            key = ".".join(parts[:end])
            if key in node:
                yield from reached(node[key], parts[end:], (*path, key))


def values_at(node: Any, parts: list[str]) -> Iterator[Any]:
    """The values ``parts`` lead to in ``node``: a key may itself hold dots (a policy's name can), so
    every way of joining the parts into keys is followed."""
    return (value for _, value in reached(node, parts))


def value_at(node: Any, path: KeyPath) -> Any:
    """The value at a concrete ``path`` in ``node``, or None."""
    for step in path:
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict):
            node = node.get(step)
        else:
            return None
    return node
