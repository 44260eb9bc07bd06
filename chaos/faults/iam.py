"""IAM faults on the function's execution role.

- ``iam-s3``: the S3 actions are taken out of the role's inline policies (a policy left with no
  statement is deleted); restore puts every changed inline policy back as it was.
- ``iam-cloudwatch``: the managed policies that grant CloudWatch Logs writes are detached; restore
  attaches them again.
"""

from __future__ import annotations

import json
from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused
from supervisor.diagnosis.iam_policy import action_matches, evaluate, listed, statements

LOG_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")


def _is_s3(action: str) -> bool:
    """Whether a statement's Action entry (itself a pattern, e.g. 's3:Get*') names s3: actions."""
    return action_matches("s3:*", action)


def _grants_s3(document: dict[str, Any]) -> bool:
    return any(_is_s3(a) for ref in statements(document, "") for a in listed(ref.action))


def _without_s3(document: dict[str, Any]) -> dict[str, Any] | None:
    """The document with every s3:* action removed; None when no statement is left."""
    kept: list[dict[str, Any]] = []
    for ref in statements(document, ""):
        actions = [a for a in listed(ref.action) if not _is_s3(a)]
        if actions:
            kept.append({**ref.statement, "Action": actions if len(actions) > 1 else actions[0]})
        elif "Action" not in ref.statement:  # NotAction statements are left alone
            kept.append(dict(ref.statement))
    return document | {"Statement": kept} if kept else None


def _capture_s3(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    names = chaos.read("iam", "list_role_policies", RoleName=role)["PolicyNames"]
    policies = {}
    for name in names:
        document = chaos.read("iam", "get_role_policy", RoleName=role, PolicyName=name)["PolicyDocument"]
        if _grants_s3(document):
            policies[name] = json.dumps(document)
    if not policies:
        raise ChaosRefused(f"nothing to revoke: no inline policy of role {role} grants an s3: action")
    return {"role": role, "policies": policies}


def _apply_s3(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for name, text in prior["policies"].items():
        reduced = _without_s3(json.loads(text))
        if reduced is None:
            chaos.call(
                "iam",
                "delete_role_policy",
                RoleName=prior["role"],
                PolicyName=name,
                tolerate=("NoSuchEntity",),
            )
        else:
            chaos.call(
                "iam",
                "put_role_policy",
                RoleName=prior["role"],
                PolicyName=name,
                PolicyDocument=json.dumps(reduced),
            )


def _revert_s3(chaos: Chaos, prior: dict[str, Any]) -> None:
    for name, text in prior["policies"].items():
        chaos.call("iam", "put_role_policy", RoleName=prior["role"], PolicyName=name, PolicyDocument=text)


def _grants_log_writes(document: dict[str, Any]) -> bool:
    """Whether the document allows a log write, on some log stream (the resource is left unknown, so a
    statement scoped to certain log groups, or under a Condition, counts: it may grant it)."""
    return any(
        evaluate([("document", document)], need, None).decision in ("allowed", "conditional")
        for need in LOG_WRITE_ACTIONS
    )


def _capture_cloudwatch(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    attached = chaos.read("iam", "list_attached_role_policies", RoleName=role)["AttachedPolicies"]
    arns = []
    for policy in attached:
        version = chaos.read("iam", "get_policy", PolicyArn=policy["PolicyArn"])["Policy"]["DefaultVersionId"]
        document = chaos.read("iam", "get_policy_version", PolicyArn=policy["PolicyArn"], VersionId=version)
        if _grants_log_writes(document["PolicyVersion"]["Document"]):
            arns.append(policy["PolicyArn"])
    if not arns:
        raise ChaosRefused(
            f"nothing to detach: no managed policy attached to {role} grants CloudWatch Logs writes"
        )
    return {"role": role, "policy_arns": arns}


def _apply_cloudwatch(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for arn in prior["policy_arns"]:
        chaos.call(
            "iam", "detach_role_policy", RoleName=prior["role"], PolicyArn=arn, tolerate=("NoSuchEntity",)
        )


def _revert_cloudwatch(chaos: Chaos, prior: dict[str, Any]) -> None:
    for arn in prior["policy_arns"]:
        chaos.call("iam", "attach_role_policy", RoleName=prior["role"], PolicyArn=arn)


REVOKE_S3 = Fault(
    "iam-s3", "S3 actions removed from the role's inline policies", _capture_s3, _apply_s3, _revert_s3
)
REVOKE_CLOUDWATCH = Fault(
    "iam-cloudwatch",
    "CloudWatch Logs policy detached from the role",
    _capture_cloudwatch,
    _apply_cloudwatch,
    _revert_cloudwatch,
)
TARGETS = {"s3": (REVOKE_S3,), "cloudwatch": (REVOKE_CLOUDWATCH,), "both": (REVOKE_S3, REVOKE_CLOUDWATCH)}
