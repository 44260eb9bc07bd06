"""The audit record of one investigation in ``incident-context``: the diagnosis, every message of the
reasoning chain, token usage, the validated tool results and a replay hash over them.

A DynamoDB item holds at most 400 KB. The chain is kept whole up to ``CHAIN_BUDGET`` bytes of JSON;
beyond that the system prompt, the incident and the last three turns are kept (``truncated: true``),
and if even those do not fit, their longest texts are cut.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import AIMessage, AnyMessage

from supervisor.agent import prompt
from supervisor.agent.run import AgentResult
from supervisor.incident.store import from_item, to_item
from supervisor.schemas import Diagnosis, ToolResult

CHAIN_BUDGET: Final[int] = 350_000
ITEM_LIMIT: Final[int] = 400 * 1024
_ITEM_MARGIN: Final[int] = 8_000  # attribute names and encoding overhead
KEPT_TURNS: Final[int] = 3
_CUT_MARK: Final[str] = " …[TRUNCATED]"
_MIN_FIELD: Final[int] = 200


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def serialize_message(message: AnyMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage):
        if message.tool_calls:
            entry["tool_calls"] = [
                {"id": call["id"], "name": call["name"], "args": call["args"]} for call in message.tool_calls
            ]
        if message.invalid_tool_calls:
            entry["invalid_tool_calls"] = [dict(call) for call in message.invalid_tool_calls]
    for key in ("tool_call_id", "name", "status"):
        if getattr(message, key, None):
            entry[key] = getattr(message, key)
    return entry


def reasoning_chain(messages: list[AnyMessage]) -> list[dict[str, Any]]:
    """Every message of the run, after the system prompt the model saw on each turn."""
    return [{"type": "system", "content": prompt.SYSTEM_PROMPT}, *map(serialize_message, messages)]


def _cut_longest(chain: list[dict[str, Any]]) -> bool:
    """Halve the longest content or tool-call field in the chain; False when nothing is long."""
    best: tuple[int, dict[str, Any], str] | None = None
    for entry in chain:
        for key in ("content", "tool_calls", "invalid_tool_calls"):
            if key in entry:
                text = entry[key] if isinstance(entry[key], str) else json.dumps(entry[key])
                if len(text) > _MIN_FIELD and (best is None or len(text) > best[0]):
                    best = (len(text), entry, key)
    if best is None:
        return False
    length, entry, key = best
    text = entry[key] if isinstance(entry[key], str) else json.dumps(entry[key])
    entry[key] = text[: length // 2] + _CUT_MARK
    return True


@dataclass(frozen=True)
class FittedChain:
    messages: list[dict[str, Any]]
    truncated: bool
    omitted: int  # messages left out; texts may also have been cut


def fit_chain(chain: list[dict[str, Any]], budget: int = CHAIN_BUDGET) -> FittedChain:
    """The chain within ``budget`` bytes of JSON."""
    if _size(chain) <= budget:
        return FittedChain(chain, truncated=False, omitted=0)
    head, rest = chain[:2], chain[2:]  # the system prompt and the incident
    starts = [i for i, entry in enumerate(rest) if entry["type"] == "ai"]
    first_kept = starts[-KEPT_TURNS] if len(starts) >= KEPT_TURNS else 0
    kept = [dict(entry) for entry in [*head, *rest[first_kept:]]]
    while _size(kept) > budget and _cut_longest(kept):
        pass
    return FittedChain(kept, truncated=True, omitted=len(chain) - len(kept))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, floats to 4 decimals: equal data, equal text."""
    return json.dumps(_rounded(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# 1: before trigger, timeline, gaps, ruled-out, commands and support; 2: before resolved faults
REPLAY_HASH_VERSION: Final[int] = 3


def structured_fields(diagnosis: Diagnosis, version: int = REPLAY_HASH_VERSION) -> dict[str, Any]:
    """The parts of a diagnosis a replay must reproduce exactly; free text (root cause, interpretations,
    remediation prose, reasons) is worded differently by different models and is left out. An older
    ``version`` is the field set of the records made with it, so that they are still compared like for
    like."""
    fields: dict[str, Any] = {
        "fault_types": sorted(diagnosis.fault_types),
        "severity": diagnosis.severity,
        "affected_resources": sorted(diagnosis.affected_resources),
        "evidence": [
            {"tool": p.tool, "field": p.field, "value": p.value, "supports": p.supports}
            for p in diagnosis.evidence
        ],
        "remediation_basis": [sorted(step.evidence_basis) for step in diagnosis.remediation_plan],
        "verified": [check.verified for check in diagnosis.verification.pointers],
        "confidence": diagnosis.confidence,
    }
    if version == 1:
        return fields
    trigger = diagnosis.trigger
    fields |= {
        "trigger": trigger.model_dump(include={"event_name", "identity", "time", "evidence"})
        if trigger
        else None,
        "timeline": [entry.model_dump(include={"time", "kind", "evidence"}) for entry in diagnosis.timeline],
        "gaps": sorted(gap.source for gap in diagnosis.gaps),
        "ruled_out": sorted((entry.fault_type, sorted(entry.evidence)) for entry in diagnosis.ruled_out),
        "commands": [step.command for step in diagnosis.remediation_plan],
        "entries_verified": [(check.entry, check.verified) for check in diagnosis.verification.entries],
        "support": [(s.fault_type, s.supported_by) for s in diagnosis.verification.support],
    }
    if version == 2:
        return fields
    return fields | {
        "resolved": [
            fault.model_dump(mode="json", exclude={"reason"})
            for fault in sorted(diagnosis.resolved, key=lambda fault: fault.fault_type)
        ]
    }


def replay_hash(
    incident: dict[str, Any],
    results: list[ToolResult],
    diagnosis: Diagnosis | None,
    version: int = REPLAY_HASH_VERSION,
) -> str:
    """SHA-256 over the incident, the validated tool results (in a canonical order, so the order of
    calls within a turn does not matter) and the structured diagnosis fields."""
    payload = {
        "incident": incident,
        "tool_results": sorted(canonical_json(r.model_dump(mode="json")) for r in results),
        "diagnosis": structured_fields(diagnosis, version) if diagnosis is not None else None,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def _stored_size(value: object) -> int:
    """About what DynamoDB counts for a value: a string's UTF-8 bytes, a binary's, else a small bound."""
    if isinstance(value, str):
        return len(value.encode())
    return len(value) if isinstance(value, bytes) else 64


def context_item(
    *,
    incident_id: str,
    function_name: str,
    incident: dict[str, Any],
    result: AgentResult,
    model: str,
    recorded_at: str,
    stored: Diagnosis | None = None,
    extra: dict[str, object] | None = None,
) -> dict[str, dict[str, Any]]:
    """The ``incident-context`` item of a finished investigation, under DynamoDB's 400 KB: its reasoning
    chain is cut to what the rest leaves room for, ``extra`` attributes (a provisional diagnosis kept beside
    the final one) included. ``stored`` is the diagnosis to store when the pipeline added to the agent's (a
    provisional one's gap); the replay hash is over the agent's own, which a replay reproduces."""
    diagnosis = result.diagnosis
    shown = stored if stored is not None else diagnosis
    results = gzip.compress(
        json.dumps([r.model_dump(mode="json") for r in result.tool_results]).encode(), mtime=0
    )
    fields: dict[str, object] = {
        "incident_id": incident_id,
        "function_name": function_name,
        "recorded_at": recorded_at,
        "model": model,
        "stop_reason": result.stop_reason,
        "incident": canonical_json(incident),
        "diagnosis": shown.model_dump_json() if shown is not None else None,
        "tools_called": [call.tool for call in result.tool_calls],
        "tool_results": results,
        "llm_calls": len(result.llm_calls),
        "prompt_tokens": sum(u.prompt_tokens for u in result.token_usage),
        "completion_tokens": sum(u.completion_tokens for u in result.token_usage),
        "total_tokens": result.total_tokens,
        "token_usage": json.dumps([u.model_dump() for u in result.token_usage]),
        "replay_hash": replay_hash(incident, result.tool_results, diagnosis),
        "replay_hash_version": REPLAY_HASH_VERSION,
        "failed_attempts": [f"{error.category}: {error.message}" for error in result.failed_attempts],
    } | (extra or {})
    others = sum(len(k) + _stored_size(v) for k, v in fields.items())
    budget = min(CHAIN_BUDGET, ITEM_LIMIT - _ITEM_MARGIN - others)
    chain = fit_chain(reasoning_chain(result.messages), budget)
    fields |= {
        "reasoning_chain": json.dumps(chain.messages, ensure_ascii=False),
        "truncated": chain.truncated,
        "omitted_messages": chain.omitted,
    }
    return to_item(fields)


@dataclass(frozen=True)
class RecordedIncident:
    """What a replay needs from an ``incident-context`` item."""

    incident_id: str
    function_name: str
    incident: dict[str, Any]
    tool_results: list[ToolResult]
    replay_hash: str
    replay_hash_version: int  # 1 for records made before the version was stored
    model: str
    diagnosis: Diagnosis | None


def read_context(item: dict[str, dict[str, Any]]) -> RecordedIncident:
    plain = from_item(item)
    return RecordedIncident(
        incident_id=str(plain["incident_id"]),
        function_name=str(plain["function_name"]),
        incident=json.loads(plain["incident"]),
        tool_results=[
            ToolResult.model_validate(r) for r in json.loads(gzip.decompress(plain["tool_results"]))
        ],
        replay_hash=str(plain["replay_hash"]),
        replay_hash_version=int(plain.get("replay_hash_version", 1)),
        model=str(plain["model"]),
        diagnosis=Diagnosis.model_validate_json(plain["diagnosis"]) if "diagnosis" in plain else None,
    )
