"""The corroboration policy: which sources can support each fault type, for every model.

Log text is written by the function's code, and so by whoever controls its input. A fault type counts
as supported only when a verified pointer from a source the function's users cannot write backs it: IAM
policies, configuration, metrics, the network's verdict, the change history. Log pointers add detail and
never support alone, and a log line cited for a fault must be the terminal error of a failed invocation
(the runtime's error record, a timeout, the runtime exiting), not any line the code printed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supervisor.diagnosis.paths import resolve
from supervisor.schemas import EvidencePointer, FaultSupport, FaultType

LOG_TOOL = "get_recent_logs"
TERMINAL_KINDS = frozenset({"error_record", "timeout", "runtime_exit"})


@dataclass(frozen=True)
class Source:
    """Fields of one tool's answer that can back a fault type."""

    tool: str
    fields: re.Pattern[str]
    what: str
    services: frozenset[str] = frozenset()  # change events only: the event's service must be one of these

    def backs(self, pointer: EvidencePointer, responses: Sequence[Any]) -> bool:
        if pointer.tool != self.tool or not self.fields.fullmatch(pointer.field):
            return False
        if not self.services:
            return True
        event = pointer.field.split(".")[:2]  # events.<n>
        return any(_service(response, event) in self.services for response in responses)


def _service(response: Any, event: list[str]) -> str | None:
    try:
        return str(resolve(response, ".".join([*event, "service"])))
    except LookupError:
        return None


def _source(tool: str, fields: str, what: str, *services: str) -> Source:
    return Source(tool, re.compile(fields), what, frozenset(services))


_METRICS = "get_function_metrics"
_CHANGE = r"events\.\d+(\..+)?"
_IAM = "iam.amazonaws.com"
_LAMBDA = "lambda.amazonaws.com"
_EC2 = "ec2.amazonaws.com"

ERRORS = _source(
    _METRICS,
    r"errors|error_rate|first_error_minute|minutes\.\d+\.errors",
    "get_function_metrics errors (errors, error_rate, first_error_minute, minutes.<n>.errors)",
)
POLICIES = _source(
    "get_iam_state",
    r"(inline_policies|attached_policies|permissions_boundary)(\..+)?",
    "get_iam_state policy statements (inline_policies, attached_policies, permissions_boundary)",
)
IAM_CHANGE = _source("get_recent_changes", _CHANGE, "an IAM event in get_recent_changes (events.<n>)", _IAM)
THROTTLES = _source(
    _METRICS,
    r"throttles|first_throttle_minute|minutes\.\d+\.throttles",
    "get_function_metrics throttles (throttles, first_throttle_minute, minutes.<n>.throttles)",
)
LIMIT = _source(
    "get_lambda_config", r"ReservedConcurrentExecutions", "get_lambda_config ReservedConcurrentExecutions"
)
CONCURRENCY = _source(
    _METRICS,
    r"minutes\.\d+\.concurrent_executions_max",
    "get_function_metrics minutes.<n>.concurrent_executions_max",
)
LAMBDA_CHANGE = _source(
    "get_recent_changes", _CHANGE, "a Lambda event in get_recent_changes (events.<n>)", _LAMBDA
)
VERDICT = _source(
    "get_network_state",
    r"https_egress_allowed|egress(\..+)?|security_groups(\..+)?|subnets(\..+)?|nat_gateways(\..+)?",
    "get_network_state verdicts and rules (https_egress_allowed, egress, security_groups, subnets, "
    "nat_gateways)",
)
NETWORK_CHANGE = _source(
    "get_recent_changes", _CHANGE, "an EC2 event in get_recent_changes (events.<n>)", _EC2
)
DURATIONS = _source(
    _METRICS,
    r"duration_to_timeout|max_duration_ms|minutes\.\d+\.duration_max_ms",
    "get_function_metrics durations (duration_to_timeout, max_duration_ms, minutes.<n>.duration_max_ms)",
)
MEMORY = _source(
    _METRICS,
    r"peak_memory_used_mb|memory_to_size",
    "get_function_metrics memory (peak_memory_used_mb, memory_to_size)",
)
SETTINGS = _source(
    "get_lambda_config",
    r"Handler|Runtime|EnvironmentVariableNames(\..+)?|State|StateReason|StateReasonCode|LastUpdateStatus"
    r"|Layers(\..+)?|Architectures(\..+)?|PackageType|KMSKeyArn|EphemeralStorageMb",
    "get_lambda_config settings (Handler, Runtime, EnvironmentVariableNames, State, Layers, ...)",
)
DEPLOYMENT = _source(
    "get_lambda_config",
    r"CodeSha256|Versions(\..+)?|Aliases(\..+)?|Version|LastModified",
    "get_lambda_config deployment (CodeSha256, Versions, Aliases)",
)

