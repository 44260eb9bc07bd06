"""Inject the sandbox's faults as the operator, each registering its exact restore with ``undo``."""

from __future__ import annotations

import json
from collections.abc import Callable

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from tests.conftest import Undo

HTTPS_EGRESS = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]


def delete_inline_policy(sandbox: Sandbox, undo: Undo) -> None:
    iam = sandbox.session(names.OPERATOR).client("iam")
    saved = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)[
        "PolicyDocument"
    ]
    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    undo(
        lambda: iam.put_role_policy(
            RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME, PolicyDocument=json.dumps(saved)
        )
    )


def detach_logs_policy(sandbox: Sandbox, undo: Undo) -> None:
    iam, arn = sandbox.session(names.OPERATOR).client("iam"), sandbox.world.logs_policy_arn
    iam.detach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=arn)
    undo(lambda: iam.attach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=arn))


def reserve_concurrency(sandbox: Sandbox, undo: Undo, value: int) -> None:
    client = sandbox.session(names.OPERATOR).client("lambda")
    client.put_function_concurrency(FunctionName=names.FUNCTION_NAME, ReservedConcurrentExecutions=value)
    undo(lambda: client.delete_function_concurrency(FunctionName=names.FUNCTION_NAME))


def remove_https_egress(sandbox: Sandbox, undo: Undo) -> None:
    ec2, group_id = sandbox.session(names.OPERATOR).client("ec2"), sandbox.world.security_group_id
    ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=HTTPS_EGRESS)
    undo(lambda: ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=HTTPS_EGRESS))


FAULTS: dict[str, Callable[[Sandbox, Undo], None]] = {
    "healthy": lambda sandbox, undo: None,
    "s3_policy_deleted": delete_inline_policy,
    "logs_policy_detached": detach_logs_policy,
    "concurrency_0": lambda sandbox, undo: reserve_concurrency(sandbox, undo, 0),
    "egress_removed": remove_https_egress,
}
