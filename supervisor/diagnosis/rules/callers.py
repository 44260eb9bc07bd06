"""Invocation contract: the function answers, and the API in front of it cannot use the answer.

Read from the event-sources tool's ``apis``: a REST API's execution log, which the function's users cannot
write, says a request failed on the function's answer ("Malformed Lambda proxy response": a result that is
not ``{statusCode, headers, body}`` with a string body) or on the integration's timeout; an HTTP API, which
writes no execution log, shows a timeout only as its access line's status (503 or 504), which means one
only beside a route whose integration waits less than the function's longest run
(``supervisor.faults.meanings.stopped_waiting``). The stage counts the 5XX answers. The function's own
metrics show no error, so no other check sees it. The trigger is the deployment that changed what the
function answers (or how long it works), or the change to the API's integration (``PutIntegration``,
``UpdateIntegration``) that made it wait less: then the fix puts back the timeout the history shows the
integration had before.

The integration is read from the change's request as the sandbox records it: a REST API's ``restApiId``,
``resourceId``, ``httpMethod`` and ``timeoutInMillis`` or a ``replace`` of ``/timeoutInMillis`` in
``patchOperations``; an HTTP API's ``apiId``, ``integrationId`` and ``timeoutInMillis``. AWS does not
document the shape of API Gateway's CloudTrail requests, so a record shaped otherwise is no timeout change
and the gap stays.
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
from supervisor.faults.meanings import INTEGRATION_TIMEOUT, MALFORMED_PROXY_RESPONSE, STOPPED_WAITING

_FAULT = "invocation_contract"
_SOURCES = "get_event_sources"
_INTEGRATION_CALLS = frozenset({"PutIntegration", "UpdateIntegration"})
_TIMEOUT_PATH = "/timeoutInMillis"
_HTTP = "HTTP"
_LONGEST = "max_duration_ms"


def _relevant(event: ChangeEvent) -> bool:
    return event.operation in DEPLOY_OPERATIONS or event.operation in _INTEGRATION_CALLS


@dataclass(frozen=True)
class _TimeoutSet:
    """A change that set an integration's timeout: the integration (a REST API's API, resource and method,
    or an HTTP API's API and integration id), the milliseconds, and where the answer shows them."""

    event: ChangeEvent
    integration: tuple[str, ...]
    ms: int
    path: str
    shown: Any

    def pointer(self, text: str) -> Pointer:
        return Pointer("get_recent_changes", self.path, self.shown, text, None)


def _timeout_set(event: ChangeEvent) -> _TimeoutSet | None:
    summary = event.event.get("summary") or {}
    if event.operation not in _INTEGRATION_CALLS:
        return None
    where = f"events.{event.index}.summary"
    http = tuple(str(summary.get(k) or "") for k in ("apiId", "integrationId"))
    if all(http):
        value = summary.get("timeoutInMillis")
        return (
            _TimeoutSet(event, http, value, f"{where}.timeoutInMillis", value) if type(value) is int else None
        )
    key = tuple(str(summary.get(k) or "") for k in ("restApiId", "resourceId", "httpMethod"))
    if not all(key):
        return None
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