# Each fault type: groups that must all be met; a group is met by a verified pointer from any of its sources.
POLICY: Mapping[FaultType, tuple[tuple[Source, ...], ...]] = {
    "permission_loss": ((POLICIES, IAM_CHANGE),),
    "throttling": ((THROTTLES,), (LIMIT, CONCURRENCY, LAMBDA_CHANGE)),
    "network_block": ((VERDICT, NETWORK_CHANGE),),
    "timeout": ((DURATIONS,),),
    "out_of_memory": ((MEMORY,),),
    "code_error": ((ERRORS, DEPLOYMENT, LAMBDA_CHANGE),),
    "configuration_error": ((SETTINGS, LAMBDA_CHANGE),),
    "dependency_failure": ((ERRORS,),),
}


def log_problem(pointer: EvidencePointer, response: Any) -> str:
    """Why a log pointer cited for a fault does not count as a failure; empty when it does (or cites
    none). Only an event line is judged: the invocation summaries come from Lambda's REPORT lines."""
    if pointer.tool != LOG_TOOL or pointer.supports is None:
        return ""
    parts = pointer.field.split(".")
    if parts[0] != "events" or len(parts) < 2:
        return ""
    try:
        event = resolve(response, ".".join(parts[:2]))
    except LookupError:
        return ""
    kind = event.get("kind") if isinstance(event, dict) else None
    if kind not in TERMINAL_KINDS:
        return (
            f"events.{parts[1]} is a line the function's code printed (kind '{kind}'), not the terminal "
            "error of a failed invocation: log text is not evidence of a fault; cite it with supports=null"
        )
    request = event.get("request_id")
    outcomes = {i.get("request_id"): i.get("outcome") for i in response.get("invocations", [])}
    if outcomes.get(request) not in TERMINAL_KINDS:
        return (
            f"events.{parts[1]} is not the terminal error of an invocation that failed (request "
            f"{request}: its REPORT line shows {outcomes.get(request, 'no failure that was read')})"
        )
    return ""


def support(
    fault_types: Sequence[FaultType],
    evidence: Sequence[EvidencePointer],
    verified: Sequence[Sequence[Any]],
) -> list[FaultSupport]:
    """For each reported fault type (but 'unknown'), the verified pointers that back it under ``POLICY``.
    ``verified[i]`` holds the responses in which pointer ``i`` checked out (empty: not verified)."""
    result = []
    for fault in fault_types:
        if fault == "unknown":
            continue
        cited = [i for i, p in enumerate(evidence) if p.supports == fault and verified[i]]
        backing: list[int] = []
        missing = []
        for group in POLICY[fault]:
            found = [i for i in cited if any(s.backs(evidence[i], verified[i]) for s in group)]
            backing += [i for i in found if i not in backing]
            if not found:
                missing.append(" or ".join(source.what for source in group))
        detail = [i for i in cited if evidence[i].tool == LOG_TOOL]
        result.append(
            FaultSupport(
                fault_type=fault,
                supported_by=sorted(backing) if not missing else [],
                detail=detail,
                missing="; ".join(f"needs {need}" for need in missing),
            )
        )
    return result


def describe_policy() -> str:
    """The policy in words, for the system prompt: one line per fault type, its groups joined by AND, a
    group's sources by "or" (bracketed only where a group of several stands beside another group)."""
    lines = []
    for fault, groups in POLICY.items():
        alternatives = [" or ".join(source.what for source in group) for group in groups]
        if len(groups) > 1:
            alternatives = [
                f"[{text}]" if len(group) > 1 else text
                for text, group in zip(alternatives, groups, strict=True)
            ]
        lines.append(f"- {fault}: {' AND '.join(alternatives)}")
    return "\n".join(lines)
