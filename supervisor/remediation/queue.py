"""The executor's queue (incident-remediations): one message per request to take an incident as far as it
may (a plan awaiting approval, a decision just made, a run that died). Whoever sends it (the supervisor
after a plan, a person's approval, the watchdog) moves nothing: the executor reads the incident and its
approval itself, so a message is only ever a nudge, never an authorization.

``REMEDIATION_QUEUE_URL`` (no prefix: the deploy template sets it once for every sender)."""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import AliasChoices, BaseModel, Field, field_validator

from supervisor.incident.recheck_settings import queue_url
from supervisor.incident.store import is_incident_id

REMEDIATION_KIND: Final[str] = "remediation"


class MalformedRequest(ValueError):
    """An SQS message that is not a remediation request: rejected, never retried."""


class RemediationQueueSettings(BaseModel):
    remediation_queue_url: str | None = Field(
        validation_alias=AliasChoices("REMEDIATION_QUEUE_URL", "remediation_queue_url"),
        default=None,
        description="SQS queue the executor reads: the supervisor sends each plan there (the executor "
        "applies it once approved, or at once when its risk may apply without a person), an approval "
        "sends its incident, the watchdog sends a run that died. Unset: nothing is sent.",
    )

    @field_validator("remediation_queue_url", mode="before")
    @classmethod
    def _remediation_queue_url(cls, value: object) -> object:  # not _queue_url: the re-check mixin's name
        return queue_url(value, "REMEDIATION_QUEUE_URL", "incident-remediations")


def request_message(incident_id: str) -> str:
    return json.dumps({"incident_id": incident_id, "kind": REMEDIATION_KIND}, sort_keys=True)


def send_request(sqs: Any, queue_url: str, incident_id: str) -> str:
    """Ask the executor to take ``incident_id`` on; the SQS message id."""
    return str(sqs.send_message(QueueUrl=queue_url, MessageBody=request_message(incident_id))["MessageId"])


def parse_request(body: object) -> str:
    """The incident id a request names; MalformedRequest says what is wrong with any other message."""
    if not isinstance(body, str) or not body:
        raise MalformedRequest("the message has no body")
    try:
        message = json.loads(body)
    except ValueError:
        raise MalformedRequest(f"the body is not JSON: {body[:80]!r}") from None
    if not isinstance(message, dict) or message.get("kind") != REMEDIATION_KIND:
        raise MalformedRequest(f"not a remediation request (kind {REMEDIATION_KIND!r}): {body[:80]!r}")
    if extra := sorted(set(message) - {"incident_id", "kind"}):
        raise MalformedRequest(f"unknown fields {extra}: a request carries incident_id and kind only")
    incident_id = message.get("incident_id")
    if not isinstance(incident_id, str) or not is_incident_id(incident_id):
        raise MalformedRequest(
            f"incident_id {str(incident_id)[:120]!r} is not an incident id (<function>@<time>)"
        )
    return incident_id
