"""The timeline rule every diagnosis is checked against: a change can have started a failure only if no
invocation succeeded after the change had applied and before that failure began."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

# IAM changes are eventually consistent and take seconds to apply, and an invocation already running when
# a change lands may still succeed: a success that started this soon after a change does not clear it.
PROPAGATION = timedelta(seconds=10)


def _started(invocation: dict[str, Any]) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(invocation.get("started")))
    except ValueError:
        return None
    return when if when.tzinfo else None


def success_after(change: datetime, logs: Sequence[Any]) -> str:
    """Why ``change`` cannot have started the failures the logs show after it: the start of a successful
    invocation after the change had applied and before the first failure after the change; '' if none."""
    change = change if change.tzinfo else change.replace(tzinfo=UTC)
    for answer in logs:
        invocations = answer.get("invocations", []) if isinstance(answer, dict) else []
        timed = [(when, i) for i in invocations if (when := _started(i)) is not None and when >= change]
        failed = [when for when, i in timed if i.get("outcome") != "no_error_seen"]
        if not failed:
            continue
        first = min(failed)
        cleared = [
            when
            for when, i in timed
            if i.get("outcome") == "no_error_seen" and change + PROPAGATION < when < first
        ]
        if cleared:
            return (
                f"an invocation started at {max(cleared).isoformat()} succeeded after the change and "
                f"before the first failure after it ({first.isoformat()}): a change before the last "
                "successful invocation cannot have started the failures"
            )
    return ""
