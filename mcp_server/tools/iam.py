"""``get_iam_state``: the function's execution role, its inline and attached policies and its boundary."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

from mcp_server.contract import (
    AttachedPolicy,
    GetIAMStateArgs,
    IAMStateResponse,
    PermissionsBoundary,
    PolicyDocument,
)
from mcp_server.errors import aws_errors
from mcp_server.tools.lambda_config import function_configuration


def _document(value: dict[str, Any] | str) -> PolicyDocument:
    """A policy document as a dict: boto3 decodes them already; the raw API gives URL-encoded JSON."""
    if isinstance(value, str):
        decoded: PolicyDocument = json.loads(urllib.parse.unquote(value))
        return decoded
    return value


def _listed(iam_client: Any, operation: str, key: str, **kwargs: Any) -> Iterator[Any]:
    """Every item under ``key`` across the pages of a paginated IAM list operation."""
    for page in iam_client.get_paginator(operation).paginate(**kwargs):
        yield from page.get(key, [])


def _attached_policy(iam_client: Any, attachment: dict[str, str], *, region: str | None) -> AttachedPolicy:
    arn = attachment["PolicyArn"]
    with aws_errors(f"managed policy {arn}", region):
        version_id = iam_client.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        version = iam_client.get_policy_version(PolicyArn=arn, VersionId=version_id)["PolicyVersion"]
    return AttachedPolicy(
        policy_name=attachment["PolicyName"],
        policy_arn=arn,
        default_version_id=version_id,
        document=_document(version["Document"]),
    )


def iam_state(
    lambda_client: Any, iam_client: Any, args: GetIAMStateArgs, *, region: str | None
) -> IAMStateResponse:
    """The execution role of the function with every policy document decoded."""
    config = function_configuration(lambda_client, args.lambda_name, region=region)
    role_name = config["Role"].rsplit("/", 1)[-1]  # arn:aws:iam::<account>:role/<optional path/><name>
    with aws_errors(f"role {role_name}", region):
        role = iam_client.get_role(RoleName=role_name)["Role"]
        policy_names = list(_listed(iam_client, "list_role_policies", "PolicyNames", RoleName=role_name))
        attachments = list(
            _listed(iam_client, "list_attached_role_policies", "AttachedPolicies", RoleName=role_name)
        )
    inline: dict[str, PolicyDocument] = {}
    for name in policy_names:
        with aws_errors(f"inline policy {name} of role {role_name}", region):
            document = iam_client.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        inline[name] = _document(document)
    boundary = role.get("PermissionsBoundary")
    return IAMStateResponse(
        role_name=role_name,
        role_arn=role.get("Arn"),
        inline_policies=inline,
        attached_policies=[_attached_policy(iam_client, a, region=region) for a in attachments],
        permissions_boundary=PermissionsBoundary(
            type=boundary.get("PermissionsBoundaryType"), arn=boundary["PermissionsBoundaryArn"]
        )
        if boundary
        else None,
    )
