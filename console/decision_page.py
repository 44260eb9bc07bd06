"""POST /incidents/{id}: a person's decision on the plan awaiting approval, the console's one write.

A decision counts only from a person signed in through the identity provider (a key session names no
one), named ``console:<subject>`` in REMEDIATION_APPROVERS, whose sign-in is at most
CONSOLE_DECISION_SIGN_IN_MINUTES old; the session is read again from its cookie on this request, as on
every one. The form must come from this console (Sec-Fetch-Site, Origin) and carry the token made for that
session, that incident and that plan's digest. The decision goes to incident-approvals through the same
gate as ``incident-remediate`` (``executor.approvals``: one decision per digest, refused once the plan
changed or lapsed), as ``console:<subject>``, and the executor's queue is asked to look."""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.auth_routes import same_origin
from console.data import IncidentReader
from console.sessions import Cookies, Identity
from console.templating import Render
from executor.approvals import CONSOLE, ApprovalRefused, Approvals
from supervisor.incident.stage import sqs_client
from supervisor.remediation.queue import send_request

logger = logging.getLogger(__name__)

DECISIONS: Final = ("APPROVED", "REJECTED")


@dataclass(frozen=True)
class DecisionGate:
    """Who may decide here: ``approvers`` (``console:<subject>``), signed in at most ``sign_in_seconds``
    ago; ``cookies`` is None on loopback, where nobody signs in and so nobody decides."""

    approvers: frozenset[str]
    sign_in_seconds: int
    cookies: Cookies | None
    clock: Callable[[], float] = time.time

    def refusal(self, identity: Identity | None) -> str | None:
        """Why ``identity`` may not decide on a plan here now; None when it may."""
        if not self.approvers:
            return "No one approves from this console (REMEDIATION_APPROVERS names no console:<subject>)."
        if self.cookies is None or identity is None:
            return "Sign in through the identity provider to approve or reject here."
        if identity.via != "oauth":
            return "A key session names no person: sign in through the identity provider to decide."
        if CONSOLE + identity.subject not in self.approvers:
            return f"{CONSOLE}{identity.subject} is not an approver (REMEDIATION_APPROVERS)."
        age = int(self.clock()) - identity.signed_in_at
        if age > self.sign_in_seconds:
            return (
                f"Your sign-in is {age // 60} min old; a decision needs one at most "
                f"{self.sign_in_seconds // 60} min old: sign out and in again."
            )
        return None

    def token(self, identity: Identity, incident_id: str, digest: str) -> str:
        assert self.cookies is not None  # refusal() is None only with cookies
        return self.cookies.form_token(identity, "decide", incident_id, digest)

    def form(self, request: Request, state: dict[str, Any]) -> dict[str, str] | None:
        """What the incident page offers for a plan awaiting approval: a form token, or why not."""
        if state.get("status") != "AWAITING_APPROVAL" or not state.get("plan_digest"):
            return None
        identity = request.scope.get("state", {}).get("identity")
        refusal = self.refusal(identity)
        if refusal is not None:
            return {"refusal": refusal}
        return {"token": self.token(identity, str(state["incident_id"]), str(state["plan_digest"]))}


def decision_route(
    gate: DecisionGate,
    reader: IncidentReader,
    approvals: Approvals,
    ask_executor: Callable[[str], str] | None,
    page: Render,
    public_url: str | None,
) -> Route:
    """``ask_executor(incident_id)`` sends the executor a request (None: no queue configured)."""

    async def decide(request: Request) -> Response:
        incident_id = request.path_params["incident_id"]
        identity = request.scope.get("state", {}).get("identity")

        def refused(status: int, problem: str) -> Response:
            logger.warning("decision refused on %s: %s", incident_id, problem, extra={"status": status})
            return page(request, "decision.html", status=status, incident_id=incident_id, problem=problem)

        if not same_origin(request, public_url):
            return refused(403, "The form was sent from another site: nothing decided.")
        if (problem := gate.refusal(identity)) is not None:
            return refused(403, problem)
        async with request.form() as form:
            digest, decision = str(form.get("digest", "")), str(form.get("decision", ""))
            token = str(form.get("form_token", ""))
        if decision not in DECISIONS:
            return refused(400, f"The decision must be one of {', '.join(DECISIONS)}: nothing decided.")
        if not hmac.compare_digest(token.encode(), gate.token(identity, incident_id, digest).encode()):
            return refused(403, "The form was made for another session or plan: open the incident again.")
        found = reader.incident(incident_id, consistent=True)
        if found is None:
            return refused(404, f"There is no incident {incident_id}.")
        approver = CONSOLE + identity.subject
        try:
            approvals.decide(found[0], digest, approver, "APPROVED" if decision == "APPROVED" else "REJECTED")
        except ApprovalRefused as error:
            return refused(409, f"{error}.")
        except (ClientError, BotoCoreError) as error:
            return refused(502, f"AWS refused or failed, nothing decided: {error}")
        logger.info("%s %s plan %s", approver, decision.lower(), digest, extra={"incident_id": incident_id})
        asked = _ask(ask_executor, incident_id)
        shown = {"incident_id": incident_id, "decision": decision, "approver": approver, "asked": asked}
        return page(request, "decision.html", **shown)

    return Route("/incidents/{incident_id:path}", decide, methods=["POST"])


def _ask(ask_executor: Callable[[str], str] | None, incident_id: str) -> str:
    later = "it takes the plan on when next asked; a plan nobody takes on before its deadline ends EXPIRED"
    if ask_executor is None:
        return f"The executor was not asked (REMEDIATION_QUEUE_URL is not set here): {later}."
    try:
        ask_executor(incident_id)
    except (ClientError, BotoCoreError) as error:
        return f"The executor could not be asked ({error}): {later}."
    return "The executor was asked to take it on."


def queue_sender(session: Any, queue_url: str | None) -> Callable[[str], str] | None:
    """What asks the executor to look, through ``session`` (a boto3 Session); None without a queue."""
    if queue_url is None:
        return None
    sqs = sqs_client(session)
    return lambda incident_id: send_request(sqs, queue_url, incident_id)
