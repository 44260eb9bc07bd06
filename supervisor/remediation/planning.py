"""From a final diagnosis to a plan awaiting a person's approval, or to NO_PLAN with why: the supervisor
mediates between the Resolver (which drafts) and the Critic (which reviews), and records the outcome.

    DIAGNOSED (final) -> PLANNING -> AWAITING_APPROVAL   the plan, its digest and its approval deadline
                                  -> NO_PLAN             what the Resolver left out, what the Critic refused

What the Critic refuses goes back to the Resolver once: it drafts the other steps again, and a plan of those
that all pass goes to a person with the refusals beside it; a refusal in that second round ends NO_PLAN.

The plan and its review are kept in incident-context (``plan``, ``plan_review``); the incident-state item
carries the digest and the deadline the approval gate checks (``executor.approvals``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.incident.lifecycle import APPROVAL_DEADLINE, PLAN, PLAN_DIGEST, PLAN_REVIEW
from supervisor.incident.notify import Notifier, notify_now
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStateError, IncidentStore, Item, TransitionConflict
from supervisor.remediation.change_history import decode_tool_results, read_history
from supervisor.remediation.critic import Refusal, review
from supervisor.remediation.operation import Reader
from supervisor.remediation.plan import Plan, plan_digest
from supervisor.remediation.precedent import with_precedents
from supervisor.remediation.queue import send_request
from supervisor.remediation.resolver import Draft, resolve
from supervisor.schemas import Diagnosis, ToolResult

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from supervisor.remediation.model_critic import SecondOpinion
    from supervisor.settings import SupervisorSettings

Opinion = Callable[[Plan, Diagnosis], "SecondOpinion"]  # a model's objections to a plan the code passed


@dataclass(frozen=True)
class PlanningLimits:
    recovery_seconds: int  # how long the fix is given to show recovery
    approval_seconds: int  # how long a person has to approve the plan


def plan_incident(
    store: IncidentStore,
    incident: Item,
    diagnosis: Diagnosis,
    *,
    read: Reader,
    limits: PlanningLimits,
    results: Sequence[ToolResult] = (),
    opinion: Opinion | None = None,
) -> Item:
    """Plan the fix of the final DIAGNOSED ``incident``; its item after the plan (AWAITING_APPROVAL or
    NO_PLAN). ``opinion``: a model's second opinion on what the code passed (``model_critic``). Raises
    TransitionConflict when another writer moved it first, and IncidentStateError when the diagnosis is
    provisional."""
    incident_id, function = str(incident["incident_id"]), str(incident["function_name"])
    if incident.get("final") is False:
        raise IncidentStateError(f"incident {incident_id}: a provisional diagnosis is never planned")
    planning = store.transition(
        incident_id, "DIAGNOSED", "PLANNING", expected_updated_at=str(incident["updated_at"])
    )
    try:
        draft, plan, refused, opinions = _mediate(
            diagnosis, read, results, incident_id, function, limits, opinion
        )
        findings: dict[str, Any] = {"unplanned": draft.unplanned, "refused": refused}
        unread = [o.unread for o in opinions if o.unread]
        findings |= {"model_critic_unread": unread} if unread else {}
        findings |= {"model_critic_tokens": sum(o.tokens for o in opinions)} if opinions else {}
        if plan is not None:
            plan, findings["history"] = _cited(store, plan, diagnosis)
        stored = {PLAN_REVIEW: json.dumps(findings)}
        stored |= {PLAN: json.dumps(plan.model_dump(mode="json"))} if plan is not None else {}
        store.update_context(incident_id, stored)
    except Exception as error:  # nothing is planned: the incident ends NO_PLAN with why, then it is raised
        why = f"planning failed: {type(error).__name__}: {error}"
        with suppress(ClientError, BotoCoreError, TransitionConflict):  # else the watchdog ends it
            store.transition(
                incident_id,
                "PLANNING",
                "NO_PLAN",
                expected_updated_at=str(planning["updated_at"]),
                reason=why,
            )
        raise
    seen = str(planning["updated_at"])
    if plan is None:
        reasons = draft.unplanned + [f"step {r['step']} refused: {r['reason']}" for r in refused]
        why = "no safe plan: " + ("; ".join(reasons) if reasons else "the diagnosis names no fix")
        return store.transition(incident_id, "PLANNING", "NO_PLAN", expected_updated_at=seen, reason=why)
    deadline = stamp(store.clock() + timedelta(seconds=limits.approval_seconds))
    return store.transition(
        incident_id,
        "PLANNING",
        "AWAITING_APPROVAL",
        expected_updated_at=seen,
        headline={PLAN_DIGEST: plan.digest, APPROVAL_DEADLINE: deadline, "plan_steps": len(plan.steps)},
    )


def _mediate(
    diagnosis: Diagnosis,
    read: Reader,
    results: Sequence[ToolResult],
    incident_id: str,
    function: str,
    limits: PlanningLimits,
    opinion: Opinion | None,
) -> tuple[Draft, Plan | None, list[dict[str, Any]], list[SecondOpinion]]:
    """The Resolver drafts, the Critic reviews (and, with ``opinion``, a model objects to what it passed);
    what they refused goes back to the Resolver, which gives back the rest, and that is reviewed again (two
    rounds at most). The last draft, the plan (None: a step of the last round was refused, or none is
    left), every refusal, numbered as the diagnosis's steps, and the model's opinions."""
    history = read_history(diagnosis, results, function)
    refused: list[dict[str, Any]] = []
    opinions: list[SecondOpinion] = []
    draft = resolve(diagnosis, final=True, read=read)
    for _round in range(2):
        verdict = review(
            draft.steps,
            diagnosis,
            incident_id=incident_id,
            function=function,
            recovery_seconds=limits.recovery_seconds,
            history=history,
        )
        refusals: list[Refusal] = verdict.refusals
        if verdict.plan is not None and opinion is not None:  # the plan's steps are the draft's, in order
            opinions.append(opinion(verdict.plan, diagnosis))
            refusals = opinions[-1].refusals
        numbered = [(draft.numbers[r.step - 1], r.reason) for r in refusals]
        refused += [{"step": number, "reason": reason} for number, reason in numbered]
        if not numbered:
            break
        draft = draft.without({number for number, _ in numbered})
    return draft, verdict.plan if not numbered else None, refused, opinions


def _cited(store: IncidentStore, plan: Plan, diagnosis: Diagnosis) -> tuple[Plan, str]:
    """``plan`` with what the function's history says of it, and what the review keeps of that; a history
    that cannot be read leaves the plan as the code made it, and says so."""
    try:
        cited = with_precedents(store, plan, diagnosis)
    except (ClientError, BotoCoreError) as error:
        return plan, f"not read ({type(error).__name__}): no precedent cited, no earlier failure flagged"
    return cited, f"{len(cited.precedents)} precedent(s) held, {len(cited.failed_before)} failed before"


def stored_plan(store: IncidentStore, incident_id: str) -> tuple[Plan, str] | None:
    """The plan kept for ``incident_id`` and the digest of its stored JSON (computed from the text as
    stored, so a plan changed after its approval no longer matches it); None when none was made."""
    context = store.get_context(incident_id) or {}
    text = context.get(PLAN, {}).get("S")
    if not text:
        return None
    document = json.loads(text)
    return Plan.model_validate(document), plan_digest(document)


@dataclass
class Remediation:
    """The supervisor's part of a remediation: plan a final diagnosis, then ask the executor to take it
    (it applies the plan once a person approves, or at once when its risk may apply without one)."""

    store: IncidentStore
    read: Reader
    limits: PlanningLimits
    logger: Logger
    sqs: Any = None  # the executor queue's client; None: no request is sent
    queue_url: str | None = None
    notifier: Notifier | None = None  # None: no notice of the plan is published
    opinion: Opinion | None = None  # a model's second opinion; None: the Critic in code alone

    @classmethod
    def configured(
        cls,
        store: IncidentStore,
        session: Any,
        settings: SupervisorSettings,
        logger: Logger,
        model: BaseChatModel | None = None,
    ) -> Remediation:
        """As the supervisor's settings say: its limits, the executor's queue when one is set, and the
        supervisor's model (``model``, else ``SUPERVISOR_MODEL``) as a second critic unless
        ``SUPERVISOR_MODEL_CRITIC`` is off or the model is the offline rules model."""
        from supervisor.incident.stage import sqs_client

        limits = PlanningLimits(settings.recovery_seconds, settings.approval_seconds)
        queue = settings.remediation_queue_url
        remediation = cls(
            store, session.client, limits, logger, sqs_client(session) if queue else None, queue
        )
        if settings.model_critic:
            remediation.opinion = _model_critic(model, settings)
        return remediation

    def begin(self, incident_id: str) -> str:
        """Plan ``incident_id`` if it is a final DIAGNOSED incident; what happened. Never raises: the
        diagnosis stands whatever planning meets, and the watchdog ends a plan that never finished."""
        log = {"incident_id": incident_id}
        try:
            item = self.store.get(incident_id)
            if item is None or item.get("status") != "DIAGNOSED" or item.get("final") is False:
                return f"not planned: {'not found' if item is None else 'not a final diagnosis'}"
            context = self.store.get_context(incident_id) or {}
            diagnosis = Diagnosis.model_validate_json(context["diagnosis"]["S"])
            results = decode_tool_results(context.get("tool_results", {}).get("B"))  # what the trigger set
            planned = plan_incident(
                self.store,
                item,
                diagnosis,
                read=self.read,
                limits=self.limits,
                results=results,
                opinion=self.opinion,
            )
        except TransitionConflict as conflict:
            return f"not planned: {conflict}"
        except Exception as error:  # a read refused, a diagnosis unreadable: the diagnosis stands
            self.logger.exception("remediation_not_planned", extra=log)
            notify_now(self.store, self.notifier, incident_id, "supervisor")  # a NO_PLAN it ended in
            return f"not planned: {type(error).__name__}: {error}"
        status = str(planned["status"])
        notice = notify_now(self.store, self.notifier, incident_id, "supervisor")
        why = {} if status == "AWAITING_APPROVAL" else {"reason": planned.get("error_reason")}
        self.logger.info("remediation_planned", extra=log | {"status": status, "notice": notice} | why)
        if status != "AWAITING_APPROVAL" or not self.queue_url:
            return status
        try:
            message_id = send_request(self.sqs, self.queue_url, incident_id)
        except (ClientError, BotoCoreError) as error:
            self.logger.exception("remediation_request_not_sent", extra=log)
            return f"{status}; the executor was not asked ({type(error).__name__}): an approval asks it again"
        self.logger.info("remediation_requested", extra=log | {"sqs_message_id": message_id})
        return status


def _model_critic(model: BaseChatModel | None, settings: SupervisorSettings) -> Opinion | None:
    """The supervisor's model as a second critic; None for the offline rules model, which has no opinion."""
    from supervisor.diagnosis.rules.model import RulesChatModel

    if model is None and settings.supervisor_model == "rules":
        return None
    from supervisor.agent.models import build_model
    from supervisor.remediation.model_critic import second_opinion

    chosen = model if model is not None else build_model(settings.supervisor_model, settings)
    if isinstance(chosen, RulesChatModel):
        return None
    return functools.partial(second_opinion, chosen)
