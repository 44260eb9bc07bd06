"""A VPC function's Hyperplane interfaces and the states Lambda answers for it, in the sandbox
(chaos/sandbox/extensions/lambda_vpc.py, chaos/workload/function_state.py; sources in their docstrings).

Each test makes its own VPC with a /28 subnet (11 usable addresses), so filling it is cheap and the world's
VPC is never touched; addresses are counted with EC2's own ``DescribeSubnets``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosError
from chaos.faults.vpc_capacity import SUBNET_FULL, VPC_ATTACH
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.function_state import FUNCTION_STATES_PATH
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentChangesArgs
from mcp_server.contract.changes import ChangeEventDetail
from mcp_server.settings import ServerSettings
from mcp_server.tools.changes import recent_changes
from tests.conftest import Undo
from tests.packages import python_function
from tests.tool_support import call_tool

HANDLER = "def handler(event, context):\n    return {'ok': True}\n"
RESTORE_WAIT_SECONDS = 60.0  # the sandbox's tests run 10 times faster than AWS: Lambda's minute is 6 s


class _Vpc:
    def __init__(self, ec2: Any, undo: Undo) -> None:
        self.ec2 = ec2
        vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
        undo(lambda: ec2.delete_vpc(VpcId=vpc))
        self.subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.77.5.0/28")["Subnet"]["SubnetId"]
        undo(lambda: ec2.delete_subnet(SubnetId=self.subnet))
        self.group = ec2.create_security_group(
            GroupName=f"g-{uuid.uuid4().hex[:6]}", Description="t", VpcId=vpc
        )["GroupId"]
        undo(lambda: ec2.delete_security_group(GroupId=self.group))
        self.fillers: list[str] = []
        undo(self.free)

    @property
    def config(self) -> dict[str, list[str]]:
        return {"SubnetIds": [self.subnet], "SecurityGroupIds": [self.group]}

    def free_addresses(self) -> int:
        count: int = self.ec2.describe_subnets(SubnetIds=[self.subnet])["Subnets"][0][
            "AvailableIpAddressCount"
        ]
        return count

    def lambda_interfaces(self) -> list[dict[str, Any]]:
        found = self.ec2.describe_network_interfaces(Filters=[{"Name": "subnet-id", "Values": [self.subnet]}])
        return [i for i in found["NetworkInterfaces"] if i.get("InterfaceType") == "lambda"]

    def fill(self) -> None:
        """Another workload takes every free address, as an operator's own interfaces would."""
        free = self.free_addresses()
        if free:
            eni = self.ec2.create_network_interface(
                SubnetId=self.subnet, SecondaryPrivateIpAddressCount=free - 1
            )
            self.fillers.append(eni["NetworkInterface"]["NetworkInterfaceId"])

    def free(self) -> None:
        while self.fillers:
            self.ec2.delete_network_interface(NetworkInterfaceId=self.fillers.pop())


@pytest.fixture
def vpc(operator: boto3.Session, undo: Undo) -> _Vpc:
    return _Vpc(operator.client("ec2"), undo)


def _function(operator: boto3.Session, undo: Undo, vpc_config: dict[str, Any]) -> str:
    role = operator.client("iam").get_role(RoleName=names.ROLE_NAME)["Role"]["Arn"]
    name = f"vpc-{uuid.uuid4().hex[:8]}"
    return python_function(
        operator.client("lambda"),
        undo,
        name,
        role,
        {"handler.py": HANDLER},
        "handler.handler",
        VpcConfig=vpc_config,
    )


def _state(operator: boto3.Session, name: str) -> tuple[str, str | None]:
    config = operator.client("lambda").get_function_configuration(FunctionName=name)
    return config["State"], config.get("StateReasonCode")


def _declare_idle(sandbox: Sandbox, operator: boto3.Session, name: str) -> None:
    """The stage's compression of weeks without an invocation."""
    arn = operator.client("lambda").get_function_configuration(FunctionName=name)["FunctionArn"]
    url, body = f"{sandbox.endpoint_url}{FUNCTION_STATES_PATH}{arn}", json.dumps({"idle": True}).encode()
    request = urllib.request.Request(url, data=body, method="POST")  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - the sandbox's own endpoint
        assert json.loads(answer.read()) == {"State": "Inactive", "StateReasonCode": "Idle"}


def _settled(operator: boto3.Session, name: str) -> tuple[str, str | None]:
    """The state once Lambda is done making the interfaces again (Pending no more)."""
    deadline = time.monotonic() + RESTORE_WAIT_SECONDS
    while (state := _state(operator, name))[0] == "Pending" and time.monotonic() < deadline:
        time.sleep(0.2)
    return state


