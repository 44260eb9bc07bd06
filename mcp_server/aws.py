"""AWS clients of the MCP server: created once per account, region and service, with standard retries,
explicit timeouts and read-only enforcement; another account is read through its alias's role, whose
credentials are cached until shortly before they expire."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.credentials import RefreshableCredentials

from mcp_server.errors import ReadOnlyViolation
from mcp_server.pacing import LOOKUP_EVENTS_PER_SECOND, Pacer
from mcp_server.permissions import ALLOWED_OPERATIONS
from mcp_server.settings import AccountRole, ServerSettings
from mcp_server.targets import Target, TargetResolver

GLOBAL_EVENTS_REGION = "us-east-1"  # CloudTrail records IAM's (global) events there
REGION_SETTINGS = (
    "AWS_REGION (or AWS_DEFAULT_REGION), or `region` in the AWS_PROFILE's section of the AWS config file"
)


class RegionNotConfigured(ValueError):
    """The AWS configuration chain names no region, and the server never guesses one."""


def _refuse_writes(model: Any, **_: Any) -> None:
    """botocore ``before-call`` hook: runs before signing/sending; refuses anything not allowlisted."""
    operation = (model.service_model.service_name, model.name)
    if operation not in ALLOWED_OPERATIONS:
        raise ReadOnlyViolation(
            f"refused {operation[0]}:{operation[1]}: this server only performs the read operations "
            "listed in mcp_server/permissions.py"
        )


def configured_region(session: boto3.Session) -> str:
    """The session's region; RegionNotConfigured, saying what to set, when the chain names none."""
    if not session.region_name:
        raise RegionNotConfigured(f"no AWS region is configured: set {REGION_SETTINGS}")
    return str(session.region_name)


def default_session() -> boto3.Session:
    """The standard AWS configuration chain, which must name a region. AWS_REGION first: botocore reads
    only AWS_DEFAULT_REGION and the profile's region, the other AWS SDKs AWS_REGION before them."""
    session = boto3.Session(region_name=os.environ.get("AWS_REGION") or None)
    configured_region(session)
    return session


def _config(settings: ServerSettings) -> Config:
    return Config(
        retries={"mode": "standard", "total_max_attempts": settings.aws_max_attempts},
        connect_timeout=settings.aws_connect_timeout,
        read_timeout=settings.aws_read_timeout,
        # More connections than the worker threads that may share a client, so none waits for one.
        max_pool_connections=settings.aws_max_pool_connections,
        user_agent_extra="incident-response-mcp",
    )


def read_only_client(
    session: boto3.Session, service: str, settings: ServerSettings, region: str | None = None
) -> Any:
    client = session.client(service, config=_config(settings), region_name=region or session.region_name)
    client.meta.events.register("before-call", _refuse_writes)
    return client


@dataclass(frozen=True)
class TargetClients:
    """The clients one tool call reads with: its target's account and region."""

    target: Target
    lambda_: Any
    logs: Any
    iam: Any
    ec2: Any
    cloudwatch: Any
    cloudtrail: Any
    global_cloudtrail: Any  # the account's CloudTrail in us-east-1, where IAM's events are
    sqs: Any
    sns: Any
    kms: Any = None
    apigateway: Any = None
    apigatewayv2: Any = None
    dynamodb: Any = None  # the incident tables (get_incident_history)
    # LookupEvents pacing by Region, shared by every call to the same account (made here when absent).
    lookup_pacers: dict[str, Pacer] = field(default_factory=dict)

    @property
    def region(self) -> str:
        return self.target.region

    def lookup_pacer(self, region: str) -> Pacer:
        return self.lookup_pacers.setdefault(region, Pacer(LOOKUP_EVENTS_PER_SECOND))


class AwsClients:
    """Every client the server uses, made on first use and kept."""

    def __init__(self, settings: ServerSettings, session: boto3.Session) -> None:
        self._settings = settings
        self._session = session
        self.region: str = configured_region(session)
        self._sessions: dict[str | None, boto3.Session] = {None: session}
        self._clients: dict[tuple[str | None, str, str], Any] = {}
        self._own_account: str | None = None
        self._pacers: dict[str | None, dict[str, Pacer]] = {}
        self._lock = threading.Lock()
        self.resolver = TargetResolver(settings, self.region, self.own_account_id)

    @classmethod
    def create(cls, settings: ServerSettings, session: boto3.Session | None = None) -> AwsClients:
        return cls(settings, session or default_session())

    def client(self, service: str, region: str | None = None, account: str | None = None) -> Any:
        key = (account, service, region or self.region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = read_only_client(
                    self._account_session(account), service, self._settings, key[2]
                )
            return self._clients[key]

    def for_target(self, target: Target) -> TargetClients:
        account, region = target.account_alias, target.region

        def make(service: str, in_region: str = region) -> Any:
            return self.client(service, in_region, account)

        return TargetClients(
            target=target,
            lambda_=make("lambda"),
            logs=make("logs"),
            iam=make("iam"),
            ec2=make("ec2"),
            cloudwatch=make("cloudwatch"),
            cloudtrail=make("cloudtrail"),
            global_cloudtrail=make("cloudtrail", GLOBAL_EVENTS_REGION),
            sqs=make("sqs"),
            sns=make("sns"),
            kms=make("kms"),
            apigateway=make("apigateway"),
            apigatewayv2=make("apigatewayv2"),
            dynamodb=make("dynamodb"),
            lookup_pacers=self._lookup_pacers(account, region),
        )

    def _lookup_pacers(self, account: str | None, region: str) -> dict[str, Pacer]:
        rate = self._settings.mcp_cloudtrail_lookups_per_second
        with self._lock:
            pacers = self._pacers.setdefault(account, {})
            for lookup_region in (region, GLOBAL_EVENTS_REGION):
                pacers.setdefault(lookup_region, Pacer(rate))
            return pacers

    def own_account_id(self) -> str:
        """The server's own account (``sts:GetCallerIdentity`` once; it needs no permission)."""
        if self._own_account is None:
            self._own_account = str(self.client("sts").get_caller_identity()["Account"])
        return self._own_account

    def _account_session(self, alias: str | None) -> boto3.Session:
        # Called with the lock held.
        if alias not in self._sessions:
            self._sessions[alias] = self._assumed_session(alias, self._settings.mcp_accounts[str(alias)])
        return self._sessions[alias]

    def _assumed_session(self, alias: str | None, role: AccountRole) -> boto3.Session:
        sts = read_only_client(self._session, "sts", self._settings, self.region)

        def fetch() -> dict[str, str]:
            params = {"RoleArn": role.role_arn, "RoleSessionName": f"incident-response-{alias}"}
            if role.external_id:
                params["ExternalId"] = role.external_id
            credentials = sts.assume_role(**params)["Credentials"]
            return {
                "access_key": credentials["AccessKeyId"],
                "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat(),
            }

        core = botocore.session.Session()
        for variable in ("config_file", "profile"):
            core.set_config_variable(variable, self._session._session.get_config_variable(variable))
        # botocore refreshes these shortly before they expire, and only then calls STS again.
        core._credentials = RefreshableCredentials.create_from_metadata(
            metadata=fetch(), refresh_using=fetch, method="sts-assume-role"
        )
        return boto3.Session(botocore_session=core, region_name=self.region)
