"""A VPC function's network interfaces, and the state Lambda answers for it.

Lambda reaches a function's VPC through Hyperplane ENIs: one per combination of subnet and security
groups, shared by every function with that combination, made when a function is created or its VPC
settings change, each holding one address of its subnet
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html#configuration-vpc-enis). Here each is
an EC2 network interface of type ``lambda`` in the subnet, so ``DescribeSubnets`` counts its address.

- **Creation** that finds a subnet with no free address leaves the function ``Failed`` with
  ``StateReasonCode`` ``SubnetOutOfIPAddresses`` (functions-states.html: "you must delete and recreate the
  function"). A creation that succeeds is ``Active`` at once: the minute AWS takes to make the interfaces
  is not waited for.
- **An update** of the VPC settings that cannot get its interfaces is abandoned: ``LastUpdateStatus``
  ``Failed`` with that reason code, and the function keeps its previous configuration (functions-states.html,
  "Function states during updates").
- **Idle** for weeks, a function's interfaces are reclaimed and it is ``Inactive`` (``Idle``). The sandbox
  cannot wait weeks: the stage declares it idle with ``POST /_sandbox/lambda/function-states/<name>``
  ``{"idle": true}``.
- **Invoking an inactive function** fails (``ResourceNotReadyException``) and sets it ``Pending``
  (``Restoring``) while Lambda makes its interfaces again; if it cannot, the function is ``Inactive`` again,
  with the reason (functions-states.html). The sandbox's Lambda runtime reports such an attempt with
  ``{"invoked": true}``; the new interfaces are tried a minute later (the time AWS gives for making them,
  divided by the time scale), when the function is next read.
- EC2's ``CreateNetworkInterface`` and ``AssignPrivateIpAddresses`` refuse addresses a subnet does not have
  (``InsufficientFreeAddressesInSubnet``, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html);
  moto hands out addresses past the subnet's size.
- An account has at most 5,000 network interfaces per Region (amazon-vpc-limits.html), Lambda's among them:
  past it EC2 refuses a new one (``NetworkInterfaceLimitExceeded``) and Lambda cannot connect a function
  (``EniLimitExceeded``). AWS raises the quota on request; the stage sets it, lower too, with
  ``POST /_sandbox/ec2/network-interface-quota`` (a number, or ``null`` for 5,000).

The state reason sentences are the sandbox's own: AWS documents the codes, not the text.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from wsgiref.types import StartResponse, WSGIEnvironment

from moto.awslambda.exceptions import UnknownFunctionException
from moto.awslambda.models import LambdaBackend, LambdaFunction, lambda_backends
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models import ec2_backends
from moto.ec2.models.elastic_network_interfaces import NetworkInterfaceBackend
from werkzeug.wrappers import Request, Response

from chaos.sandbox.emulator_env import TIME_SCALE_ENV
from chaos.sandbox.extensions import server_app

CONTROL_PATH = "/_sandbox/lambda/function-states/"
PROVISIONING_SECONDS = 60.0  # "When you first connect a function to a VPC, Lambda provisions network
# interfaces, which takes about a minute" (functions-states.html)
QUOTA_PATH = "/_sandbox/ec2/network-interface-quota"
# "Network interfaces per Region: 5,000" (https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)
DEFAULT_INTERFACE_QUOTA = 5000
OUT_OF_ADDRESSES = "SubnetOutOfIPAddresses"
_IDLE_REASON = (
    "The function is inactive: it was idle long enough for Lambda to reclaim its network interfaces."
)
_RESTORING_REASON = "Lambda is making the function's network interfaces again."


Refusal = tuple[str, str]  # a state reason code, and its reason


def _out_of_addresses(subnet: str) -> Refusal:
    reason = f"Lambda could not create a network interface in subnet {subnet}: it has no free IP addresses."
    return OUT_OF_ADDRESSES, reason


def _over_quota(quota: int) -> Refusal:
    reason = f"Lambda could not create a network interface: the account's limit of {quota} is reached."
    return "EniLimitExceeded", reason


class NetworkInterfaceLimitExceeded(EC2ClientError):
    def __init__(self, quota: int) -> None:
        super().__init__(
            "NetworkInterfaceLimitExceeded",
            f"You have reached the limit of {quota} network interfaces for this account in this Region.",
        )


class InsufficientFreeAddresses(EC2ClientError):
    def __init__(self) -> None:
        super().__init__(
            "InsufficientFreeAddressesInSubnet",
            "The specified subnet does not have enough free addresses to satisfy the request.",
        )


@dataclass
class _Condition:
    """What Lambda answers for a function beyond moto's ``Active``."""

    state: str = "Active"
    reason: str | None = None
    code: str | None = None
    update: tuple[str, str] | None = None  # a failed update: its reason code and reason
    restore_at: float | None = None  # when a Pending function's interfaces are tried again
    interfaces: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)


