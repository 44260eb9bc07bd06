"""Invocation contract: the function answers, and the REST API in front of it cannot use the answer.

Read from the event-sources tool's ``apis``: API Gateway's own execution log, which the function's users
cannot write, says a request failed on the function's answer ("Malformed Lambda proxy response": a result
that is not ``{statusCode, headers, body}`` with a string body) or on the integration's timeout, and the
stage counts the 5XX answers. The function's own metrics show no error, so no other check sees it. The
trigger is the deployment that changed what the function answers (or how long it works), or the change to
the API's integration (``PutIntegration``, ``UpdateIntegration``) that made it wait less: then the fix puts
back the timeout the history shows the integration had before.

The integration is read from the change's request as the sandbox records it (``restApiId``, ``resourceId``,
``httpMethod`` and ``timeoutInMillis`` or a ``replace`` of ``/timeoutInMillis`` in ``patchOperations``);
AWS does not document the shape of API Gateway's CloudTrail requests, so a record shaped otherwise is no
timeout change and the gap stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from supervisor.diagnosis.rules.code import alias_rollback_remedy
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS, alias_rollback
from supervisor.diagnosis.rules.triggers import change_events, change_pointers
from supervisor.faults.meanings import INTEGRATION_TIMEOUT, MALFORMED_PROXY_RESPONSE

_FAULT = "invocation_contract"
_SOURCES = "get_event_sources"
_INTEGRATION_CALLS = frozenset({"PutIntegration", "UpdateIntegration"})
_TIMEOUT_PATH = "/timeoutInMillis"


def _relevant(event: ChangeEvent) -> bool:
    return event.operation in DEPLOY_OPERATIONS or event.operation in _INTEGRATION_CALLS


@dataclass(frozen=True)
class _TimeoutSet:
    """A change that set an integration's timeout: the integration (API, resource, method), the
    milliseconds, and where the answer shows them."""

    event: ChangeEvent
    integration: tuple[str, str, str]
    ms: int
    path: str
    shown: Any

    def pointer(self, text: str) -> Pointer:
        return Pointer("get_recent_changes", self.path, self.shown, text, None)


def _timeout_set(event: ChangeEvent) -> _TimeoutSet | None:
    summary = event.event.get("summary") or {}
    api, resource, method = (str(summary.get(k) or "") for k in ("restApiId", "resourceId", "httpMethod"))
    if event.operation not in _INTEGRATION_CALLS or not (api and resource and method):
        return None
    where, key = f"events.{event.index}.summary", (api, resource, method)
    if event.operation == "PutIntegration":
        value = summary.get("timeoutInMillis")
        return (
            _TimeoutSet(event, key, value, f"{where}.timeoutInMillis", value) if type(value) is int else None
        )
    found = None
    for n, patch in enumerate(summary.get("patchOperations") or []):
        if not isinstance(patch, dict):
            continue
        value = str(patch.get("value"))
        if patch.get("op") == "replace" and patch.get("path") == _TIMEOUT_PATH and value.isdigit():
            found = _TimeoutSet(event, key, int(value), f"{where}.patchOperations.{n}.value", value)
    return found


def _timeout_put_back(c: Conversation, first: datetime) -> tuple[Remedy, list[Pointer]] | None:
    """When the newest change before the first refusal set an integration's timeout: the timeout the
    history shows that integration had before, put back."""
    causes = [e for e in change_events(c) if _relevant(e) and e.time <= first]
    lowered = _timeout_set(causes[0]) if causes else None
    if lowered is None:
        return None
    earlier = (
        found
        for e in change_events(c)
        if e.time < lowered.event.time
        and (found := _timeout_set(e))
        and found.integration == lowered.integration
    )
    before = next(earlier, None)
    if before is None or before.ms <= lowered.ms:
        return None
    api, resource, method = lowered.integration
    remedy = Remedy(
        f"Put back the {before.ms:,} ms integration timeout of {method} on REST API {api}",
        f"Set the integration's timeoutInMillis back from {lowered.ms:,} to {before.ms:,} ms, what it was "
        f"before {lowered.event.operation}; then the API waits for {c.name} as it did.",
        command(
            c,
            "apigateway",
            "UpdateIntegration",
            {
                "restApiId": api,
                "resourceId": resource,
                "httpMethod": method,
                "patchOperations": [{"op": "replace", "path": _TIMEOUT_PATH, "value": str(before.ms)}],
            },
        ),
        "low",
    )
    pointers = [
        *change_pointers(lowered.event, None),
        lowered.pointer(f"{lowered.event.operation} set the integration's timeout to {lowered.ms:,} ms"),
        before.pointer(f"The integration waited {before.ms:,} ms before"),
    ]
    return remedy, pointers


@dataclass(frozen=True)
class _Refusal:
    """A line saying API Gateway could not use an answer, and where it is in the answer."""

    at: datetime
    stage: int
    line: int
    message: str

    def pointer(self, shown: str, supports: str | None) -> Pointer:
        path = f"apis.{self.stage}.execution_errors.{self.line}.message"
        return Pointer(_SOURCES, path, self.message, shown, supports)


def _refusals(c: Conversation, apis: list[Any]) -> list[_Refusal]:
    """The lines saying API Gateway could not use an answer, oldest first; none when a deployment came
    after the newest of them (it may have fixed the answer: those lines are its past)."""
    deployed = max((e.time for e in change_events(c) if _relevant(e)), default=None)
    found = []
    for n, stage in enumerate(apis):
        lines = (stage.get("execution_errors") or []) if isinstance(stage, dict) else []
        for m, line in enumerate(lines):
            message, at = str(line.get("message", "")), instant(line.get("at"))
            if at is not None and (MALFORMED_PROXY_RESPONSE in message or INTEGRATION_TIMEOUT in message):
                found.append(_Refusal(at, n, m, message))
    found.sort(key=lambda r: r.at)
    if not found or (deployed is not None and found[-1].at < deployed):
        return []
    return [r for r in found if deployed is None or r.at >= deployed]


def _remedy(
    c: Conversation, malformed: bool, where: str, first: datetime
) -> tuple[Remedy, tuple[Gap, ...], list[Pointer]]:
    """The integration's timeout put back, or the deployment that changed the answer rolled back; else a
    named gap."""
    put_back = None if malformed else _timeout_put_back(c, first)
    if put_back is not None:
        return put_back[0], (), put_back[1]
    move = alias_rollback(c)
    if move is not None:
        then = "then answer in the proxy shape" if malformed else f"then answer before {where} stops waiting"
        remedy, pointers = alias_rollback_remedy(c, move, _FAULT, then)
        return remedy, (), pointers
    if not malformed:
        gap = Gap(
            "remediation",
            f"Raise the integration timeout of {where} (timeoutInMillis, up to 29,000 ms unless AWS raised "
            "the quota) or shorten the function's work: the time the function needs is not recorded.",
        )
        return Remedy(f"Let {where} wait for {c.name}, or make it faster", gap.reason), (gap,), []
    gap = Gap(
        "remediation",
        f"No command restores a build of {c.name} that answered in the proxy shape: redeploy the last one "
        "that worked, or return {statusCode, headers, body} with the body as a string.",
    )
    return Remedy(f"Make {c.name} answer in the Lambda proxy shape", gap.reason), (gap,), []


def check(c: Conversation) -> Verdict:
    apis = c.event_sources.get("apis")
    if not isinstance(apis, list):
        return None
    refusals = _refusals(c, apis)
    if not refusals:
        return None
    first, newest = refusals[0], refusals[-1]
    stage = apis[newest.stage]
    malformed = MALFORMED_PROXY_RESPONSE in newest.message
    where = f"stage {stage.get('stage')} of REST API {stage.get('api_name')}"
    what = "a malformed Lambda proxy response" if malformed else "an answer after the integration timed out"
    pointers = [newest.pointer(f"API Gateway could not use {what}", _FAULT)]
    if stage.get("server_errors"):
        shown = f"{where} answered {stage['server_errors']:g} requests 5XX"
        pointers.append(
            Pointer(_SOURCES, f"apis.{newest.stage}.server_errors", stage["server_errors"], shown, None)
        )
    remedy, gaps, cited = _remedy(c, malformed, where, first.at)
    region = str(c.event_sources.get("function_arn", "")).split(":")[3:4] or [""]
    return Finding(
        _FAULT,
        f"{c.name} answers, but {where} cannot use the answer ({what}): its callers get 5XX errors while "
        "the function's own metrics show none.",
        "high",
        [*pointers, *cited],
        remedy,
        relevant_change=_relevant,
        first_failure=(first.at, first.pointer("The first answer API Gateway could not use", None)),
        last_failure=(newest.at, pointers[0]),
        resources=(f"arn:aws:apigateway:{region[0]}::/restapis/{stage.get('api_id')}",),
        gaps=gaps,
    )
