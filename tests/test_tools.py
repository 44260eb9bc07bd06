"""The diagnostic tools against the sandbox, as the read-only `mcp-server` identity, healthy and under each
injected fault; plus their bounded-logs and network logic against small fakes."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.traffic import put_events
from mcp_server.aws import AwsClients, TargetClients
from mcp_server.contract import (
    GetIAMStateArgs,
    GetLambdaConfigArgs,
    GetNetworkStateArgs,
    GetRecentLogsArgs,
    LogsResponse,
)
from mcp_server.errors import DiagnosticToolError
from mcp_server.reads import Reads
from mcp_server.settings import ServerSettings
from mcp_server.targets import Target
from mcp_server.tools.context import ToolContext
from mcp_server.tools.iam import iam_state
from mcp_server.tools.lambda_config import lambda_config
from mcp_server.tools.logs import ERROR_LIKE, ERROR_TERMS, recent_logs, truncate_message
from mcp_server.tools.network import network_state
from tests.conftest import Inject, Undo
from tests.tool_support import call_tool, tool_context

SETTINGS = ServerSettings()
MARKER = re.compile(r" …\[truncated (\d+) bytes\]$")


@pytest.fixture(scope="module")
def clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(SETTINGS, sandbox.session(names.MCP_SERVER))


@dataclass
class FakeLambda:
    """A function that exists, with no LoggingConfig: its log group is /aws/lambda/<name>."""

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"FunctionName": FunctionName}


def _fake_context(logs_client: Any, settings: ServerSettings) -> ToolContext:
    target = Target("fn", None, names.DEFAULT_REGION, None)
    clients = TargetClients(target, FakeLambda(), logs_client, None, None, None, None, None, None, None)
    return ToolContext(
        clients, Reads(ThreadPoolExecutor(2), settings.mcp_tool_deadline_seconds, target.region), settings
    )


def _logs(
    source: AwsClients | Any,
    lambda_name: str = names.FUNCTION_NAME,
    *,
    now: datetime | None = None,
    scan_limit: int = SETTINGS.logs_scan_limit,
    **arguments: Any,
) -> LogsResponse:
    """The logs tool, on the sandbox (``AwsClients``) or on a fake CloudWatch Logs client."""
    settings = SETTINGS.model_copy(update={"logs_scan_limit": scan_limit})
    args = GetRecentLogsArgs(lambda_name=lambda_name, **arguments)
    if isinstance(source, AwsClients):
        return recent_logs(tool_context(source, args, settings), args, now=now)
    return recent_logs(_fake_context(source, settings), args, now=now)


def _stamps(response: LogsResponse) -> list[datetime]:
    return [datetime.fromisoformat(e.timestamp) for e in response.events]


def _size(response: LogsResponse) -> int:
    return sum(len(e.message.encode()) for e in response.events)


def _assert_consistent(response: LogsResponse) -> None:
    """What every logs answer promises, whatever it selected."""
    assert _stamps(response) == sorted(_stamps(response))
    assert all(e.log_stream or e.request_id for e in response.events)  # a stream, or its invocation's
    assert _size(response) <= SETTINGS.logs_byte_cap
    assert all(len(e.message.encode()) <= SETTINGS.logs_message_cap for e in response.events)
    assert response.returned_events == len(response.events)
    shown = response.matched_events - response.summarised_events
    assert response.dropped_events == shown - response.returned_events
    assert response.truncated_messages == sum(bool(MARKER.search(e.message)) for e in response.events)


# --------------------------------------------------------------------------- healthy function


def test_iam_state_of_the_healthy_function(sandbox: Sandbox, clients: AwsClients) -> None:
    state = call_tool(clients, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME))
    assert state.role_name == names.ROLE_NAME
    assert state.role_arn == sandbox.world.role_arn
    assert state.permissions_boundary is None
    statements = state.inline_policies[names.INLINE_POLICY_NAME]["Statement"]
    assert {"s3:GetObject", "s3:ListBucket"} == {s["Action"] for s in statements}
    attached = {p.policy_name: p for p in state.attached_policies}
    assert set(attached) == {names.LOGS_POLICY_NAME, names.VPC_POLICY_NAME}
    logs_policy = attached[names.LOGS_POLICY_NAME]
    assert logs_policy.policy_arn == sandbox.world.logs_policy_arn
    assert logs_policy.default_version_id == "v1"
    assert logs_policy.document is not None
    assert "logs:PutLogEvents" in logs_policy.document["Statement"][0]["Action"]


def test_lambda_config_of_the_healthy_function_by_name_and_by_arn(
    sandbox: Sandbox, clients: AwsClients
) -> None:
    for lambda_name in (names.FUNCTION_NAME, sandbox.world.function_arn):
        config = call_tool(clients, lambda_config, GetLambdaConfigArgs(lambda_name=lambda_name))
        assert config.FunctionName == names.FUNCTION_NAME
        assert config.FunctionArn == sandbox.world.function_arn
        assert (config.Timeout, config.MemorySize, config.Runtime) == (3, 256, "python3.12")
        assert config.Role == sandbox.world.role_arn
        assert config.State == "Active"
        assert config.ReservedConcurrentExecutions is None
        assert config.VpcConfig is not None
        assert config.VpcConfig.SubnetIds == [sandbox.world.subnet_id]
        assert config.VpcConfig.SecurityGroupIds == [sandbox.world.security_group_id]


def test_network_state_of_the_healthy_function(sandbox: Sandbox, clients: AwsClients) -> None:
    state = call_tool(clients, network_state, GetNetworkStateArgs(lambda_name=names.FUNCTION_NAME))
    assert (state.function_name, state.in_vpc, state.vpc_id) == (
        names.FUNCTION_NAME,
        True,
        sandbox.world.vpc_id,
    )
    [group] = state.security_groups
    assert (group.group_id, group.group_name) == (sandbox.world.security_group_id, names.SECURITY_GROUP_NAME)
    [rule] = group.egress
    assert (rule.ip_protocol, rule.from_port, rule.to_port, rule.ipv4_ranges) == (
        "tcp",
        443,
        443,
        ["0.0.0.0/0"],
    )
    [subnet] = state.subnets
    assert (subnet.subnet_id, subnet.vpc_id) == (sandbox.world.subnet_id, sandbox.world.vpc_id)
    assert subnet.network_acl is not None
    assert any(e.egress and e.rule_action == "allow" for e in subnet.network_acl.entries)
    assert state.https_egress_allowed is True
    [apis] = [verdict for verdict in state.egress if verdict.destination == "aws-apis"]
    assert apis.allowed is True
    assert apis.path == f"nat-gateway {sandbox.world.nat_gateway_id}"


def test_recent_logs_of_one_invocation(
    sandbox: Sandbox, clients: AwsClients, runtime: LocalLambdaRuntime
) -> None:
    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())
    assert invocation.status == "succeeded"

    response = _logs(
        clients, sandbox.world.function_arn, filter_pattern=f'"{invocation.request_id}"', detail=True
    )

    assert response.log_group == names.LOG_GROUP
    messages = [e.message for e in response.events]
    assert messages[0].startswith(f"START RequestId: {invocation.request_id}")
    assert messages[-2].startswith(f"END RequestId: {invocation.request_id}")
    assert messages[-1].startswith(f"REPORT RequestId: {invocation.request_id}")
    assert response.matched_events == len(messages) >= 3
    assert response.note is None
    assert response.window_start is not None
    assert response.window_end is not None
    window = datetime.fromisoformat(response.window_start), datetime.fromisoformat(response.window_end)
    assert window[1] - window[0] == timedelta(minutes=30)
    assert all(window[0] <= stamp <= window[1] for stamp in _stamps(response))
    _assert_consistent(response)


# --------------------------------------------------------------------------- injected faults


def test_deleted_inline_policy_shows_in_iam_and_logs(
    sandbox: Sandbox, clients: AwsClients, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(REVOKE_S3)

    state = call_tool(clients, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME))
    assert state.inline_policies == {}
    assert {p.policy_name for p in state.attached_policies} == {names.LOGS_POLICY_NAME, names.VPC_POLICY_NAME}

    started = datetime.now(UTC) - timedelta(seconds=1)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    # No filter: the newest error line comes first in the selection, whatever else the group holds.
    response = _logs(clients)
    denials = [
        e
        for e in response.events
        if e.message.startswith("[ERROR]")
        and "(AccessDenied)" in e.message
        and datetime.fromisoformat(e.timestamp) >= started
    ]
    assert len(denials) == 1
    _assert_consistent(response)


def test_detached_logs_policy_shows_in_iam_and_leaves_no_new_lines(
    sandbox: Sandbox, clients: AwsClients, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(REVOKE_CLOUDWATCH)

    state = call_tool(clients, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME))
    assert [p.policy_name for p in state.attached_policies] == [names.VPC_POLICY_NAME]
    assert names.INLINE_POLICY_NAME in state.inline_policies

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())
    assert not invocation.logs_written
    response = _logs(clients, filter_pattern=f'"{invocation.request_id}"')
    assert response.events == []
    assert response.matched_events == 0
    assert response.note is not None
    assert response.note.startswith("nothing matched")
    assert names.LOG_GROUP in response.note
    assert invocation.request_id in response.note


def test_reserved_concurrency_zero_shows_in_config(
    sandbox: Sandbox, clients: AwsClients, inject: Inject
) -> None:
    inject(THROTTLE, concurrency=0)

    config = call_tool(clients, lambda_config, GetLambdaConfigArgs(lambda_name=names.FUNCTION_NAME))
    assert config.ReservedConcurrentExecutions == 0


def test_removed_https_egress_shows_in_network_and_logs(
    sandbox: Sandbox, clients: AwsClients, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(BLOCK_EGRESS)

    state = call_tool(clients, network_state, GetNetworkStateArgs(lambda_name=names.FUNCTION_NAME))
    assert state.security_groups[0].egress == []
    assert state.https_egress_allowed is False
    assert {(v.destination, v.allowed) for v in state.egress} == {
        ("aws-apis", False),
        ("s3", False),
        ("dynamodb", False),
    }
    group = sandbox.world.security_group_id
    assert all(
        f"no egress rule of security groups {group} allows tcp/443" in v.reasons[0] for v in state.egress
    )

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())
    assert invocation.status == "timed_out"
    response = _logs(clients, filter_pattern=f'"{invocation.request_id}"')
    assert any("Task timed out after 3.00 seconds" in e.message for e in response.events)


def test_network_acl_denying_https_shows_in_network(
    sandbox: Sandbox, clients: AwsClients, undo: Undo
) -> None:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    acl_id = ec2.describe_network_acls(
        Filters=[{"Name": "association.subnet-id", "Values": [sandbox.world.subnet_id]}]
    )["NetworkAcls"][0]["NetworkAclId"]
    ec2.create_network_acl_entry(
        NetworkAclId=acl_id,
        RuleNumber=50,
        Protocol="6",
        RuleAction="deny",
        Egress=True,
        CidrBlock="0.0.0.0/0",
        PortRange={"From": 443, "To": 443},
    )
    undo(lambda: ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=50, Egress=True))

    state = call_tool(clients, network_state, GetNetworkStateArgs(lambda_name=names.FUNCTION_NAME))
    assert state.subnets[0].network_acl is not None
    deny = next(e for e in state.subnets[0].network_acl.entries if e.rule_number == 50)
    assert (deny.protocol, deny.rule_action, deny.port_from, deny.port_to) == ("6", "deny", 443, 443)
    assert state.https_egress_allowed is False
    [apis] = [verdict for verdict in state.egress if verdict.destination == "aws-apis"]
    assert apis.allowed is False
    assert any(f"network ACL {acl_id} outbound rule 50 (deny" in reason for reason in apis.reasons)


# --------------------------------------------------------------------------- missing resources

Tool = Callable[[AwsClients, str], object]
TOOLS: dict[str, Tool] = {
    "iam": lambda c, name: call_tool(c, iam_state, GetIAMStateArgs(lambda_name=name)),
    "config": lambda c, name: call_tool(c, lambda_config, GetLambdaConfigArgs(lambda_name=name)),
    "network": lambda c, name: call_tool(c, network_state, GetNetworkStateArgs(lambda_name=name)),
}


@pytest.mark.parametrize("tool", TOOLS.values(), ids=TOOLS.keys())
def test_missing_function_is_a_tool_error_naming_it(clients: AwsClients, tool: Tool) -> None:
    with pytest.raises(DiagnosticToolError) as raised:
        tool(clients, "no-such-function")
    message = str(raised.value)
    assert "ResourceNotFoundException" in message
    assert "function no-such-function" in message
    assert names.DEFAULT_REGION in message
    assert isinstance(raised.value.__cause__, ClientError)


def test_missing_log_group_is_a_note_not_an_error(clients: AwsClients) -> None:
    response = _logs(clients, "never-invoked")
    assert response.log_group == "/aws/lambda/never-invoked"
    assert (response.events, response.matched_events) == ([], 0)
    assert response.note is not None
    assert response.note.startswith("log group /aws/lambda/never-invoked does not exist")
    assert "get_iam_state" in response.note


# --------------------------------------------------------------------------- over 10,000 events

VOLUME_FUNCTION = "log-volume-test"
VOLUME_EVENTS = 10_200  # more than one FilterLogEvents page
SPACING_MS = 150


def _volume_message(index: int) -> str:
    """About 1 in 50 lines an error, every other error and 1 in 10 other lines ~3 KB of 2-byte characters."""
    if index % 50 == 7:
        long = "\n" + "é" * 1500 if index % 100 == 57 else ""
        return f"[ERROR] {index:05d} AccessDenied: not authorized to perform s3:GetObject{long}"
    if index % 10 == 3:
        return f"INFO {index:05d} payload " + "é" * 1500
    return f"INFO {index:05d} processed batch"


@dataclass(frozen=True)
class Volume:
    messages: list[str]
    end: datetime  # just after the last event
    errors: list[int] = field(default_factory=list)  # indices of error lines, oldest first


def _index(message: str) -> int:
    return int(message.split()[1])


@pytest.fixture(scope="module")
def volume(sandbox: Sandbox) -> Iterator[Volume]:
    """10,200 events over 25 minutes in a group of their own, written as the operator in PutLogEvents
    batches.

    A group of their own keeps them out of the other tests' reads of the data-processor group."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    group = f"/aws/lambda/{VOLUME_FUNCTION}"
    end_ms = int(time.time() * 1000)
    first_ms = end_ms - VOLUME_EVENTS * SPACING_MS
    messages = [_volume_message(i) for i in range(VOLUME_EVENTS)]
    logs.create_log_group(logGroupName=group)
    events = [{"timestamp": first_ms + i * SPACING_MS, "message": m} for i, m in enumerate(messages)]
    assert put_events(logs, group, "bulk", events) > 1  # several PutLogEvents batches (1 MB each at most)
    errors = [i for i, m in enumerate(messages) if ERROR_LIKE.search(m)]
    yield Volume(messages, datetime.fromtimestamp(end_ms / 1000, UTC), errors)
    logs.delete_log_group(logGroupName=group)


