"""The Lambda entry point, ``supervisor.orchestrator.handler``: SNS events of alarms, and SQS events of the
re-checks of provisional diagnoses (``supervisor.incident.recheck``).

Importing this module reads no configuration and imports no agent stack: the pipeline is built on the
first event and kept for the life of the execution environment (one cold start, one MCP key read).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger

from supervisor.incident.notify import Notifier, sns_client
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import IncidentStore, dynamodb_client

SERVICE = "incident-supervisor"


def build_pipeline(
    session: boto3.Session | None = None, logger: Logger | None = None, **overrides: Any
) -> IncidentPipeline:
    """A pipeline configured from the environment (SupervisorSettings), ``overrides`` applied; its log
    lines to stdout as Lambda's (``logger`` otherwise)."""
    from supervisor.settings import SupervisorSettings

    settings = SupervisorSettings(**overrides)
    session = session or boto3.Session()
    dynamodb = dynamodb_client(session)
    store = IncidentStore(
        dynamodb,
        settings.incident_state_table,
        settings.incident_context_table,
        retention_days=settings.retention_days,
    )
    logger = logger or Logger(service=SERVICE)
    notifier = (
        Notifier(sns_client(session), settings.diagnoses_topic_arn, settings.console_url, logger)
        if settings.diagnoses_topic_arn
        else None
    )
    return IncidentPipeline(store, settings, logger, session, notifier=notifier)


@cache
def _pipeline() -> IncidentPipeline:
    return build_pipeline()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _pipeline().handle(event, context)
