"""Which order of ``LookupEvents`` calls finds the change that broke a function, within the tool's budget,
in a busy account: ``get_recent_changes`` as shipped (the writes first, then each resource's own lookup
over what they did not reach) against each order alone, in the same run, at AWS's rate (2 lookups a
second per account and Region, enforced by the sandbox).

Two accounts, one after the other in one sandbox, each broken by deleting the function's role policy:

- read-heavy: then ``--reads`` reads of the function and its role (as monitoring tools, consoles and
  this toolkit make them);
- write-heavy: then ``--writes`` writes of another role (more than the writes lookup's pages hold).

    python -m bench.change_lookups [--reads 5000] [--writes 1200] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from mcp_server.aws import GLOBAL_EVENTS_REGION, AwsClients
from mcp_server.contract import GetRecentChangesArgs, RecentChangesResponse
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings
from mcp_server.tools.change_lookups import PAGE_SIZE, SEARCH_PAGES, WRITE_PAGES

TRIGGER = "DeleteRolePolicy"
RATE = 2.0  # LookupEvents a second: what a lookup order costs in time at AWS's rate
BASELINE_PAGES = WRITE_PAGES  # the cap each single-order baseline gets


@dataclass
class Row:
    account: str
    order: str
    lookups: int
    seconds_at_aws_rate: float
    found: bool


def _many(calls: list[Callable[[], object]]) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda call: call(), calls))


def _break(sandbox: Sandbox) -> tuple[datetime, Callable[[], None]]:
    """The role's inline policy deleted; from when, and how to put it back."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    document = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    since = datetime.now(UTC)
    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)

    def restore() -> None:
        iam.put_role_policy(
            RoleName=names.ROLE_NAME,
            PolicyName=names.INLINE_POLICY_NAME,
            PolicyDocument=json.dumps(document["PolicyDocument"]),
        )

    return since, restore


def _reads(sandbox: Sandbox, count: int) -> None:
    operator = sandbox.session(names.OPERATOR)
    lambda_, iam = operator.client("lambda"), operator.client("iam")
    _many(
        [
            (lambda: lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME))
            if i % 2
            else (lambda: iam.get_role(RoleName=names.ROLE_NAME))
            for i in range(count)
        ]
    )


def _writes(sandbox: Sandbox, count: int) -> None:
    iam = sandbox.session(names.OPERATOR).client("iam")
    _many([_tagging(iam, i) for i in range(count)])
    iam.untag_role(RoleName=names.REPORT_ROLE, TagKeys=["bench"])


def _tagging(iam: Any, value: int) -> Callable[[], object]:
    return lambda: iam.tag_role(RoleName=names.REPORT_ROLE, Tags=[{"Key": "bench", "Value": str(value)}])


def _single_order(cloudtrail: Any, attribute: dict[str, str], since: datetime) -> tuple[int, bool]:
    """One lookup alone, page by page up to the baseline's cap: pages read, and whether the trigger (made
    at or after ``since``) was among them."""
    params: dict[str, Any] = {"LookupAttributes": [attribute], "MaxResults": PAGE_SIZE}
    for page_number in range(1, BASELINE_PAGES + 1):
        started = time.monotonic()
        page = cloudtrail.lookup_events(**params)
        if any(e["EventName"] == TRIGGER and e["EventTime"] >= since for e in page["Events"]):
            return page_number, True
        if "NextToken" not in page:
            return page_number, False
        params["NextToken"] = page["NextToken"]
        time.sleep(max(0.0, 1 / RATE - (time.monotonic() - started)))
    return BASELINE_PAGES, False