def _wire_size(volume: Volume, index: int) -> int:
    return len(truncate_message(volume.messages[index], SETTINGS.logs_message_cap)[0].encode())


def test_volume_too_many_errors_returns_only_the_newest_errors(clients: AwsClients, volume: Volume) -> None:
    response = _logs(clients, VOLUME_FUNCTION, now=volume.end, limit=1000)

    _assert_consistent(response)
    assert (response.matched_events, len(volume.errors)) == (VOLUME_EVENTS, VOLUME_EVENTS // 50)
    returned = [_index(e.message) for e in response.events]
    assert 0 < len(returned) < len(volume.errors)
    assert returned == volume.errors[-len(returned) :]  # only errors, the newest ones, chronological
    next_newest = volume.errors[-len(returned) - 1]
    assert _size(response) + _wire_size(volume, next_newest) > SETTINGS.logs_byte_cap
    assert response.truncated_messages > 0
    assert response.note is not None
    assert f"{response.dropped_events} of {VOLUME_EVENTS} matching events left out" in response.note


def test_volume_truncation_cuts_at_a_character_and_counts_the_bytes(
    clients: AwsClients, volume: Volume
) -> None:
    response = _logs(clients, VOLUME_FUNCTION, now=volume.end)

    truncated = [e.message for e in response.events if MARKER.search(e.message)]
    assert truncated
    for message in truncated:
        marker = MARKER.search(message)
        assert marker is not None
        kept = message[: marker.start()]
        original = volume.messages[_index(message)]
        assert original.startswith(kept)
        assert int(marker.group(1)) == len(original.encode()) - len(kept.encode())
        assert len(kept.encode()) > SETTINGS.logs_message_cap - 40


def test_volume_errors_that_fit_come_first_then_the_newest_lines(clients: AwsClients, volume: Volume) -> None:
    response = _logs(clients, VOLUME_FUNCTION, now=volume.end, minutes=1)

    _assert_consistent(response)
    in_window = list(range(VOLUME_EVENTS - 60_000 // SPACING_MS, VOLUME_EVENTS))
    assert response.matched_events == len(in_window) == 400
    returned = [_index(e.message) for e in response.events]
    errors = [i for i in in_window if i in volume.errors]
    others = [i for i in returned if i not in errors]
    assert [i for i in returned if i in errors] == errors  # all 8 fit
    assert others
    assert others == [i for i in in_window if i not in errors][-len(others) :]
    next_other = max(set(in_window) - set(errors) - set(returned))
    full = len(returned) == 100 or _size(response) + _wire_size(volume, next_other) > SETTINGS.logs_byte_cap
    assert full


def test_volume_filter_pattern_and_limit(clients: AwsClients, volume: Volume) -> None:
    response = _logs(clients, VOLUME_FUNCTION, now=volume.end, filter_pattern="AccessDenied", limit=5)

    _assert_consistent(response)
    assert response.filter_pattern == "AccessDenied"
    matched = len(volume.errors)
    assert (response.matched_events, response.returned_events, response.dropped_events) == (
        matched,
        5,
        matched - 5,
    )
    assert [_index(e.message) for e in response.events] == volume.errors[-5:]


def test_volume_scan_limit_reads_the_newest_events_and_says_which(
    clients: AwsClients, volume: Volume
) -> None:
    response = _logs(clients, VOLUME_FUNCTION, now=volume.end, scan_limit=500)

    _assert_consistent(response)
    note = response.note or ""
    assert note.startswith("read newest first within the scan limit (")
    read_from = datetime.fromisoformat(note.split("every event from ", 1)[1].split(" ", 1)[0])
    first_ms = int(volume.end.timestamp() * 1000) - VOLUME_EVENTS * SPACING_MS
    read = [i for i in range(VOLUME_EVENTS) if first_ms + i * SPACING_MS >= read_from.timestamp() * 1000]
    assert read == list(range(read[0], VOLUME_EVENTS))  # the newest events, up to the last one
    assert 250 < len(read) <= 500
    older_errors = [i for i in volume.errors if i < read[0]]
    assert response.matched_events == len(read) + len(older_errors)  # every error line before them too
    assert f"the older events, from {response.window_start} to " in note
    assert "were not read, except their error lines, looked up on their own" in note


# --------------------------------------------------------------------------- fakes


@dataclass
class FakeLogs:
    """``filter_log_events`` answering from fixed pages, honouring the time range (both ends inclusive)
    and ``limit`` like CloudWatch Logs."""

    events: list[dict[str, Any]]
    page_size: int = 3
    error: ClientError | None = None
    terms: bool = False  # honour a one-term filter pattern (a substring, quotes taken off)
    calls: list[dict[str, Any]] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)  # events per call

    def filter_log_events(self, **request: Any) -> dict[str, Any]:
        self.calls.append(request)
        if self.error:
            raise self.error
        term = request.get("filterPattern", "").strip('"') if self.terms else ""
        matching = [
            e
            for e in self.events
            if request["startTime"] <= e["timestamp"] <= request["endTime"] and term in e["message"]
        ]
        start = int(request.get("nextToken", "0"))
        stop = start + min(self.page_size, request["limit"])
        page: dict[str, Any] = {"events": matching[start:stop]}
        self.returned.append(len(page["events"]))
        if stop < len(matching):
            page["nextToken"] = str(stop)
        return page


NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def _raw(seconds_ago: float, message: str, stream: str = "a") -> dict[str, Any]:
    return {"timestamp": NOW_MS - int(seconds_ago * 1000), "message": message, "logStreamName": stream}


def test_fake_pages_are_merged_sorted_and_requested_with_window_and_token() -> None:
    # Two streams, as FilterLogEvents may return them: not globally chronological.
    fake = FakeLogs(
        [_raw(50, "one", "a"), _raw(30, "three", "a"), _raw(40, "two", "b"), _raw(10, "four", "b")]
    )

    response = _logs(fake, "fn", now=NOW, filter_pattern="x", minutes=5)

    assert [e.message for e in response.events] == ["one", "two", "three", "four"]
    assert [e.log_stream for e in response.events] == ["a", "b", "a", "b"]
    assert response.events[0].timestamp == "2025-01-02T03:03:15+00:00"
    assert (response.window_start, response.window_end) == ("2025-01-02T02:59:05+00:00", NOW.isoformat())
    assert [c.get("nextToken") for c in fake.calls] == [None, "3", None]
    request = {"logGroupName": "/aws/lambda/fn", "filterPattern": "x"}
    assert fake.calls[0] == request | {"startTime": NOW_MS - 59_999, "endTime": NOW_MS, "limit": 5_000}
    # The last minute held all four: the rest of the window is the next slice, read whole.
    assert fake.calls[2] == request | {
        "startTime": NOW_MS - 300_000,
        "endTime": NOW_MS - 60_000,
        "limit": 10_000,
    }
    assert response.note is None


def test_fake_selection_keeps_errors_then_newest_others_within_the_limit() -> None:
    lines = ["info 0", "Task timed out after 3.00 seconds", "info 2", "info 3", "[ERROR] boom", "info 5"]
    fake = FakeLogs([_raw(60 - i, line) for i, line in enumerate(lines)])

    response = _logs(fake, "fn", now=NOW, limit=4)

    assert [e.message for e in response.events] == [
        "Task timed out after 3.00 seconds",
        "info 3",
        "[ERROR] boom",
        "info 5",
    ]
    assert (response.matched_events, response.returned_events, response.dropped_events) == (6, 4, 2)


def test_fake_scan_limit_reads_the_newest_slices_first() -> None:
    lines = [f"line {i}" if i % 10 else f"line {i} Timeout" for i in range(40)]  # one a second
    fake = FakeLogs([_raw(40 - i, line) for i, line in enumerate(lines)], page_size=4, terms=True)

    response = _logs(fake, "fn", now=NOW, scan_limit=20)

    reads = [c for c in fake.calls if "filterPattern" not in c]
    assert (reads[0]["startTime"], reads[0]["endTime"]) == (NOW_MS - 59_999, NOW_MS)  # the last minute first
    assert reads[0]["limit"] == 5  # a quarter of the budget until a slice is kept: it holds 40, so it is cut
    assert sum(fake.returned[: len(reads)]) <= 20  # every event fetched counts, those of cut slices too
    shown = [int(e.message.split()[1]) for e in response.events]
    newest = [i for i in shown if i % 10]
    assert newest == [i for i in range(newest[0], 40) if i % 10]  # the newest lines, without a hole
    assert len(newest) >= 5
    assert [i for i in shown if not i % 10] == [0, 10, 20, 30]  # and every error line, older ones looked up
    lookups = [c for c in fake.calls if "filterPattern" in c]
    assert {c["filterPattern"] for c in lookups} == set(ERROR_TERMS)  # then the older part's error lines
    [(start, end)] = {(c["startTime"], c["endTime"]) for c in lookups}  # the part not read, no more
    first = newest[0] - 1 if newest[0] % 10 == 1 else newest[0]  # the suffix may begin with an error line
    assert start == NOW_MS - 30 * 60_000
    assert NOW_MS - (41 - first) * 1000 <= end < NOW_MS - (40 - first) * 1000
    assert response.note is not None
    assert response.note.startswith("read newest first within the scan limit (")


def test_fake_a_newest_instant_denser_than_the_scan_limit_is_said_so() -> None:
    fake = FakeLogs([_raw(0, f"same {i}") for i in range(30)] + [_raw(90, "older Timeout")], terms=True)

    response = _logs(fake, "fn", now=NOW, scan_limit=20)

    assert sum(fake.returned[: len([c for c in fake.calls if "filterPattern" not in c])]) <= 20
    assert [e.message for e in response.events] == ["older Timeout"]  # only the error lookups' find
    lookups = {(c["startTime"], c["endTime"]) for c in fake.calls if "filterPattern" in c}
    assert lookups == {(NOW_MS - 30 * 60_000, NOW_MS)}  # the whole window was left to them
    assert response.note is not None
    assert response.note.startswith("no part of the window could be read whole within the scan limit (")


def test_fake_access_denied_is_a_tool_error() -> None:
    denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "FilterLogEvents")

    expected = r"AccessDeniedException .* log group /aws/lambda/fn \(the server's account\) in region"
    with pytest.raises(DiagnosticToolError, match=expected):
        _logs(FakeLogs([], error=denied), "fn", now=NOW)


@pytest.mark.parametrize(
    ("message", "cap", "expected"),
    [
        ("short", 10, "short"),
        ("é" * 100, 40, "é" * 7 + " …[truncated 186 bytes]"),  # 15 bytes of room: the 8th "é" would split
        ("x" * 5000, 128, "x" * 102 + " …[truncated 4898 bytes]"),  # exactly 128 bytes
    ],
    ids=["short", "two-byte-characters", "ascii"],
)
def test_truncate_message(message: str, cap: int, expected: str) -> None:
    assert truncate_message(message, cap) == (expected, message != expected)
    assert len(expected.encode()) <= cap
