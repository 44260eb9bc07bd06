"""The injector engine: the tag guard, saved prior state, dry runs, and inject/restore for every fault.

Every fault follows one protocol. ``capture`` reads the exact state it is about to change; the engine
saves that in the ledger *before* ``apply`` changes anything; ``revert`` puts the saved state back and
the ledger entry is deleted last. A crash at any point therefore leaves either the untouched world or a
ledger entry from which ``restore`` (run again, from anywhere) finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3

from chaos.faults.calls import AwsCalls, Say
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import Ledger, SavedState
from chaos.sandbox import names


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


class Chaos(AwsCalls):
    """Fault injection through one boto3 session: the operator's in the sandbox, yours on AWS."""

    def __init__(
        self,
        session: boto3.Session,
        *,
        dry_run: bool = False,
        say: Say = print,
        state_prefix: str = Ledger.DEFAULT_PREFIX,
    ) -> None:
        super().__init__(session, dry_run=dry_run, say=say)
        self.ledger = Ledger(self, state_prefix)

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
        key, value = names.CHAOS_TAG
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
