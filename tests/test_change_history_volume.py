"""Change history as a busy account has it: thousands of reads after the change that broke the function
(event history records reads; other tools, consoles and this toolkit read the function and its role all
day), and, where the budget cannot cover the window, the gap that says how far back the search got.

A sandbox of this module's own, at AWS's pace (LookupEvents throttled at 2 a second), so the volume made
here reaches no other test's change history.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import GLOBAL_EVENTS_REGION, AwsClients
from mcp_server.contract import GetRecentChangesArgs, RecentChangesResponse
from mcp_server.settings import ServerSettings
from mcp_server.tools import change_lookups
from mcp_server.tools.changes import recent_changes
from supervisor.agent.run import run_agent
from supervisor.settings import SupervisorSettings
from tests.conftest import shipped_mcp_server
from tests.fault_scenarios import OPERATOR_ARN, SCENARIOS, RestoreSteps, run_scenario
from tests.tool_support import call_tool

READS_AFTER_THE_TRIGGER = 5_000


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with running_sandbox(tmp_path_factory.mktemp("busy-sandbox"), cloudtrail_delay=0) as own:
        yield own


@pytest.fixture(scope="module")
def runtime(sandbox: Sandbox) -> Iterator[LocalLambdaRuntime]:
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE), accounts=sandbox.lambda_accounts()) as rt:
        yield rt


def _many(calls: list[Callable[[], object]]) -> int:
    """Runs every call (8 at a time); how many succeeded."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return sum(1 for _ in pool.map(lambda call: call(), calls))


def _tagging(iam: Any, value: int) -> Callable[[], object]:
    return lambda: iam.tag_role(RoleName=names.REPORT_ROLE, Tags=[{"Key": "busy", "Value": str(value)}])


def _reads_of_the_function_and_its_role(sandbox: Sandbox, count: int) -> int:
    """``count`` management reads, as a monitoring tool makes them: the function and its role, in turn."""
    operator = sandbox.session(names.OPERATOR)
    lambda_, iam = operator.client("lambda"), operator.client("iam")
    reads: list[Callable[[], object]] = [
        (lambda: lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME))
        if i % 2
        else (lambda: iam.get_role(RoleName=names.ROLE_NAME))
        for i in range(count)
    ]
    return _many(reads)


@pytest.mark.slow(35)
async def test_the_trigger_is_found_under_thousands_of_reads(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, tmp_path_factory: pytest.TempPathFactory
) -> None:
    steps = RestoreSteps()
    try:
        run = run_scenario(sandbox, runtime, steps, SCENARIOS["permission_removed"])
        assert set(run.statuses) == {"failed"}
        assert (
            _reads_of_the_function_and_its_role(sandbox, READS_AFTER_THE_TRIGGER) == READS_AFTER_THE_TRIGGER
        )
        newest = (
            sandbox.session(names.OPERATOR)
            .client("cloudtrail", region_name=GLOBAL_EVENTS_REGION)
            .lookup_events(
                LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": names.ROLE_NAME}]
            )
        )
        assert {e["EventName"] for e in newest["Events"]} == {"GetRole"}, (
            "the role's newest page is all reads"
        )

        with shipped_mcp_server(sandbox, tmp_path_factory.mktemp("busy-mcp")) as url:
            settings = SupervisorSettings(mcp_server_url=f"{url}/sse", supervisor_model="rules")
            incident = {"AlarmName": f"{names.FUNCTION_NAME}-errors", "NewStateValue": "ALARM"}
            result = await run_agent(
                incident,
                "inc-busy",
                names.FUNCTION_NAME,
                settings=settings,
                api_key=sandbox.world.mcp_api_key,
            )
    finally:
        steps.restore()
    diagnosis = result.diagnosis
    assert diagnosis is not None, result.stop_reason
    assert diagnosis.fault_types == ["permission_loss"], diagnosis.root_cause
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.identity) == ("DeleteRolePolicy", OPERATOR_ARN)
    assert not [gap for gap in diagnosis.gaps if "LookupEvents" in gap.source], diagnosis.gaps


def test_when_the_budget_runs_out_the_gap_says_how_far_back_the_search_got(sandbox: Sandbox) -> None:
    # After the change, more reads of the role than its own lookup reads (10 pages of 50), then more writes
    # of other resources than the writes lookup reads (20 pages of 50): the writes lookup stops among the
    # writes, and the role's own lookup, before them, among the reads.
    iam = sandbox.session(names.OPERATOR).client("iam")
    policy = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    changed = datetime.now(UTC)
    writes = change_lookups.WRITE_PAGES * change_lookups.PAGE_SIZE + 100
    reads = change_lookups.SEARCH_PAGES * change_lookups.PAGE_SIZE + 100
    try:
        tags = [_tagging(iam, i) for i in range(writes)]
        assert _many([lambda: iam.get_role(RoleName=names.ROLE_NAME)] * reads) == reads
        assert _many(tags) == writes
        pace = float(sandbox.env["MCP_CLOUDTRAIL_LOOKUPS_PER_SECOND"])  # its own sandbox's: AWS's rate
        aws = AwsClients.create(
            ServerSettings(mcp_cloudtrail_lookups_per_second=pace), sandbox.session(names.MCP_SERVER)
        )
        response: RecentChangesResponse = call_tool(
            aws, recent_changes, GetRecentChangesArgs(lambda_name=names.FUNCTION_NAME)
        )
    finally:
        iam.put_role_policy(
            RoleName=names.ROLE_NAME,
            PolicyName=names.INLINE_POLICY_NAME,
            PolicyDocument=json.dumps(policy["PolicyDocument"]),
        )
        iam.untag_role(RoleName=names.REPORT_ROLE, TagKeys=["busy"])

    source = f"cloudtrail:LookupEvents of role {names.ROLE_NAME} ({GLOBAL_EVENTS_REGION})"
    gap = next((g for g in response.gaps if g.source == source), None)
    assert gap is not None, response.gaps
    stopped = re.fullmatch(
        r"stopped reading because (.+): its changes before (\S+) were not searched", gap.meaning
    )
    assert stopped is not None, gap.meaning
    assert stopped[1] in ("its cap of 10 pages of 50 was reached", "the tool's deadline was near")
    assert datetime.fromisoformat(stopped[2]) > changed, "the search stopped among what came after the change"
    assert "DeleteRolePolicy" not in [e.event_name for e in response.events]
