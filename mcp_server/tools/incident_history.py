"""``get_incident_history``: the function's history (``mcp_server.history``), its read within the tool's
deadline; the incidents listed the most similar first, and the patterns of every incident read."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp_server.contract.common import Gap
from mcp_server.contract.history import (
    MAX_LISTED,
    MAX_READ,
    GetIncidentHistoryArgs,
    IncidentHistoryResponse,
)
from mcp_server.history import History, patterns, read_history, stamp
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext


def incident_history(ctx: ToolContext, args: GetIncidentHistoryArgs) -> IncidentHistoryResponse:
    now = datetime.now(UTC)
    function, table = ctx.target.function_name, ctx.settings.mcp_incident_state_table

    def query() -> History:
        return read_history(ctx.clients.dynamodb, table, function, args, now)

    meaning = "no past incident of the function is known: the history could not be read"
    history = ctx.reads.one(Read("dynamodb:Query", f"{table} of {function}", query, meaning))
    past = history.past if history else []
    if history is not None and history.more:
        ctx.reads.gaps.append(
            Gap(
                source=f"dynamodb:Query of {table} index {history.index}",
                meaning=f"only the newest {MAX_READ:,} incidents were read: older ones are not counted",
            )
        )
    listed = sorted(past, key=lambda p: (p.similarity or 0, p.observed_at), reverse=True)[:MAX_LISTED]
    return IncidentHistoryResponse(
        function_name=function,
        window_start=history.window_start if history else stamp(now),
        incidents_read=len(past),
        incidents=listed,
        patterns=patterns(past, now),
        gaps=ctx.reads.gaps,
    )