_LOCK = threading.RLock()
_quota = [DEFAULT_INTERFACE_QUOTA]  # network interfaces per account and Region (the stage may lower it)
_CONDITIONS: dict[tuple[str, str, str], _Condition] = {}
_INTERFACES: dict[tuple[str, str, str, tuple[str, ...]], str] = {}  # account, region, subnet, groups -> ENI


def _key(function: LambdaFunction) -> tuple[str, str, str]:
    return function.account_id, function.region, function.function_name


def _combinations(vpc: dict[str, Any] | None) -> set[tuple[str, tuple[str, ...]]]:
    vpc = vpc or {}
    groups = tuple(sorted(vpc.get("SecurityGroupIds") or []))
    return {(subnet, groups) for subnet in vpc.get("SubnetIds") or []}


def _in_use(account: str, region: str, combination: tuple[str, tuple[str, ...]]) -> bool:
    return any(
        combination in c.interfaces for (a, r, _), c in _CONDITIONS.items() if (a, r) == (account, region)
    )


def _connect(account: str, region: str, wanted: set[tuple[str, tuple[str, ...]]]) -> Refusal | None:
    """Make the interfaces ``wanted`` lacks, or none and why not: the account's quota, or the first subnet
    without a free address."""
    ec2 = ec2_backends[account][region]
    missing = [c for c in sorted(wanted) if (account, region, *c) not in _INTERFACES]
    if missing and len(ec2.enis) + len(missing) > _quota[0]:
        return _over_quota(_quota[0])
    for subnet, _ in missing:
        if ec2.get_subnet(subnet).available_ip_address_count < 1:
            return _out_of_addresses(subnet)
    for subnet, groups in missing:
        eni = ec2.create_network_interface(
            ec2.get_subnet(subnet), "", group_ids=list(groups), description=f"AWS Lambda VPC ENI-{subnet}"
        )
        eni.interface_type, eni.requester_managed = "lambda", True
        _INTERFACES[(account, region, subnet, groups)] = eni.id
    return None


def _drop(account: str, region: str, combinations: set[tuple[str, tuple[str, ...]]]) -> None:
    """Delete the interfaces of ``combinations`` that no function uses any more."""
    for combination in combinations:
        if not _in_use(account, region, combination):
            eni = _INTERFACES.pop((account, region, *combination), None)
            if eni is not None and eni in ec2_backends[account][region].enis:
                ec2_backends[account][region].delete_network_interface(eni)


def _hold(account: str, region: str, condition: _Condition, wanted: set[tuple[str, tuple[str, ...]]]) -> None:
    """The function now uses the interfaces ``wanted`` (made): it is Active; those it let go are dropped."""
    held, condition.interfaces = condition.interfaces, wanted
    condition.state, condition.reason, condition.code, condition.restore_at = "Active", None, None, None
    _drop(account, region, held - wanted)


def _restore(account: str, region: str, function: LambdaFunction, condition: _Condition) -> None:
    wanted = _combinations(function._vpc_config)
    refused = _connect(account, region, wanted)
    condition.restore_at = None
    if refused is None:
        _hold(account, region, condition, wanted)
    else:
        condition.state, (condition.code, condition.reason) = "Inactive", refused


def _current(function: LambdaFunction) -> _Condition:
    """The function's condition, a Pending one's interfaces tried once their minute is over."""
    account, region, _ = key = _key(function)
    condition = _CONDITIONS.setdefault(key, _Condition())
    if (
        condition.state == "Pending"
        and condition.restore_at is not None
        and time.monotonic() >= condition.restore_at
    ):
        _restore(account, region, function, condition)
    return condition


def _latest(account: str, region: str, name: str) -> LambdaFunction | None:
    try:
        function: LambdaFunction = lambda_backends[account][region].get_function(name)
    except (UnknownFunctionException, KeyError):  # KeyError: a Region moto does not know
        return None
    return function


