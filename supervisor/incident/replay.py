"""Replay a recorded investigation: the same incident and tool results, any model, and whether the
replay hash comes out the same. A recorded incident doubles as a regression fixture."""

from __future__ import annotations

import time
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import build_graph, initial_state, run_graph
from supervisor.agent.mcp_client import classify
from supervisor.agent.models import build_model
from supervisor.agent.providers import RecordedToolProvider
from supervisor.agent.run import AgentResult
from supervisor.diagnosis.precedents import HISTORY_TOOL
from supervisor.incident.audit import RecordedIncident, read_context, replay_hash
from supervisor.incident.store import IncidentStore
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings


@dataclass(frozen=True)
class Replay:
    recorded: RecordedIncident
    result: AgentResult
    replay_hash: str

    @property
    def matches(self) -> bool:
        return self.replay_hash == self.recorded.replay_hash


def load_recorded(store: IncidentStore, incident_id: str) -> RecordedIncident:
    item = store.get_context(incident_id)
    if item is None:
        raise LookupError(
            f"no investigation of {incident_id!r} is recorded in {store.context_table}: only incidents that "
            "reached the agent (DIAGNOSED, or FAILED without a diagnosis) have one"
        )
    return read_context(item)


async def replay(
    recorded: RecordedIncident, *, settings: SupervisorSettings, model: BaseChatModel | None = None
) -> Replay:
    started = time.monotonic()
    model = model if model is not None else build_model(settings.supervisor_model, settings)
    accounting = Accounting()
    state = initial_state(
        recorded.incident,
        recorded.incident_id,
        recorded.function_name,
        time.time() + settings.time_budget_seconds,
    )
    provider = RecordedToolProvider(recorded.tool_results)
    # The history is read again only if the recorded run read it (runs recorded before it was are not).
    recall = any(result.tool == HISTORY_TOOL for result in recorded.tool_results)
    graph = build_graph(model, provider, settings, accounting, recall=recall)
    try:
        final, reason = await run_graph(graph, state, settings.recursion_limit)
    except AgentError:
        raise
    except Exception as error:
        raise classify(error, "run") from error
    result = AgentResult.from_run(final, reason, accounting, started)
    version = recorded.replay_hash_version
    hashed = replay_hash(recorded.incident, result.tool_results, result.diagnosis, version)
    return Replay(recorded, result, hashed)
