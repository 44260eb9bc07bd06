"""``get_iam_state``: arguments and answer."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration

PolicyDocument = dict[str, Any]


class GetIAMStateArgs(TargetArguments):
    """Arguments of ``get_iam_state``: the execution role of the function and its policies."""


class AttachedPolicy(ContractModel):
    """A managed policy attached to the role, with its default version's document when readable."""

    policy_name: str
    policy_arn: str
    default_version_id: str | None = None
    document: PolicyDocument | None = None


class PermissionsBoundary(ContractModel):
    """The role's permissions boundary, with its default version's document when readable."""

    type: str | None
    arn: str
    default_version_id: str | None = None
    document: PolicyDocument | None = None


class IAMStateResponse(ContractModel):
    """Answer of ``get_iam_state``."""

    role_name: str
    role_arn: str | None = None
    inline_policies: dict[str, PolicyDocument] = Field(description="Policy name -> decoded policy document.")
    attached_policies: list[AttachedPolicy]
    permissions_boundary: PermissionsBoundary | None = None
    error: str | None = omitted_when_null()
    gaps: Gaps = Field(default_factory=list)


GET_IAM_STATE = ToolDeclaration(
    name="get_iam_state",
    title="Execution role and policies",
    description=(
        "The function's execution role: inline and attached policy documents and any permissions boundary. "
        "Judge a denied call by action AND resource; a Deny or the boundary wins."
    ),
    arguments=GetIAMStateArgs,
    response=IAMStateResponse,
    implementation="mcp_server.tools.iam:iam_state",
    reads=(
        ("lambda", "GetFunctionConfiguration"),
        ("iam", "GetRole"),
        ("iam", "ListRolePolicies"),
        ("iam", "GetRolePolicy"),
        ("iam", "ListAttachedRolePolicies"),
        ("iam", "GetPolicy"),
        ("iam", "GetPolicyVersion"),
    ),
    order=20,
)