def test_functions_with_one_subnet_and_group_share_one_interface_that_holds_one_address(
    operator: boto3.Session, undo: Undo, vpc: _Vpc
) -> None:
    first = _function(operator, undo, vpc.config)
    assert (_state(operator, first), vpc.free_addresses(), len(vpc.lambda_interfaces())) == (
        ("Active", None),
        10,
        1,
    )
    second = _function(operator, undo, vpc.config)
    assert (_state(operator, second), vpc.free_addresses(), len(vpc.lambda_interfaces())) == (
        ("Active", None),
        10,
        1,
    )
    operator.client("lambda").delete_function(FunctionName=first)
    assert len(vpc.lambda_interfaces()) == 1  # the second still uses it
    operator.client("lambda").delete_function(FunctionName=second)
    assert (vpc.free_addresses(), vpc.lambda_interfaces()) == (11, [])


def test_a_full_subnet_refuses_interfaces_a_new_function_and_a_move_into_it(
    operator: boto3.Session, undo: Undo, vpc: _Vpc, runtime: LocalLambdaRuntime
) -> None:
    vpc.fill()
    assert vpc.free_addresses() == 0
    with pytest.raises(ClientError) as refused:
        vpc.ec2.create_network_interface(SubnetId=vpc.subnet)
    assert refused.value.response["Error"]["Code"] == "InsufficientFreeAddressesInSubnet"

    failed = _function(operator, undo, vpc.config)
    assert _state(operator, failed) == ("Failed", "SubnetOutOfIPAddresses")
    invocation = runtime.invoke(failed, {})
    assert (invocation.status, invocation.error_type) == ("refused", "SubnetIPAddressLimitReachedException")

    outside = _function(operator, undo, {})
    lambda_ = operator.client("lambda")
    lambda_.update_function_configuration(FunctionName=outside, VpcConfig=vpc.config, Timeout=9)
    config = lambda_.get_function_configuration(FunctionName=outside)
    assert (config["State"], config["LastUpdateStatus"], config["LastUpdateStatusReasonCode"]) == (
        "Active",
        "Failed",
        "SubnetOutOfIPAddresses",
    )
    assert ((config.get("VpcConfig") or {}).get("SubnetIds"), config["Timeout"]) == (None, 3)  # abandoned
    assert runtime.invoke(outside, {}).status == "succeeded"


def test_an_idle_function_in_a_full_subnet_stays_inactive_until_an_address_is_free(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, vpc: _Vpc, runtime: LocalLambdaRuntime
) -> None:
    name = _function(operator, undo, vpc.config)
    assert runtime.invoke(name, {}).status == "succeeded"
    _declare_idle(sandbox, operator, name)
    assert (vpc.free_addresses(), vpc.lambda_interfaces()) == (11, [])
    vpc.fill()  # the address Lambda gave back is taken

    invocation = runtime.invoke(name, {})
    assert (invocation.status, invocation.error_type) == ("refused", "ResourceNotReadyException")
    assert _state(operator, name) == ("Pending", "Restoring")
    pending = runtime.invoke(name, {})
    assert (pending.status, pending.error_type) == ("refused", "ResourceConflictException")
    assert _settled(operator, name) == ("Inactive", "SubnetOutOfIPAddresses")
    assert runtime.invoke(name, {}).error_type == "ResourceNotReadyException"

    vpc.free()
    assert _settled(operator, name) == ("Active", None)
    assert runtime.invoke(name, {}).status == "succeeded"
    assert vpc.free_addresses() == 10


def test_the_injectors_strand_an_idle_worker_in_a_full_subnet_and_restore_the_world_exactly(
    sandbox: Sandbox, operator: boto3.Session, runtime: LocalLambdaRuntime
) -> None:
    """order-worker attached beside data-processor, idle, then its subnet filled: no invocation starts;
    restore leaves every address free again and order-worker out of the VPC, Active."""
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    worker = names.ORDER_WORKER_FUNCTION
    try:
        chaos.inject(VPC_ATTACH, worker, into=names.FUNCTION_NAME)
        assert _state(operator, worker) == ("Active", None)
        _declare_idle(sandbox, operator, worker)
        chaos.inject(SUBNET_FULL, worker)
        subnet = operator.client("lambda").get_function_configuration(FunctionName=worker)["VpcConfig"][
            "SubnetIds"
        ]
        free = operator.client("ec2").describe_subnets(SubnetIds=subnet)["Subnets"][0][
            "AvailableIpAddressCount"
        ]
        assert free == 0
        assert runtime.invoke(worker, {"Records": []}).error_type == "ResourceNotReadyException"
        assert _settled(operator, worker) == ("Inactive", "SubnetOutOfIPAddresses")
        assert runtime.invoke(names.FUNCTION_NAME, {"key": "missing", "work_seconds": 0}).status != "refused"
    finally:
        assert chaos.restore(SUBNET_FULL, worker)
        assert chaos.restore(VPC_ATTACH, worker)
    assert _state(operator, worker) == ("Active", None)
    assert world_snapshot(operator) == before


