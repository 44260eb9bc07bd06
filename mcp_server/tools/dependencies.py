"""The resources a function calls, as its role's policies name them: the tables, buckets, queues, topics
and keys an Allow statement grants by name. ``get_recent_changes`` searches their changes, so that a
``DeleteTable``, a bucket policy that denies or a key disabled can be found as the trigger of the
dependency failure it started.

A resource named with a wildcard (``table/orders-*``, ``*``) names no one resource and is not searched; nor
are the log groups every function writes to. The role's inline and attached policies are read (a policy
that cannot be read is a gap, and what it grants is not searched); at most :data:`MAX_RESOURCES` resources,
the first in order of name, beyond which a gap says how many were left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcp_server.contract import PolicyDocument
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.iam import inline_read, policy_read

MAX_RESOURCES = 10
# The services whose resources a function calls by name, and what each resource is called.
_KINDS = {"dynamodb": "table", "s3": "bucket", "sqs": "queue", "sns": "topic", "kms": "key"}


def _allowed_resources(documents: Iterable[PolicyDocument | None]) -> Iterator[str]:
    for document in documents:
        statements = document.get("Statement") if isinstance(document, dict) else None
        for statement in statements if isinstance(statements, list) else [statements]:
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            resources = statement.get("Resource")
            listed = [resources] if isinstance(resources, str) else resources or []
            yield from (resource for resource in listed if isinstance(resource, str))


def named_resource(arn: str) -> tuple[str, str] | None:
    """``(kind, ARN of the one resource)`` that ``arn`` grants on, or None for a pattern or another service:
    ``arn:aws:dynamodb:r:a:table/orders/index/*`` → ``("table", "arn:aws:dynamodb:r:a:table/orders")``,
    ``arn:aws:s3:::input/*`` → ``("bucket", "arn:aws:s3:::input")``."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn" or parts[2] not in _KINDS:
        return None
    service, resource = parts[2], parts[5]
    if service == "dynamodb":
        kind, _, rest = resource.partition("/")
        resource = f"{kind}/{rest.split('/', 1)[0]}" if kind == "table" else ""
    elif service == "s3":
        resource = resource.split("/", 1)[0]
    elif service == "kms":
        resource = resource if resource.startswith("key/") else ""
    if not resource.strip("/") or any(c in resource for c in "*?") or resource.endswith("/"):
        return None
    return _KINDS[service], ":".join([*parts[:5], resource])


def _documents(
    ctx: ToolContext, role_name: str, inline: list[str], attached: list[dict[str, Any]]
) -> list[Any]:
    iam = ctx.clients.iam
    reads: list[Read] = [inline_read(iam, role_name, name) for name in inline]
    reads += [policy_read(iam, a["PolicyArn"], "policy") for a in attached]
    found = ctx.reads.many(reads)
    return [*found[: len(inline)], *(version[1] for version in found[len(inline) :] if version)]


def called_resources(
    ctx: ToolContext, role_name: str, inline: list[str] | None, attached: list[dict[str, Any]] | None
) -> list[tuple[str, str]]:
    """``(kind, ARN)`` of each resource the role's policies grant by name, sorted, at most MAX_RESOURCES."""
    named = {
        found
        for arn in _allowed_resources(_documents(ctx, role_name, inline or [], attached or []))
        if (found := named_resource(arn))
    }
    ordered = sorted(named, key=lambda pair: pair[1])
    if len(ordered) > MAX_RESOURCES:
        left = ", ".join(arn for _, arn in ordered[MAX_RESOURCES:])
        ctx.reads.gap(
            f"the policies of role {role_name}",
            f"changes of {len(ordered) - MAX_RESOURCES} more resources they name were not searched: {left}",
        )
    return ordered[:MAX_RESOURCES]
