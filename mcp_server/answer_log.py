"""An append-only record of every tool answer the server sent (``MCP_ANSWER_LOG``): one JSON line per
call, with the tool, its arguments, the caller's incident id (from the request's ``_meta``) and the answer
exactly as sent (after redaction), or the error the caller got.

It is the server's own account of what reached a model, independent of what any client kept: an operator
can audit it, and a judge can re-find a diagnosis's evidence in it. Lines are whole: each is written
under a lock with one ``write`` call. A write that fails is a warning in the server's log: the caller
still gets its answer.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

INCIDENT_META_KEY = "incident-response/incident-id"  # the supervisor's McpToolProvider sends it

logger = logging.getLogger(__name__)


class AnswerLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def record(
        self,
        tool: str,
        arguments: dict[str, Any],
        incident_id: str | None,
        *,
        answer: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        entry = {
            "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "tool": tool,
            "arguments": arguments,
            "incident_id": incident_id,
            **({"error": error} if error is not None else {"answer": answer}),
        }
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as stream:
                stream.write(line)
        except OSError as error:  # the caller still gets its answer; the record of it is what is lost
            logger.warning("answer log %s: %s was not recorded: %s", self.path, tool, error)


def incident_of(context: Any) -> str | None:
    """The incident id the caller named in the request's ``_meta``, if it named one (a short string)."""
    meta = getattr(getattr(context, "request_context", None), "meta", None)
    value = meta.get(INCIDENT_META_KEY) if isinstance(meta, dict) else None
    return value if isinstance(value, str) and 0 < len(value) <= 512 else None
