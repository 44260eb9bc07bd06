"""``get_iam_state``: the function's execution role, its inline and attached policies and its permissions
boundary, every document decoded. Independent reads run concurrently; what cannot be read is a gap."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from mcp_server.contract import (
    AttachedPolicy,
    GetIAMStateArgs,
    IAMStateResponse,
    PermissionsBoundary,
    PolicyDocument,
)
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.lambda_config import function_configuration


def _document(value: dict[str, Any] | str) -> PolicyDocument:
    """A policy document as a dict: boto3 decodes them already; the raw API gives URL-encoded JSON."""
    if isinstance(value, str):
        decoded: PolicyDocument = json.loads(urllib.parse.unquote(value))
        return decoded
    return value


def listed(client: Any, operation: str, key: str, **kwargs: Any) -> list[Any]:
    """Every item under ``key`` across the pages of a paginated list operation."""
    return [item for page in client.get_paginator(operation).paginate(**kwargs) for item in page.get(key, [])]


def _default_version(iam_client: Any, arn: str) -> tuple[str, PolicyDocument]:
    version_id = iam_client.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
    version = iam_client.get_policy_version(PolicyArn=arn, VersionId=version_id)["PolicyVersion"]
    return version_id, _document(version["Document"])


def policy_read(iam_client: Any, arn: str, what: str) -> Read:
    return Read(
        "iam:GetPolicy/GetPolicyVersion",
        f"{what} {arn}",
        lambda: _default_version(iam_client, arn),
        f"what the {what} allows or denies is unknown",
    )


def inline_read(iam_client: Any, role_name: str, name: str) -> Read:
    return Read(
        "iam:GetRolePolicy",
        f"inline policy {name} of role {role_name}",
        lambda: iam_client.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"],
        f"what inline policy {name} allows or denies is unknown",
    )


def _role_reads(iam_client: Any, role_name: str) -> list[Read]:
    """The role itself (for its permissions boundary), its inline policy names and its attached policies."""
    return [
        Read(
            "iam:GetRole",
            f"role {role_name}",
            lambda: iam_client.get_role(RoleName=role_name)["Role"],
            "the role's permissions boundary is unknown (the role may have been deleted)",
        ),
        Read(
            "iam:ListRolePolicies",
            f"role {role_name}",
            lambda: listed(iam_client, "list_role_policies", "PolicyNames", RoleName=role_name),
            "the role's inline policies are unknown",
        ),
        Read(
            "iam:ListAttachedRolePolicies",
            f"role {role_name}",
            lambda: listed(iam_client, "list_attached_role_policies", "AttachedPolicies", RoleName=role_name),
            "the managed policies attached to the role are unknown",
        ),
    ]


def _attached_policy(
    attachment: dict[str, Any], version: tuple[str, PolicyDocument] | None
) -> AttachedPolicy:
    return AttachedPolicy(
        policy_name=attachment["PolicyName"],
        policy_arn=attachment["PolicyArn"],
        default_version_id=version[0] if version else None,
        document=version[1] if version else None,
    )


def _permissions_boundary(
    boundary: dict[str, Any], version: tuple[str, PolicyDocument] | None
) -> PermissionsBoundary:
    return PermissionsBoundary(
        type=boundary.get("PermissionsBoundaryType"),
        arn=boundary["PermissionsBoundaryArn"],
        default_version_id=version[0] if version else None,
        document=version[1] if version else None,
    )


def iam_state(ctx: ToolContext, args: GetIAMStateArgs) -> IAMStateResponse:
    config = function_configuration(ctx)
    iam = ctx.clients.iam
    role_name = config["Role"].rsplit("/", 1)[-1]  # arn:aws:iam::<account>:role/<optional path/><name>
    role, policy_names, attachments = ctx.reads.many(_role_reads(iam, role_name))
    boundary = (role or {}).get("PermissionsBoundary")
    names = list(policy_names or [])
    attached = list(attachments or [])
    documents = ctx.reads.many(
        [
            *(inline_read(iam, role_name, name) for name in names),
            *(policy_read(iam, a["PolicyArn"], "managed policy") for a in attached),
            *(
                [policy_read(iam, boundary["PermissionsBoundaryArn"], "permissions boundary")]
                if boundary
                else []
            ),
        ]
    )
    inline_documents, attached_documents = documents[: len(names)], documents[len(names) :]
    boundary_version = attached_documents.pop() if boundary else None
    return IAMStateResponse(
        role_name=role_name,
        role_arn=(role or {}).get("Arn") or config["Role"],
        inline_policies={
            name: _document(document)
            for name, document in zip(names, inline_documents, strict=True)
            if document
        },
        attached_policies=[
            _attached_policy(a, version) for a, version in zip(attached, attached_documents, strict=True)
        ],
        permissions_boundary=_permissions_boundary(boundary, boundary_version) if boundary else None,
        gaps=ctx.reads.gaps,
    )
