"""The shape of one log event, read on its own: what it looks like (the kind it would be if it stood where
the platform writes such records), the request id it names, the report figures or error detail it carries.
Where it stands in its stream decides whether that kind holds (``envelope``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_server.contract.logs import ErrorDetail, LineKind

# A request id: Lambda's are UUIDs, but documentation and reports mask them (``8f507cfc-xmpl-4697-...``,
# ``123``), so any word of letters, digits and dashes; the runtimes write ``undefined`` or nothing outside
# an invocation.
ID = r"[0-9A-Za-z][0-9A-Za-z-]{0,63}"
_REQUEST_ID = re.compile(ID)
_NO_REQUEST = frozenset({"undefined", "null", "None"})
_WRAPPED_TYPE = re.compile(r"^(?:Function|Runtime|Init)<(?P<inner>.+)>$")  # Ruby's "Function<TypeError>"


@dataclass(frozen=True)
class Figures:
    """A report's figures, from a text ``REPORT``/``INIT_REPORT`` line or a JSON ``platform.report``."""

    duration_ms: float | None = None
    billed_duration_ms: float | None = None
    memory_size_mb: int | None = None
    max_memory_used_mb: int | None = None
    init_duration_ms: float | None = None
    status: str | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class Shape:
    """What an event looks like. ``kind`` is ``function`` when it looks like nothing else."""

    kind: LineKind = "function"
    request_id: str | None = None
    error: ErrorDetail | None = None
    figures: Figures | None = None
    exit_marker: bool = False  # a bare ``Runtime.ExitError`` line, the second half of a runtime-exit record


FUNCTION = Shape()


def request_id(value: object) -> str | None:
    """``value`` when it is a request id (the runtimes write ``undefined`` or ``""`` outside invocations)."""
    if not isinstance(value, str) or value in _NO_REQUEST:
        return None
    return value if _REQUEST_ID.fullmatch(value) else None


def error_type(value: object) -> str | None:
    """An error type as the record gives it, Ruby's ``Function<TypeError>`` unwrapped to ``TypeError``."""
    if not isinstance(value, str) or not value:
        return None
    wrapped = _WRAPPED_TYPE.match(value)
    return wrapped["inner"] if wrapped else value


def number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def whole(value: object) -> int | None:
    found = number(value)
    return int(found) if found is not None else None