def _put_back_command(c: Conversation, lowered: _TimeoutSet, ms: int) -> tuple[str, str]:
    """What the integration is, and the command that sets its timeout to ``ms``."""
    if len(lowered.integration) == 2:
        api, integration = lowered.integration
        params: dict[str, Any] = {"ApiId": api, "IntegrationId": integration, "TimeoutInMillis": ms}
        return f"integration {integration} of HTTP API {api}", command(
            c, "apigatewayv2", "UpdateIntegration", params
        )
    api, resource, method = lowered.integration
    params = {
        "restApiId": api,
        "resourceId": resource,
        "httpMethod": method,
        "patchOperations": [{"op": "replace", "path": _TIMEOUT_PATH, "value": str(ms)}],
    }
    return f"{method} on REST API {api}", command(c, "apigateway", "UpdateIntegration", params)


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
    what, fix = _put_back_command(c, lowered, before.ms)
    remedy = Remedy(
        f"Put back the {before.ms:,} ms integration timeout of {what}",
        f"Set the integration's timeout back from {lowered.ms:,} to {before.ms:,} ms, what it was before "
        f"{lowered.event.operation}; then the API waits for {c.name} as it did.",
        fix,
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
    """A line saying API Gateway could not use an answer, and where it is in the answer: its ``message``
    (a REST API's execution log) or its ``status`` (an HTTP API's access log)."""

    at: datetime
    stage: int
    line: int
    field: str
    value: Any

    def pointer(self, shown: str, supports: str | None) -> Pointer:
        path = f"apis.{self.stage}.execution_errors.{self.line}.{self.field}"
        return Pointer(_SOURCES, path, self.value, shown, supports)

    @property
    def malformed(self) -> bool:
        return self.field == "message" and MALFORMED_PROXY_RESPONSE in str(self.value)


def _short_route(c: Conversation, stage: Any) -> tuple[int, int] | None:
    """An HTTP stage's route whose integration waits less than the function's longest run: (its index, its
    timeout); None for a REST stage, or when no route does."""
    longest = c.metrics.get(_LONGEST)
    if not isinstance(stage, dict) or stage.get("protocol") != _HTTP or not isinstance(longest, (int, float)):
        return None
    waits = [
        (n, r["timeout_ms"])
        for n, r in enumerate(stage.get("routes") or [])
        if isinstance(r, dict) and isinstance(r.get("timeout_ms"), int) and r["timeout_ms"] < longest
    ]
    return min(waits, key=lambda w: w[1], default=None)


def _stage_refusals(c: Conversation, n: int, stage: Any) -> list[_Refusal]:
    lines = (stage.get("execution_errors") or []) if isinstance(stage, dict) else []
    short = _short_route(c, stage)
    found = []
    for m, line in enumerate(lines):
        at = instant(line.get("at"))
        message, status = str(line.get("message", "")), line.get("status")
        if at is None:
            continue
        if MALFORMED_PROXY_RESPONSE in message or INTEGRATION_TIMEOUT in message:
            found.append(_Refusal(at, n, m, "message", message))
        elif short is not None and isinstance(status, int) and status in STOPPED_WAITING:
            found.append(_Refusal(at, n, m, "status", status))
    return found


def _refusals(c: Conversation, apis: list[Any]) -> list[_Refusal]:
    """The lines saying API Gateway could not use an answer, oldest first; none when a deployment came
    after the newest of them (it may have fixed the answer: those lines are its past)."""
    deployed = max((e.time for e in change_events(c) if _relevant(e)), default=None)
    found = sorted(
        (r for n, stage in enumerate(apis) for r in _stage_refusals(c, n, stage)), key=lambda r: r.at
    )
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
        limit = "30,000 ms" if "HTTP API" in where else "29,000 ms unless AWS raised the quota"
        gap = Gap(
            "remediation",
            f"Raise the integration timeout of {where} (up to {limit}) or shorten the function's work: the "
            "change history shows no earlier timeout or build to put back.",
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
    http = stage.get("protocol") == _HTTP
    where = f"stage {stage.get('stage')} of {'HTTP' if http else 'REST'} API {stage.get('api_name')}"
    what = (
        "a malformed Lambda proxy response"
        if newest.malformed
        else "an answer after the integration timed out"
    )
    pointers = [newest.pointer(f"API Gateway could not use {what}", _FAULT)]
    short = _short_route(c, stage) if newest.field == "status" else None
    if short is not None:
        n, ms = short
        pointers += [
            Pointer(
                _SOURCES, f"apis.{newest.stage}.routes.{n}.timeout_ms", ms, f"The route waits {ms:,} ms", None
            ),
            Pointer(
                "get_function_metrics",
                _LONGEST,
                c.metrics[_LONGEST],
                f"{c.name} ran for up to {c.metrics[_LONGEST]:,g} ms",
                None,
            ),
        ]
    if stage.get("server_errors"):
        shown = f"{where} answered {stage['server_errors']:g} requests 5XX"
        pointers.append(
            Pointer(_SOURCES, f"apis.{newest.stage}.server_errors", stage["server_errors"], shown, None)
        )
    remedy, gaps, cited = _remedy(c, newest.malformed, where, first.at)
    region = str(c.event_sources.get("function_arn", "")).split(":")[3:4] or [""]
    resource = f"/apis/{stage.get('api_id')}" if http else f"/restapis/{stage.get('api_id')}"
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
        resources=(f"arn:aws:apigateway:{region[0]}::{resource}",),
        gaps=gaps,
    )
