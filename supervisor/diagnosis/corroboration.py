"""The corroboration policy: which sources can support each fault type, and what their values must say,
for every model (each fault class declares its own, in ``supervisor.faults``).

Log text is written by the function's code, and so by whoever controls its input. A fault type counts
as supported only when a verified pointer from a source the function's users cannot write backs it (IAM
policies, configuration, metrics, the network's verdict, the change history) and its value means the fault
(the source's predicate: errors above zero, a Deny that decides the denied call, ...). A pointer cited for a
fault from such a source whose value does not mean it is refused. Log pointers add detail and never
support alone, and a log line cited for a fault must be the terminal error of a failed invocation (the
runtime's error record, its init phase failing, a timeout, the runtime exiting), not any line the code
printed. A pointer into the function's history (``get_incident_history``) supports nothing: it is refused
whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from supervisor.diagnosis.paths import resolve
from supervisor.diagnosis.precedents import HISTORY_TOOL
from supervisor.faults.declaration import Corroboration, Source
from supervisor.faults.meanings import Reading
from supervisor.faults.registry import FAULT_CLASSES, UNKNOWN, FaultType
from supervisor.schemas import EvidencePointer, FaultSupport, RefusedSupport

LOG_TOOL = "get_recent_logs"
_LISTED = re.compile(r" \([^()]*\)$")  # a source's fields, listed in brackets at the end of its words
TERMINAL_KINDS = frozenset({"error_record", "init_error", "timeout", "runtime_exit"})
HISTORY_REFUSAL = (
    "a past incident cannot show what fails now: get_incident_history supports no fault type; cite it with "
    "supports=null"
)


# Each fault class: groups that must all be met; a group is met by a verified pointer from any of its sources.
POLICY: Mapping[str, Corroboration] = {name: fault.corroboration for name, fault in FAULT_CLASSES.items()}


def applies(source: Source, pointer: EvidencePointer, responses: Sequence[Any]) -> bool:
    """Whether ``pointer``, verified in ``responses``, cites a field ``source`` names."""
    if pointer.tool != source.tool or not source.fields.fullmatch(pointer.field):
        return False
    if not source.services:
        return True
    event = pointer.field.split(".")[:2]  # events.<n>
    return any(_service(response, event) in source.services for response in responses)


def meaning(
    source: Source, pointer: EvidencePointer, responses: Sequence[Any], run: Mapping[str, Sequence[Any]]
) -> str:
    """'' when the value ``pointer`` cites means what ``source`` asks in one of the ``responses`` it was
    verified in, else why not."""
    reasons = []
    for response in responses:
        reading = Reading(pointer.field, resolve(response, pointer.field), response, run)
        reason = source.means(reading)
        if not reason:
            return ""
        reasons.append(reason)
    return "; ".join(dict.fromkeys(reasons)) or "it was not verified"


def _service(response: Any, event: list[str]) -> str | None:
    try:
        return str(resolve(response, ".".join([*event, "service"])))
    except LookupError:
        return None


def reports_suppressed(config: Any) -> bool:
    """Whether a function's configuration (a get_lambda_config answer) keeps Lambda from writing its start
    and report records: a JSON log format with a SystemLogLevel above INFO. Then the runtime's terminal
    record of a request is the only sign of its failure."""
    logging = config.get("LoggingConfig") if isinstance(config, Mapping) else None
    if not isinstance(logging, Mapping):
        return False
    return logging.get("LogFormat") == "JSON" and logging.get("SystemLogLevel") in ("WARN", "ERROR", "FATAL")


def log_problem(pointer: EvidencePointer, response: Any, configs: Sequence[Any] = ()) -> str:
    """Why a log pointer cited for a fault does not count as a failure; empty when it does (or cites
    none). Only an event line is judged: the invocation summaries come from Lambda's REPORT lines, or, when
    one of ``configs`` keeps the reports from being written, a terminal record of a request none reports."""
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
    unreported = request and request not in outcomes and any(reports_suppressed(c) for c in configs)
    if outcomes.get(request) not in TERMINAL_KINDS and not unreported:
        return (
            f"events.{parts[1]} is not the terminal error of an invocation that failed (request "
            f"{request}: its REPORT line shows {outcomes.get(request, 'no failure that was read')})"
        )
    return ""


def support(
    fault_types: Sequence[FaultType],
    evidence: Sequence[EvidencePointer],
    verified: Sequence[Sequence[Any]],
    run: Mapping[str, Sequence[Any]],
) -> list[FaultSupport]:
    """For each reported fault type (but 'unknown'), the verified pointers that back it under ``POLICY``,
    and those cited for it from one of its sources whose value does not mean it. ``verified[i]`` holds the
    responses in which pointer ``i`` checked out (empty: not verified); ``run`` every valid answer."""
    result = []
    for fault in fault_types:
        if fault == UNKNOWN:
            continue
        cited = [i for i, p in enumerate(evidence) if p.supports == fault and verified[i]]
        backing: list[int] = []
        refused = {i: HISTORY_REFUSAL for i in cited if evidence[i].tool == HISTORY_TOOL}
        missing = []
        for group in POLICY[fault]:
            found = []
            for i in cited:
                sources = [s for s in group if applies(s, evidence[i], verified[i])]
                reasons = [meaning(s, evidence[i], verified[i], run) for s in sources]
                if sources and not all(reasons):
                    found.append(i)
                elif sources:
                    refused.setdefault(i, "; ".join(reasons))
            backing += [i for i in found if i not in backing]
            if not found:
                missing.append(" or ".join(source.what for source in group))
        detail = [i for i in cited if i not in backing and i not in refused]
        result.append(
            FaultSupport(
                fault_type=fault,
                supported_by=sorted(backing) if not missing else [],
                detail=detail,
                missing="; ".join(f"needs {need}" for need in missing),
                refused=[
                    RefusedSupport(index=i, reason=reason)
                    for i, reason in sorted(refused.items())
                    if i not in backing
                ],
            )
        )
    return result


def describe_policy() -> str:
    """The policy in words, for the system prompt: one line per fault type, its groups joined by AND, a
    group's sources by "or" (bracketed only where a group of several stands beside another group). A source
    named again is named without the fields it lists in brackets, given at its first mention."""
    lines, named = [], set()

    def said(source: Source) -> str:
        again = source in named
        named.add(source)
        return _LISTED.sub("", source.what) if again else source.what

    for fault, groups in POLICY.items():
        alternatives = [" or ".join(said(source) for source in group) for group in groups]
        if len(groups) > 1:
            alternatives = [
                f"[{text}]" if len(group) > 1 else text
                for text, group in zip(alternatives, groups, strict=True)
            ]
        lines.append(f"- {fault}: {' AND '.join(alternatives)}")
    return "\n".join(lines)