def _patch_lambda() -> None:
    original_create = LambdaBackend.create_function
    original_update = LambdaFunction.update_configuration
    original_delete = LambdaBackend.delete_function
    original_configuration = LambdaFunction.get_configuration

    def create_function(self: LambdaBackend, spec: dict[str, Any]) -> LambdaFunction:
        function = original_create(self, spec)
        with _LOCK:
            account, region, _ = key = _key(function)
            condition = _CONDITIONS[key] = _Condition()
            wanted = _combinations(spec.get("VpcConfig"))
            refused = _connect(account, region, wanted)
            if refused is None:
                _hold(account, region, condition, wanted)
            else:
                condition.state, (condition.code, condition.reason) = "Failed", refused
        return function

    def update_configuration(self: LambdaFunction, updates: dict[str, Any]) -> dict[str, Any]:
        """A change of VPC settings connects the function (an inactive one too) or is abandoned."""
        if "VpcConfig" not in updates:
            return original_update(self, updates)
        with _LOCK:
            account, region, _ = _key(self)
            condition = _current(self)
            wanted = _combinations(updates["VpcConfig"])
            refused = _connect(account, region, wanted)
            if refused is not None:
                condition.update = refused
                return self.get_configuration()
            response = original_update(self, updates)
            condition.update = None
            _hold(account, region, condition, wanted)
            if not wanted:
                self._vpc_config = None  # detached: answered as a function never attached
            return response

    def delete_function(self: LambdaBackend, function_name: str, qualifier: str | None = None) -> None:
        function = _latest(self.account_id, self.region_name, function_name) if qualifier is None else None
        original_delete(self, function_name, qualifier)
        if function is not None:
            with _LOCK:
                condition = _CONDITIONS.pop(_key(function), None)
                if condition is not None:
                    _drop(function.account_id, function.region, condition.interfaces)

    def get_configuration(self: LambdaFunction, on_create: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = original_configuration(self, on_create)
        with _LOCK:
            condition = _current(self)
        config["State"] = condition.state
        for name, value in (("StateReason", condition.reason), ("StateReasonCode", condition.code)):
            if value is not None:
                config[name] = value
        if condition.update is not None and "LastUpdateStatus" in config:
            config["LastUpdateStatus"] = "Failed"
            config["LastUpdateStatusReasonCode"], config["LastUpdateStatusReason"] = condition.update
        return config

    setattr(LambdaBackend, "create_function", create_function)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
    setattr(LambdaBackend, "delete_function", delete_function)  # noqa: B010
    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010


def _patch_ec2() -> None:
    original_create = NetworkInterfaceBackend.create_network_interface
    original_assign = NetworkInterfaceBackend.assign_private_ip_addresses

    def create_network_interface(self: Any, subnet: Any, *args: Any, **kwargs: Any) -> Any:
        if len(self.enis) >= _quota[0]:
            raise NetworkInterfaceLimitExceeded(_quota[0])
        wanted = 1 + int(kwargs.get("secondary_ips_count") or 0)
        if isinstance(subnet, str):
            subnet = self.get_subnet(subnet)
        if subnet.available_ip_address_count < wanted:
            raise InsufficientFreeAddresses()
        return original_create(self, subnet, *args, **kwargs)

    def assign_private_ip_addresses(self: Any, eni_id: str, addresses: Any = None, count: Any = None) -> Any:
        wanted = len(addresses or []) + int(count or 0)
        if self.get_network_interface(eni_id).subnet.available_ip_address_count < wanted:
            raise InsufficientFreeAddresses()
        return original_assign(self, eni_id, addresses, count)

    setattr(NetworkInterfaceBackend, "create_network_interface", create_network_interface)  # noqa: B010
    setattr(NetworkInterfaceBackend, "assign_private_ip_addresses", assign_private_ip_addresses)  # noqa: B010


def _control(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    request = Request(environ)
    arn = request.path[len(CONTROL_PATH) :].split(":")  # arn:aws:lambda:<region>:<account>:function:<name>
    try:
        change = json.loads(request.get_data() or b"{}")
    except ValueError:
        change = None
    if request.method != "POST" or len(arn) != 7 or change not in ({"idle": True}, {"invoked": True}):
        message = 'POST {"idle": true} (it was idle for weeks) or {"invoked": true} to .../<function ARN>\n'
        return Response(message, status=400)(environ, start_response)
    region, account, name = arn[3], arn[4], arn[6]
    function = _latest(account, region, name)
    if function is None:
        return Response("no such function\n", status=404)(environ, start_response)
    with _LOCK:
        condition = _current(function)
        if change == {"idle": True} and not _combinations(function._vpc_config):
            message = f"{name} is in no VPC: Lambda has no network interface of it to reclaim\n"
            return Response(message, status=409)(environ, start_response)
        if change == {"idle": True} and condition.state == "Active" and condition.interfaces:
            held, condition.interfaces = condition.interfaces, set()
            _drop(account, region, held)
            condition.state, condition.reason, condition.code = "Inactive", _IDLE_REASON, "Idle"
        elif change == {"invoked": True} and condition.state == "Inactive":
            condition.state, condition.reason, condition.code = "Pending", _RESTORING_REASON, "Restoring"
            scale = float(os.environ.get(TIME_SCALE_ENV, "1"))
            condition.restore_at = time.monotonic() + PROVISIONING_SECONDS / scale
        body = json.dumps({"State": condition.state, "StateReasonCode": condition.code})
    return Response(body, status=200, content_type="application/json")(environ, start_response)


def _set_quota(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    request = Request(environ)
    try:
        quota = json.loads(request.get_data() or b"null")
    except ValueError:
        quota = False
    if request.method != "POST" or not (quota is None or (type(quota) is int and quota >= 0)):
        message = "POST the number of network interfaces an account may have per Region, or null (5000)\n"
        return Response(message, status=400)(environ, start_response)
    with _LOCK:
        _quota[0] = DEFAULT_INTERFACE_QUOTA if quota is None else quota
    return Response(f"{_quota[0]}\n", status=200)(environ, start_response)


def install() -> None:
    _patch_lambda()
    _patch_ec2()
    server_app.mount(CONTROL_PATH, _control)
    server_app.mount(QUOTA_PATH, _set_quota)
