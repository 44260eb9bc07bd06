"""A function Lambda cannot connect to its VPC (issue 45), end to end: the operator's own boto3 calls (not the
project's injectors) put order-worker beside data-processor in the private subnet, where it processes
orders; weeks idle later (the stage's declaration) its network interface is gone, and meanwhile the
operator's interfaces took every free address. The orders it is sent are refused before the code runs;
diagnosed by the `rules` model over MCP and held to the exact fault set, trigger, resources and gap. What
the gap advises (free an address) makes the queue drain again.

Its sandbox runs 60 times faster than AWS: the minute Lambda takes to make an interface is one second.
"""

from __future__ import annotations

import functools
import time
from datetime import datetime
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.sqs_poller import OK
from tests.fault_scenarios import OPERATOR_ARN, RestoreSteps, Undo
from tests.timeline_cases import diagnosed, own_world, restored_exactly
from tests.timeline_scenarios import IAM_QUIET_SECONDS, Situation, Stage, Staged
from tests.worker_orders import WorkerOrders

sandbox, mcp_server_url, before = own_world("vpc-capacity", time_scale=60.0)

ORDER = "vpc-0001"
GROUP_NAME = "order-worker-beside-dp"
SETTLE_SECONDS = 30.0  # far past the second Lambda takes here to try the interface again
TAKEN = "taken-beside-order-worker"


def _free(ec2: Any, subnet: str) -> int:
    count: int = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["AvailableIpAddressCount"]
    return count


def _taken(ec2: Any) -> list[str]:
    where = [{"Name": "description", "Values": [TAKEN]}]
    return [
        i["NetworkInterfaceId"] for i in ec2.describe_network_interfaces(Filters=where)["NetworkInterfaces"]
    ]


def _settled(lambda_: Any) -> dict[str, Any]:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        config: dict[str, Any] = lambda_.get_function_configuration(FunctionName=names.ORDER_WORKER_FUNCTION)
        if config["State"] != "Pending" or time.monotonic() > deadline:
            return config
        time.sleep(0.2)


def _interfaces(ec2: Any) -> int:
    return sum(
        len(p["NetworkInterfaces"]) for p in ec2.get_paginator("describe_network_interfaces").paginate()
    )


def _stranded(out_of: str) -> Situation:
    """order-worker attached beside data-processor, serving; idle for weeks; then the operator's interfaces
    take every free address of the subnet (``addresses``), or the last one the account's quota allows
    (``quota``: the stage sets it to the interfaces in use plus one)."""

    def situation(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
        stage = Stage(sandbox, runtime, names.ORDER_WORKER_FUNCTION, None)
        ec2, lambda_ = stage.operator.client("ec2"), stage.operator.client("lambda")
        vpc = lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME)["VpcConfig"]
        subnet = vpc["SubnetIds"][0]
        vpc_id = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["VpcId"]
        orders = WorkerOrders(sandbox, runtime, stage, ORDER, undo)

        group = stage.call(
            "CreateSecurityGroup",
            lambda: ec2.create_security_group(GroupName=GROUP_NAME, Description="order-worker", VpcId=vpc_id),
        )["GroupId"]
        attached = {"SubnetIds": [subnet], "SecurityGroupIds": [group]}
        stage.call(
            "UpdateFunctionConfiguration20150331v2",
            lambda: lambda_.update_function_configuration(
                FunctionName=names.ORDER_WORKER_FUNCTION, VpcConfig=attached
            ),
        )
        time.sleep(IAM_QUIET_SECONDS)  # the attachment: weeks before the last success
        assert orders.phase("healthy", 2) == [OK]

        arn = lambda_.get_function_configuration(FunctionName=names.ORDER_WORKER_FUNCTION)["FunctionArn"]
        sandbox.declare_idle(arn)

        def take(secondary: int) -> None:
            stage.call(
                "CreateNetworkInterface",
                functools.partial(
                    ec2.create_network_interface,
                    SubnetId=subnet,
                    SecondaryPrivateIpAddressCount=secondary,
                    Description=TAKEN,
                ),
            )

        if out_of == "quota":
            undo(lambda: sandbox.set_interface_quota(None))
            sandbox.set_interface_quota(_interfaces(ec2) + 1)
            take(0)
        while out_of == "addresses" and (free := _free(ec2, subnet)):
            take(min(free, 50) - 1)
        refused = orders.phase("refused", 3)
        assert refused, "the poller took no batch"
        assert OK not in refused, refused
        config = _settled(lambda_)
        assert (config["State"], config.get("StateReasonCode")) == ("Inactive", CODES[out_of])

        def one_freed() -> str | None:
            """The gap's advice followed: one interface of the operator's deleted (none left once
            restored), then the queue drains."""
            for interface in _taken(ec2)[:1]:
                ec2.delete_network_interface(NetworkInterfaceId=interface)
            return orders.drains()

        return stage.finish(None, works=one_freed, subnet=subnet, group=group)

    situation.__name__ = f"out_of_{out_of}"
    return situation


CODES = {"addresses": "SubnetOutOfIPAddresses", "quota": "EniLimitExceeded"}


@pytest.mark.parametrize("out_of", list(CODES))
async def test_an_idle_function_without_an_interface_is_platform_refused_and_one_freed_drains_the_queue(
    out_of: str,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    operator = sandbox.session(names.OPERATOR)
    ec2, lambda_ = operator.client("ec2"), operator.client("lambda")

    def detach() -> None:
        detached: dict[str, list[str]] = {"SubnetIds": [], "SecurityGroupIds": []}
        lambda_.update_function_configuration(FunctionName=names.ORDER_WORKER_FUNCTION, VpcConfig=detached)
        for group in ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [GROUP_NAME]}])[
            "SecurityGroups"
        ]:
            ec2.delete_security_group(GroupId=group["GroupId"])

    steps(detach)
    steps(lambda: [ec2.delete_network_interface(NetworkInterfaceId=i) for i in _taken(ec2)])

    case = await diagnosed(_stranded(out_of), sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["platform_refused"], case.why
    # The last interface made is the trigger; those before it are on the timeline, the attachment (before
    # the last success) is not; no failure is (Lambda's refusals leave no log line).
    trigger, last = case.diagnosis.trigger, case.staged.changes[-1]
    assert trigger is not None, case.why
    assert (trigger.event_name, datetime.fromisoformat(trigger.time)) == (last.event_name, last.time), (
        case.why
    )
    assert f"{OPERATOR_ARN} called CreateNetworkInterface" in case.diagnosis.root_cause, case.why
    timeline = [(e.kind, datetime.fromisoformat(e.time)) for e in case.diagnosis.timeline]
    assert timeline == [("change", c.time) for c in case.staged.changes[2:]], case.why
    subnet = case.staged.detail["subnet"]
    assert subnet in case.diagnosis.affected_resources, case.why
    fix = {
        "addresses": f"free addresses in {subnet} (delete the network interfaces that hold addresses no "
        "longer needed) or add a subnet that has free addresses to the function's VpcConfig",
        "quota": "raise the account's network interface quota or delete unused interfaces",
    }[out_of]
    case.assert_no_command(
        f"No single command gives {names.ORDER_WORKER_FUNCTION} its network interfaces back: {fix}; Lambda "
        "connects it at its next invocation."
    )
    assert case.failing() is None  # the gap's advice, followed: one interface deleted, the queue drains
    restored_exactly(case, steps, before)
    table = operator.client("dynamodb")  # the order of the check after the restore, which nothing undoes
    table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": ORDER}})
