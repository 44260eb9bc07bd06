"""The executor's Lambda entry point, ``executor.handler.handler``: SQS events of its queue
(``supervisor.remediation.queue``), one incident per message.

Each message only asks the executor to look: it reads the incident, its plan and the decision on it
itself, and does what they allow (``executor.run``). A message that is not a request is dropped (logged);
one whose incident could not be read or moved (DynamoDB, IAM) goes back to SQS (``batchItemFailures``) and
is delivered again. Importing this module reads no configuration.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from executor.approvals import Approvals, Approver
from executor.recovery import Verdict, check_invocations
from executor.run import Executor
from executor.settings import ExecutorSettings
from supervisor.incident.notify import Notifier, sns_client
from supervisor.incident.store import IncidentStore, dynamodb_client
from supervisor.remediation.plan import Plan
from supervisor.remediation.queue import MalformedRequest, parse_request

SERVICE = "incident-executor"
SQS_SOURCE = "aws:sqs"


class McpRecovery:
    """The recovery check through the MCP server's tools, one session per check."""

    def __init__(self, settings: ExecutorSettings, session: boto3.Session) -> None:
        self.settings = settings
        self.session = session
        self._key: str | None = None

    def __call__(self, plan: Plan, since: datetime) -> Verdict:
        from supervisor.agent.mcp_key import resolve_mcp_key

        if self._key is None:
            self._key = resolve_mcp_key(self.settings, self.session)
        return asyncio.run(self._check(plan, since, self._key))

    async def _check(self, plan: Plan, since: datetime, key: str) -> Verdict:
        from supervisor.agent.mcp_client import mcp_session
        from supervisor.agent.providers import McpToolProvider

        async with mcp_session(self.settings, key) as session:
            provider = McpToolProvider(session, incident_id=plan.incident_id)
            now = datetime.now(UTC)
            return await check_invocations(
                provider.call_tool, plan, since, now, self.settings.min_invocations
            )


def build_executor(
    session: boto3.Session | None = None, logger: Logger | None = None, **overrides: Any
) -> Executor:
    """An executor configured from the environment (ExecutorSettings), ``overrides`` applied; its notifier
    logs to stdout as Lambda's (``logger`` otherwise)."""
    settings = ExecutorSettings(**overrides)
    session = session or boto3.Session()
    dynamodb = dynamodb_client(session)
    return Executor(
        store=IncidentStore(dynamodb, settings.incident_state_table, settings.incident_context_table),
        approvals=Approvals(dynamodb, settings.incident_approvals_table),
        approver=Approver(settings.approver_arns),
        read=session.client,
        write=session.client,
        verify=McpRecovery(settings, session),
        auto_apply=settings.auto_apply_risks,
        lease=timedelta(seconds=settings.lease_seconds),
        poll_seconds=settings.poll_seconds,
        notifier=Notifier(sns_client(session), topic, settings.console_url, logger or Logger(service=SERVICE))
        if (topic := settings.diagnoses_topic_arn)
        else None,
    )


def handle(executor: Executor, event: object, context: Any, logger: Logger) -> dict[str, Any]:
    """Each record of an SQS event; ``batchItemFailures`` names those SQS must deliver again."""
    records = event.get("Records") if isinstance(event, dict) else None
    failures, outcomes = [], []
    for record in records if isinstance(records, list) else []:
        message_id = record.get("messageId") if isinstance(record, dict) else None
        try:
            if not isinstance(record, dict) or record.get("eventSource") != SQS_SOURCE:
                raise MalformedRequest("the record is not an SQS message")
            incident_id = parse_request(record.get("body"))
        except MalformedRequest as malformed:
            logger.warning("rejected_request", extra={"message_id": message_id, "reason": str(malformed)})
            outcomes.append({"message_id": message_id, "outcome": f"rejected: {malformed}"})
            continue
        run_id = str(getattr(context, "aws_request_id", None) or message_id)
        try:
            outcome = executor.run(incident_id, run_id)
        except (ClientError, BotoCoreError) as error:
            logger.exception("executor_run_failed", extra={"incident_id": incident_id})
            failures.append({"itemIdentifier": message_id})
            outcome = f"failed, delivered again: {type(error).__name__}: {error}"
        logger.info("executor_run", extra={"incident_id": incident_id, "outcome": outcome})
        outcomes.append({"message_id": message_id, "incident_id": incident_id, "outcome": outcome})
    return {"batchItemFailures": failures, "outcomes": outcomes}


@cache
def _executor() -> Executor:
    return build_executor()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(_executor(), event, context, Logger(service=SERVICE))
