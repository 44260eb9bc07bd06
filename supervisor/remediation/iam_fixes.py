"""The allowlisted fixes on a function's execution role: an inline policy put back or taken away, a policy
of the account attached again or detached. Every policy a fix writes is checked: no wildcard action, no
IAM or STS wildcard, no ``iam:PassRole``, no ``NotAction``/``NotResource``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from supervisor.remediation.operation import Operation, Params, Reader, ReadError, State
from supervisor.remediation.plan import ApiCall


def _role(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["RoleName"]),)


_NEVER_ALLOWED: Final = ("iam:passrole",)
_WIDE_SERVICES: Final = ("iam", "sts")


def _listed(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def statement_refusal(document: object, *, resource_wildcard: bool) -> str | None:
    """Why a policy document is too wide for a fix: an allowed wildcard action, any IAM or STS wildcard,
    ``iam:PassRole``, ``NotAction``/``NotResource``, and (unless ``resource_wildcard``) the resource ``*``."""
    if not isinstance(document, Mapping):
        return "the policy document is not a JSON object"
    statements = document.get("Statement")
    for statement in statements if isinstance(statements, list) else [statements]:
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        if "NotAction" in statement or "NotResource" in statement:
            return "an Allow with NotAction or NotResource grants everything it does not name"
        for action in _listed(statement.get("Action")):
            lowered = action.lower()
            service = lowered.split(":", 1)[0]
            if lowered == "*" or lowered.endswith(":*") or lowered in _NEVER_ALLOWED:
                return f"the document allows {action}"
            if service in _WIDE_SERVICES and "*" in lowered:
                return f"the document allows {action}"
        if not resource_wildcard and "*" in _listed(statement.get("Resource")):
            return "the document allows its actions on every resource (*)"
    return None


def _read_inline(client: Reader, params: Params) -> State:
    iam = client("iam")
    try:
        policy = iam.get_role_policy(RoleName=params["RoleName"], PolicyName=params["PolicyName"])
    except iam.exceptions.NoSuchEntityException:
        return {"PolicyDocument": None}
    document = policy["PolicyDocument"]
    return {"PolicyDocument": json.loads(document) if isinstance(document, str) else document}


def _inline_back(params: Params, state: State) -> ApiCall:
    names = {"RoleName": params["RoleName"], "PolicyName": params["PolicyName"]}
    if state["PolicyDocument"] is None:
        return ApiCall(service="iam", operation="DeleteRolePolicy", params=names)
    document = json.dumps(state["PolicyDocument"], separators=(",", ":"))
    return ApiCall(service="iam", operation="PutRolePolicy", params={**names, "PolicyDocument": document})


def _wide_inline(params: Params, _state: State) -> str | None:
    try:
        document = json.loads(str(params["PolicyDocument"]))
    except ValueError:
        return "the policy document is not JSON"
    return statement_refusal(document, resource_wildcard=False)


def _document_in_place(params: Params, state: State) -> bool:
    try:
        return bool(state["PolicyDocument"] == json.loads(str(params["PolicyDocument"])))
    except ValueError:
        return False


def _no_inline(params: Params, state: State) -> str | None:
    if state["PolicyDocument"] is None:
        return f"{params['RoleName']} has no inline policy {params['PolicyName']}: nothing to delete"
    return None


def _read_attachment(client: Reader, params: Params) -> State:
    iam = client("iam")
    arn = str(params["PolicyArn"])
    attached = [
        item["PolicyArn"]
        for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=params["RoleName"])
        for item in page["AttachedPolicies"]
    ]
    try:
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    except iam.exceptions.NoSuchEntityException as error:
        raise ReadError(f"policy {arn} does not exist") from error
    return {
        "Attached": arn in attached,
        "PolicyDocument": json.loads(document) if isinstance(document, str) else document,
    }


_ATTACHMENT_READS: Final = ("iam:ListAttachedRolePolicies", "iam:GetPolicy", "iam:GetPolicyVersion")


def _attachment_back(params: Params, state: State) -> ApiCall:
    names = {"RoleName": params["RoleName"], "PolicyArn": params["PolicyArn"]}
    return ApiCall(
        service="iam", operation="AttachRolePolicy" if state["Attached"] else "DetachRolePolicy", params=names
    )


def _wide_attachment(params: Params, state: State) -> str | None:
    arn = str(params["PolicyArn"])
    if arn.startswith("arn:aws:iam::aws:"):
        return f"{arn} is an AWS managed policy: a fix attaches only the account's own policies"
    if state["Attached"]:
        return f"{arn} is already attached: nothing to do"
    return statement_refusal(state["PolicyDocument"], resource_wildcard=True)


def _not_attached(params: Params, state: State) -> str | None:
    return None if state["Attached"] else f"{params['PolicyArn']} is not attached: nothing to detach"


FIXES: Final[tuple[Operation, ...]] = (
    Operation(
        "iam",
        "PutRolePolicy",
        "high",
        "put back an inline policy of the function's role, or add the one missing statement",
        frozenset({"RoleName", "PolicyName", "PolicyDocument"}),
        ("iam:GetRolePolicy",),
        _read_inline,
        _inline_back,
        _role,
        _wide_inline,
        done=_document_in_place,
    ),
    Operation(
        "iam",
        "DeleteRolePolicy",
        "high",
        "take away an inline policy that denies",
        frozenset({"RoleName", "PolicyName"}),
        ("iam:GetRolePolicy",),
        _read_inline,
        _inline_back,
        _role,
        _no_inline,
        done=lambda _params, state: state["PolicyDocument"] is None,
    ),
    Operation(
        "iam",
        "AttachRolePolicy",
        "high",
        "attach again a policy of the account that the role had",
        frozenset({"RoleName", "PolicyArn"}),
        _ATTACHMENT_READS,
        _read_attachment,
        _attachment_back,
        _role,
        _wide_attachment,
        done=lambda _params, state: bool(state["Attached"]),
    ),
    Operation(
        "iam",
        "DetachRolePolicy",
        "high",
        "detach a policy that denies",
        frozenset({"RoleName", "PolicyArn"}),
        _ATTACHMENT_READS,
        _read_attachment,
        _attachment_back,
        _role,
        _not_attached,
        done=lambda _params, state: not state["Attached"],
    ),
)