def _shipped(runner: ToolRunner, since: datetime) -> tuple[int, bool]:
    """``get_recent_changes`` as served: the LookupEvents calls it made, and whether it found the trigger."""
    sent: list[int] = []
    clients = [
        runner.aws.client("cloudtrail", region) for region in (runner.aws.region, GLOBAL_EVENTS_REGION)
    ]
    for client in clients:
        client.meta.events.register("before-send.cloudtrail.LookupEvents", lambda **_: sent.append(1))
    answer = runner.run("get_recent_changes", GetRecentChangesArgs(lambda_name=names.FUNCTION_NAME))
    assert isinstance(answer, RecentChangesResponse)
    found = any(e.event_name == TRIGGER and datetime.fromisoformat(e.time) >= since for e in answer.events)
    return len(sent), found


def _measure(account: str, sandbox: Sandbox, runner: ToolRunner, since: datetime) -> list[Row]:
    cloudtrail = sandbox.session(names.OPERATOR).client("cloudtrail", region_name=GLOBAL_EVENTS_REGION)
    orders: dict[str, Callable[[], tuple[int, bool]]] = {
        "get_recent_changes: writes first, then each resource": lambda: _shipped(runner, since),
        "the writes alone (ReadOnly=false)": lambda: _single_order(
            cloudtrail, {"AttributeKey": "ReadOnly", "AttributeValue": "false"}, since
        ),
        "the role's name alone (ResourceName)": lambda: _single_order(
            cloudtrail, {"AttributeKey": "ResourceName", "AttributeValue": names.ROLE_NAME}, since
        ),
    }
    rows = []
    for order, measure in orders.items():
        lookups, found = measure()
        rows.append(Row(account, order, lookups, lookups / RATE, found))
    return rows


def run(reads: int, writes: int, deadline_seconds: float | None = None) -> list[Row]:
    """``deadline_seconds``: the tool's deadline (default: the server's, 20 s); a longer one measures what
    each order finds however slowly a loaded machine answers."""
    # CloudTrail delivers at once here: what is measured is the search through a delivered history.
    with tempfile.TemporaryDirectory() as state, running_sandbox(Path(state), cloudtrail_delay=0) as sandbox:
        pace = float(sandbox.env["MCP_CLOUDTRAIL_LOOKUPS_PER_SECOND"])  # the sandbox's: AWS's rate
        settings = ServerSettings(mcp_cloudtrail_lookups_per_second=pace)
        if deadline_seconds is not None:
            settings = settings.model_copy(update={"mcp_tool_deadline_seconds": deadline_seconds})
        runner = ToolRunner(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
        rows: list[Row] = []
        accounts: list[tuple[str, Callable[[], None]]] = [
            ("read-heavy", lambda: _reads(sandbox, reads)),
            ("write-heavy", lambda: _writes(sandbox, writes)),
        ]
        for account, busy in accounts:
            since, restore = _break(sandbox)
            try:
                busy()
                rows += _measure(account, sandbox, runner, since)
            finally:
                restore()
        return rows


def render(rows: list[Row], reads: int, writes: int) -> str:
    lines = [
        f"Change history after the role's policy was deleted: read-heavy = {reads:,} reads of the function "
        f"and its role; write-heavy = {writes:,} writes of another role. Caps: the writes lookup "
        f"{WRITE_PAGES} pages, each resource's own {SEARCH_PAGES}, each single order alone {BASELINE_PAGES}; "
        f"{PAGE_SIZE} events a page, {RATE:g} lookups a second.",
        "",
        "| account | order | LookupEvents calls | seconds at 2/s | trigger found |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r.account} | {r.order} | {r.lookups} | {r.seconds_at_aws_rate:.1f} | {('no', 'yes')[r.found]} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.change_lookups", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--reads", type=int, default=5_000, help="reads after the change (read-heavy)")
    parser.add_argument("--writes", type=int, default=1_200, help="writes after the change (write-heavy)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    if args.reads < 1 or args.writes < 1:
        parser.error("--reads and --writes must be at least 1")
    rows = run(args.reads, args.writes)
    print(
        json.dumps([asdict(r) for r in rows], indent=2)
        if args.json
        else render(rows, args.reads, args.writes)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