def test_the_change_history_shows_the_interfaces_made_in_the_function_s_subnets(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, vpc: _Vpc
) -> None:
    name = _function(operator, undo, vpc.config)
    vpc.fill()
    clients = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer = call_tool(clients, recent_changes, GetRecentChangesArgs(lambda_name=name, hours=1, detail=True))
    assert f"subnet {vpc.subnet}" in answer.searched
    (made,) = [event for event in answer.events if event.event_name == "CreateNetworkInterface"]
    assert isinstance(made, ChangeEventDetail)
    assert (made.summary["subnetId"], made.matched) == (vpc.subnet, [f"subnet {vpc.subnet}"])
    assert "clientToken" not in made.summary  # boto3's idempotency token: nothing a diagnosis reads
    assert answer.gaps == [], answer.gaps


def test_at_the_account_s_interface_quota_no_interface_is_made_and_an_idle_function_stays_inactive(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, vpc: _Vpc, runtime: LocalLambdaRuntime
) -> None:
    name = _function(operator, undo, vpc.config)
    _declare_idle(sandbox, operator, name)
    pages = vpc.ec2.get_paginator("describe_network_interfaces").paginate()
    made = sum(len(page["NetworkInterfaces"]) for page in pages)
    undo(lambda: sandbox.set_interface_quota(None))
    sandbox.set_interface_quota(made)
    with pytest.raises(ClientError) as refused:
        vpc.ec2.create_network_interface(SubnetId=vpc.subnet)
    assert refused.value.response["Error"]["Code"] == "NetworkInterfaceLimitExceeded"
    assert vpc.free_addresses() == 11  # the subnet has room: the account does not

    assert runtime.invoke(name, {}).error_type == "ResourceNotReadyException"
    assert _settled(operator, name) == ("Inactive", "EniLimitExceeded")
    sandbox.set_interface_quota(made + 1)
    runtime.invoke(name, {})  # Lambda connects it again
    assert _settled(operator, name) == ("Active", None)
    assert runtime.invoke(name, {}).status == "succeeded"


def _post(sandbox: Sandbox, path: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(f"{sandbox.endpoint_url}{path}", data=body, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - the sandbox's own endpoint
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_the_stage_s_controls_refuse_what_they_cannot_do_and_say_what_they_take(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo
) -> None:
    outside = _function(operator, undo, {})
    arn = operator.client("lambda").get_function_configuration(FunctionName=outside)["FunctionArn"]
    missing = arn.rsplit(":", 1)[0] + ":no-such-function"
    states, quota = FUNCTION_STATES_PATH, "/_sandbox/ec2/network-interface-quota"
    idle = b'{"idle": true}'
    assert _post(sandbox, f"{states}{arn}", b'{"idle": "yes"}')[0] == 400
    assert _post(sandbox, f"{states}{outside}", idle)[0] == 400  # a name, not an ARN
    assert _post(sandbox, f"{states}{missing}", idle) == (404, "no such function\n")
    assert _post(sandbox, f"{states}{arn}", idle) == (
        409,
        f"{outside} is in no VPC: Lambda has no network interface of it to reclaim\n",
    )
    assert _state(operator, outside) == ("Active", None)
    for bad in (b"-1", b"true", b"many"):
        status, said = _post(sandbox, quota, bad)
        assert (status, said.startswith("POST the number of network interfaces")) == (400, True), bad
    assert _post(sandbox, quota, b"null") == (200, "5000\n")


def test_the_vpc_injectors_refuse_what_has_no_subnet_and_leave_nothing_saved(operator: boto3.Session) -> None:
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    worker = names.ORDER_WORKER_FUNCTION
    cases = [
        (VPC_ATTACH, worker, {"into": names.ORDER_INTAKE_FUNCTION}, "order-intake is in no VPC"),
        (VPC_ATTACH, worker, {"into": "no-such-function"}, "no-such-function"),
        (VPC_ATTACH, names.FUNCTION_NAME, {"into": worker}, "data-processor is in a VPC already"),
        (SUBNET_FULL, worker, {}, "nothing to fill: order-worker is not attached to a VPC"),
    ]
    for fault, function, params, said in cases:
        with pytest.raises(ChaosError) as refused:
            chaos.inject(fault, function, **params)
        assert said in str(refused.value)
        assert chaos.ledger.load(function, fault.name) is None
    assert world_snapshot(operator) == before
