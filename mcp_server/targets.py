"""Where a tool call reads: the function (or, for a source tool, the queue or topic), its region and its
account, decided before any AWS call. A source's ARN or URL counts as a function ARN does.

- ``region``: the argument, else the region of a function ARN, else the server's; it must be a region of
  the server's partition, and an ARN's region may not contradict the argument.
- ``account``: an alias from the server's settings (``MCP_ACCOUNTS``), never a role ARN. A function ARN's
  account must be the server's own or an alias's; anything else is refused, never answered from
  another account.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import botocore.session

from mcp_server.contract.common import SourceArguments, TargetArguments
from mcp_server.errors import DiagnosticToolError
from mcp_server.lambda_names import function_name_of, parse_function_arn
from mcp_server.settings import ServerSettings
from mcp_server.source_names import parse_source


class TargetRefused(DiagnosticToolError):
    """The call names a region or account the server will not read; no AWS call was made."""


@dataclass(frozen=True)
class Target:
    function_name: str  # "" for a source tool: it reads ``source``
    qualifier: str | None
    region: str
    account_alias: str | None  # None: the server's own account
    source: str | None = None  # the queue or topic a source tool reads, as given

    @property
    def account(self) -> str:
        return f"account {self.account_alias!r}" if self.account_alias else "the server's account"

    @property
    def function(self) -> str:
        """How the Lambda API names the function (and its version or alias)."""
        return f"{self.function_name}:{self.qualifier}" if self.qualifier else self.function_name


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


@cache
def partition_regions(partition: str) -> frozenset[str]:
    """The regions botocore knows Lambda in, for one partition."""
    return frozenset(botocore.session.get_session().get_available_regions("lambda", partition))


class TargetResolver:
    def __init__(self, settings: ServerSettings, default_region: str, own_account: Callable[[], str]) -> None:
        self._accounts = settings.mcp_accounts
        self._default_region = default_region
        self._partition = partition_of(default_region)
        self._own_account = own_account
        # Loaded once here: the first tool calls come together, and each would parse botocore's endpoints.
        partition_regions(self._partition)

    def resolve(self, args: TargetArguments | SourceArguments) -> Target:
        if isinstance(args, SourceArguments):
            return self._resolve_source(args)
        arn = parse_function_arn(args.lambda_name)
        region = self._region(args.region, arn.region if arn else None, arn.partition if arn else None)
        alias = self._alias(args.account)
        if arn is not None:
            alias = self._account_of(arn.account, alias)
        return Target(
            function_name=function_name_of(args.lambda_name),
            qualifier=arn.qualifier if arn and arn.qualifier != "$LATEST" else None,
            region=region,
            account_alias=alias,
        )

    def _resolve_source(self, args: SourceArguments) -> Target:
        name = parse_source(args.source)
        where = "source ARN" if args.source.startswith("arn:") else "queue URL"
        region = self._region(args.region, name.region, name.partition, where)
        alias = self._alias(args.account)
        if name.account is not None:
            alias = self._account_of(name.account, alias, where)
        return Target(
            function_name="", qualifier=None, region=region, account_alias=alias, source=args.source
        )

    def _region(
        self, asked: str | None, in_arn: str | None, arn_partition: str | None, what: str = "function ARN"
    ) -> str:
        if arn_partition is not None and arn_partition != self._partition:
            raise TargetRefused(
                f"the {what} is in partition {arn_partition}; this server reads partition "
                f"{self._partition} only"
            )
        if asked and in_arn and asked != in_arn:
            raise TargetRefused(f"region {asked!r} contradicts the {what}'s region {in_arn!r}")
        region = asked or in_arn or self._default_region
        if region not in partition_regions(self._partition):
            raise TargetRefused(
                f"region {region!r} is not a Lambda region of partition {self._partition} "
                f"(e.g. {self._default_region!r})"
            )
        return region

    def _alias(self, asked: str | None) -> str | None:
        if asked is None:
            return None
        if asked not in self._accounts:
            known = ", ".join(sorted(self._accounts)) or "none are configured (MCP_ACCOUNTS)"
            raise TargetRefused(f"unknown account alias {asked!r}: this server knows {known}")
        return asked

    def _account_of(self, account_id: str, asked_alias: str | None, what: str = "function ARN") -> str | None:
        """The alias that reads ``account_id`` (None for the server's own account)."""
        if asked_alias is not None:
            if self._accounts[asked_alias].account_id != account_id:
                raise TargetRefused(
                    f"the {what}'s account {account_id} is not the account of alias {asked_alias!r} "
                    f"({self._accounts[asked_alias].account_id})"
                )
            return asked_alias
        for alias, role in sorted(self._accounts.items()):
            if role.account_id == account_id:
                return alias
        own = self._own_account()
        if account_id != own:
            raise TargetRefused(
                f"the {what}'s account {account_id} is neither the server's account ({own}) nor the "
                "account of a configured alias: the server will not answer it from another account"
            )
        return None
