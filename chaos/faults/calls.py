"""The AWS calls of the injectors: reads always made, changing calls recorded and (in a dry run) only shown.

Shared by the engine (``chaos.faults.chaos``) and the ledger that keeps its saved state in SSM.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chaos.faults.errors import ChaosError

MASK = "***"  # what a masked value is shown as

_CLIENT_CONFIG = Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=30)

Say = Callable[[str], None]


# Changing calls CloudTrail records as data events, which event history never lists
# (https://docs.aws.amazon.com/streams/latest/dev/logging-using-cloudtrail.html): a record on a stream.
DATA_EVENTS = frozenset({("kinesis", "PutRecord"), ("kinesis", "PutRecords")})


@dataclass(frozen=True)
class ApiCall:
    """One changing API call, as made or (in a dry run) as it would be made."""

    service: str
    operation: str
    params: dict[str, Any]

    @property
    def management(self) -> bool:
        """Whether CloudTrail's event history lists it (not a data event, such as a stream record)."""
        return (self.service, self.operation) not in DATA_EVENTS

    def __str__(self) -> str:
        shown = _abbreviated(self.params)
        if (self.service, self.operation) == ("ssm", "PutParameter") and "Value" in shown:
            # the saved prior state: it can hold environment values, packages and table contents
            shown["Value"] = f"<{len(str(shown['Value']).encode())} bytes of saved state>"
        return f"{self.service}:{self.operation} {json.dumps(shown, sort_keys=True, default=str)}"


def _abbreviated(params: dict[str, Any]) -> dict[str, Any]:
    """Long lists (a log flood's events) are shown by their length; everything else exactly."""
    return {k: f"<{len(v)} items>" if isinstance(v, list) and len(v) > 5 else v for k, v in params.items()}


class AwsCalls:
    """Calls through one boto3 session, one client per service; ``calls`` lists every changing call."""

    def __init__(self, session: boto3.Session, *, dry_run: bool = False, say: Say = print) -> None:
        self.session = session
        self.dry_run = dry_run
        self.say = say
        self.calls: list[ApiCall] = []
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service, config=_CLIENT_CONFIG)
        return self._clients[service]

    def read(self, service: str, method: str, **params: Any) -> Any:
        """A read-only call; made in dry runs too, since the plan depends on what it returns."""
        try:
            return getattr(self.client(service), method)(**params)
        except (ClientError, BotoCoreError) as error:
            raise _explained(error, service, method) from error

    def call(
        self,
        service: str,
        method: str,
        *,
        tolerate: Iterable[str] = (),
        shown: dict[str, Any] | None = None,
        secrets: Iterable[str] = (),
        **params: Any,
    ) -> Any:
        """A changing call: recorded, then made (or only printed in a dry run). An error whose code is in
        ``tolerate`` means the change is already in place and returns None. ``shown``: the parameters to
        record and print instead (values masked); with ``secrets``, error messages are scrubbed of them and
        do not chain the botocore error."""
        client = self.client(service)
        call = ApiCall(service, client.meta.method_to_api_mapping[method], params if shown is None else shown)
        self.calls.append(call)
        if self.dry_run:
            self.say(f"  would call {call}")
            return None
        self.say(f"  {call}")
        hidden = sorted({s for s in secrets if s}, key=len, reverse=True)
        try:
            return getattr(client, method)(**params)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in set(tolerate):
                self.say("    (already in place)")
                return None
            if not hidden:
                raise _explained(error, service, method) from error
            message = _scrubbed(str(error.response.get("Error", {}).get("Message", "")), hidden)
            failure = ChaosError(f"{service} {method} failed: {code}: {message}")
        except BotoCoreError as error:
            if not hidden:
                raise _explained(error, service, method) from error
            failure = ChaosError(f"{service} {method} failed: {_scrubbed(str(error), hidden)}")
        raise failure


def _scrubbed(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def _explained(error: ClientError | BotoCoreError, service: str, method: str) -> ChaosError:
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        hint = (
            " — check that your identity may do this (the injectors need the operator's rights)"
            if "AccessDenied" in code or code == "UnauthorizedOperation"
            else ""
        )
        return ChaosError(f"{service} {method} failed: {code}: {error}{hint}")
    return ChaosError(f"{service} {method} failed: {error} — is the AWS endpoint reachable?")
