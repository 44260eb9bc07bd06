"""The injector engine: the tag guard, saved prior state, dry runs, and inject/restore for every fault.

Every fault follows one protocol. ``capture`` reads the exact state it is about to change; the engine
saves that in the ledger *before* ``apply`` changes anything; ``revert`` puts the saved state back and
the ledger entry is deleted last. A crash at any point therefore leaves either the untouched world or a
ledger entry from which ``restore`` (run again, from anywhere) finishes the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import Ledger, SavedState

MASK = "***"  # what a masked value is shown as

CHAOS_TAG = ("chaos-allowed", "true")
_CLIENT_CONFIG = Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=30)

Say = Callable[[str], None]


@dataclass(frozen=True)
class ApiCall:
    """One changing API call, as made or (in a dry run) as it would be made."""

    service: str
    operation: str
    params: dict[str, Any]

    def __str__(self) -> str:
        shown = _abbreviated(self.params)
        if (self.service, self.operation) == ("ssm", "PutParameter") and "Value" in shown:
            # the saved prior state: it can hold environment values, packages and table contents
            shown["Value"] = f"<{len(str(shown['Value']).encode())} bytes of saved state>"
        return f"{self.service}:{self.operation} {json.dumps(shown, sort_keys=True, default=str)}"


def _abbreviated(params: dict[str, Any]) -> dict[str, Any]:
    """Long lists (a log flood's events) are shown by their length; everything else exactly."""
    return {k: f"<{len(v)} items>" if isinstance(v, list) and len(v) > 5 else v for k, v in params.items()}


@dataclass(frozen=True)
class Target:
    """A function that carries the chaos tag, with the configuration read when it was checked."""

    function_name: str
    configuration: dict[str, Any]

    @property
    def role_name(self) -> str:
        return str(self.configuration["Role"]).rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Fault:
    """A reversible fault. ``capture`` returns the prior state (JSON-able) or raises ChaosRefused when
    there is nothing to break; ``apply`` and ``revert`` must be safe to repeat."""

    name: str
    summary: str
    capture: Callable[[Chaos, Target], dict[str, Any]]
    apply: Callable[..., None]  # (chaos, target, prior, **params)
    revert: Callable[[Chaos, dict[str, Any]], None]


class Chaos:
    """Fault injection through one boto3 session: the operator's in the sandbox, yours on AWS."""

    def __init__(
        self,
        session: boto3.Session,
        *,
        dry_run: bool = False,
        say: Say = print,
        state_prefix: str = Ledger.DEFAULT_PREFIX,
    ) -> None:
        self.session = session
        self.dry_run = dry_run
        self.say = say
        self.calls: list[ApiCall] = []
        self._clients: dict[str, Any] = {}
        self.ledger = Ledger(self, state_prefix)

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

    def target(self, function_name: str) -> Target:
        """The function, if it carries ``chaos-allowed=true``; otherwise ChaosRefused."""
        try:
            response = self.read("lambda", "get_function", FunctionName=function_name)
        except ChaosError as error:
            if "ResourceNotFoundException" in str(error):
                region = self.client("lambda").meta.region_name
                raise ChaosError(
                    f"no function {function_name} in {region}: check --function and --region"
                ) from None
            raise
        key, value = CHAOS_TAG
        if response.get("Tags", {}).get(key) != value:
            arn = response["Configuration"]["FunctionArn"]
            raise ChaosRefused(
                f"refusing to touch {function_name}: it does not carry the tag {key}={value}. Chaos runs "
                f"only against functions marked for it; if {function_name} really is a test target, tag it:"
                f"\n  aws lambda tag-resource --resource {arn} --tags {key}={value}"
            )
        return Target(function_name, response["Configuration"])

    def inject(self, fault: Fault, function_name: str, **params: Any) -> SavedState:
        """Save the prior state (unless an earlier inject already did), then apply the fault."""
        target = self.target(function_name)
        saved = self.ledger.load(function_name, fault.name)
        if saved is None:
            saved = self.ledger.save(function_name, fault.name, fault.capture(self, target))
        else:
            self.say(f"  {fault.name} is already injected (since {saved.saved_at}); keeping its saved state")
        fault.apply(self, target, saved.prior, **params)
        return saved

    def restore(self, fault: Fault, function_name: str) -> bool:
        """Put back the state saved by ``inject``; False (and no change) when nothing is saved."""
        saved = self.ledger.load(function_name, fault.name)
        if saved is None:
            self.say(f"  nothing to restore: no saved state for {fault.name} on {function_name}")
            return False
        fault.revert(self, saved.prior)
        self.ledger.delete(function_name, fault.name)
        return True


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
