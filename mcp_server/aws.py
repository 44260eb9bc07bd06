"""AWS clients of the MCP server: created once, standard retries, explicit timeouts, read-only enforced."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from mcp_server.errors import ReadOnlyViolation
from mcp_server.permissions import READ_OPERATIONS, STARTUP_OPERATIONS
from mcp_server.settings import ServerSettings

_ALLOWED = frozenset(READ_OPERATIONS + STARTUP_OPERATIONS)


def _refuse_writes(model: Any, **_: Any) -> None:
    """botocore ``before-call`` hook: runs before signing/sending; refuses anything not allowlisted."""
    operation = (model.service_model.service_name, model.name)
    if operation not in _ALLOWED:
        raise ReadOnlyViolation(
            f"refused {operation[0]}:{operation[1]}: this server only performs the read operations "
            "listed in mcp_server/permissions.py"
        )


DEFAULT_REGION = "ca-central-1"


def default_session() -> boto3.Session:
    """The standard AWS configuration chain; the region falls back to ca-central-1 when none is configured."""
    session = boto3.Session()
    return session if session.region_name else boto3.Session(region_name=DEFAULT_REGION)


def read_only_client(session: boto3.Session, service: str, settings: ServerSettings) -> Any:
    config = Config(
        retries={"mode": "standard", "total_max_attempts": settings.aws_max_attempts},
        connect_timeout=settings.aws_connect_timeout,
        read_timeout=settings.aws_read_timeout,
        user_agent_extra="incident-response-mcp",
    )
    client = session.client(service, config=config)
    client.meta.events.register("before-call", _refuse_writes)
    return client


@dataclass(frozen=True)
class AwsClients:
    logs: Any
    iam: Any
    lambda_: Any
    ec2: Any
    region: str | None

    @classmethod
    def create(cls, settings: ServerSettings, session: boto3.Session | None = None) -> AwsClients:
        session = session or default_session()
        return cls(
            logs=read_only_client(session, "logs", settings),
            iam=read_only_client(session, "iam", settings),
            lambda_=read_only_client(session, "lambda", settings),
            ec2=read_only_client(session, "ec2", settings),
            region=session.region_name,
        )
