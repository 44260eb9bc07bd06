"""The resources a function calls: the tables, buckets, queues, topics and keys its role's Allow statements
grant by name, those its environment variables name, and those its error lines name by ARN.
``get_recent_changes`` searches their changes, so that a ``DeleteTable``, a bucket policy that denies or a
key disabled can be found as the trigger of the dependency failure it started.

An environment value names a resource when it is the resource's ARN (or a queue's URL), or when it is a
valid name of a kind of resource the role grants by a pattern that constrains the name and matches it
(``TABLE=orders-eu`` with ``table/orders-*``; never with a bare ``*``, which any value, a secret too, would
match). A pattern no value completes names no resource and is not searched; nor are the log groups every
function writes to. An error line names a resource by its ARN, as AWS's errors do ("arn:aws:kms:...:key/...
is disabled.", "... on resource: arn:aws:dynamodb:...:table/orders"): the newest
:data:`MAX_LOGGED_LINES` lines of the window that contain ``arn:aws`` are read, and the ARNs of those that
look like errors kept. The role's inline and attached policies are read (a policy that cannot be read is a
gap, and what it grants is not searched); at most :data:`MAX_RESOURCES` resources, the first in order of
name, beyond which a gap says how many were left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from botocore.exceptions import ClientError

from mcp_server.contract import PolicyDocument
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.iam import inline_read, policy_read
from mcp_server.tools.log_window import newest_suffix
from mcp_server.tools.logs import ERROR_LIKE

MAX_RESOURCES = 10
MAX_LOGGED_LINES = 1000
# The services whose resources a function calls by name, and what each resource is called.
_KINDS = {"dynamodb": "table", "s3": "bucket", "sqs": "queue", "sns": "topic", "kms": "key"}
# A plain value that can be each kind's name (the services' own naming rules); a key is named by its ARN.
_VALID_NAMES = {
    "table": re.compile(r"[A-Za-z0-9_.-]{3,255}"),
    "bucket": re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"),
    "queue": re.compile(r"[A-Za-z0-9_-]{1,80}(\.fifo)?"),
    "topic": re.compile(r"[A-Za-z0-9_-]{1,256}(\.fifo)?"),
}
# https://sqs.<region>.amazonaws.com/<account>/<name>, or the legacy https://<region>.queue.amazonaws.com/...
_QUEUE_URL = re.compile(
    r"https?://(?:sqs\.([a-z0-9-]+)|([a-z0-9-]+)\.queue)\.[^/]+/(\d{12})/([A-Za-z0-9_.-]+)"
)

# An ARN of a kind above as a log line writes it: it ends at a space, a quote (escaped in JSON too) or a
# bracket, and a sentence's full stop after it is not part of it.
_LOGGED_ARN = re.compile(
    r"arn:aws[a-z-]*:(?:dynamodb|s3|sqs|sns|kms):[^\s\\\"'`,;()<>\[\]{}]*[^\s\\\"'`,;()<>\[\]{}.]"
)


def _allowed_resources(documents: Iterable[PolicyDocument | None]) -> Iterator[str]:
    for document in documents:
        statements = document.get("Statement") if isinstance(document, dict) else None
        for statement in statements if isinstance(statements, list) else [statements]:
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            resources = statement.get("Resource")
            listed = [resources] if isinstance(resources, str) else resources or []
            yield from (resource for resource in listed if isinstance(resource, str))


def _reduced(arn: str) -> tuple[str, str] | None:
    """``(kind, ARN of the resource)`` that ``arn`` grants on, patterns kept: a table's index is its table,
    an object is its bucket; None for another service or a resource that is no table, bucket or key."""
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
    if not resource.strip("/") or resource.endswith("/"):
        return None
    return _KINDS[service], ":".join([*parts[:5], resource])


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?")


def named_resource(arn: str) -> tuple[str, str] | None:
    """``(kind, ARN of the one resource)`` that ``arn`` grants on, or None for a pattern or another service:
    ``arn:aws:dynamodb:r:a:table/orders/index/*`` → ``("table", "arn:aws:dynamodb:r:a:table/orders")``,
    ``arn:aws:s3:::input/*`` → ``("bucket", "arn:aws:s3:::input")``."""
    found = _reduced(arn)
    return None if found is None or _is_pattern(found[1]) else found


def _candidate(kind: str, pattern: str, value: str, region: str, account: str) -> str:
    """The ARN ``value`` would have as a ``kind`` named in ``pattern``'s Region and account (the function's
    where the pattern leaves them open)."""
    parts = pattern.split(":", 5)
    if kind == "bucket":
        return f"arn:{parts[1]}:s3:::{value}"
    in_region = parts[3] if parts[3] and not _is_pattern(parts[3]) else region
    in_account = parts[4] if parts[4] and not _is_pattern(parts[4]) else account
    name = f"table/{value}" if kind == "table" else value
    return ":".join([*parts[:3], in_region, in_account, name])


def _constrains(pattern: str) -> bool:
    """Whether the name in a reduced pattern has a character of its own (``orders-*``, not ``*``)."""
    name = pattern.split(":", 5)[5].removeprefix("table/")
    return bool(name.replace("*", "").replace("?", ""))


def environment_resources(
    values: Iterable[str], granted: Iterable[str], region: str, account: str
) -> set[tuple[str, str]]:
    """``(kind, ARN)`` of each resource an environment value names: by its ARN or queue URL, or by a name
    that completes one of the role's ``granted`` patterns."""
    patterns = {
        found for arn in granted if (found := _reduced(arn)) and _is_pattern(found[1]) and found[0] != "key"
    }
    named: set[tuple[str, str]] = set()
    for value in values:
        if value.startswith("arn:"):
            if found := named_resource(value):
                named.add(found)
        elif url := _QUEUE_URL.fullmatch(value):
            queue_region = url.group(1) or url.group(2)
            named.add(("queue", f"arn:aws:sqs:{queue_region}:{url.group(3)}:{url.group(4)}"))
        else:
            for kind, pattern in patterns:
                if not (_VALID_NAMES[kind].fullmatch(value) and _constrains(pattern)):
                    continue
                candidate = _candidate(kind, pattern, value, region, account)
                if fnmatchcase(candidate, pattern.replace("[", "[[]")):
                    named.add((kind, candidate))
    return named


def logged_lines_read(ctx: ToolContext, group: str, start_ms: int, end_ms: int) -> Read:
    """The newest lines of the function's log group in the window that contain an ARN (none when the group
    does not exist)."""
    request = {"logGroupName": group, "startTime": start_ms, "endTime": end_ms, "filterPattern": '"arn:aws"'}

    def lines() -> list[dict[str, Any]]:
        try:
            return newest_suffix(ctx.clients.logs, request, MAX_LOGGED_LINES).events
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return []
            raise

    return Read(
        "logs:FilterLogEvents",
        f"lines naming an ARN in log group {group}",
        lines,
        "the resources the function's error lines name were not searched",
    )


def logged_resources(lines: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """``(kind, ARN)`` of each resource an error line names by ARN."""
    found: set[tuple[str, str]] = set()
    for line in lines:
        message = str(line.get("message") or "")
        if ERROR_LIKE.search(message):
            found |= {named for arn in _LOGGED_ARN.findall(message) if (named := named_resource(arn))}
    return found


def _documents(
    ctx: ToolContext, role_name: str, inline: list[str], attached: list[dict[str, Any]]
) -> list[Any]:
    iam = ctx.clients.iam
    reads: list[Read] = [inline_read(iam, role_name, name) for name in inline]
    reads += [policy_read(iam, a["PolicyArn"], "policy") for a in attached]
    found = ctx.reads.many(reads)
    return [*found[: len(inline)], *(version[1] for version in found[len(inline) :] if version)]


def called_resources(
    ctx: ToolContext,
    config: Mapping[str, Any],
    inline: list[str] | None,
    attached: list[dict[str, Any]] | None,
    logged: set[tuple[str, str]],
) -> list[tuple[str, str, bool]]:
    """``(kind, ARN, named only by the errors)`` of each resource the function's role grants by name, its
    environment names or ``logged`` (its error lines name: :func:`logged_resources`), sorted, at most
    MAX_RESOURCES."""
    role_name = str(config["Role"]).rsplit("/", 1)[-1]
    granted = list(_allowed_resources(_documents(ctx, role_name, inline or [], attached or [])))
    named = {found for arn in granted if (found := named_resource(arn))}
    variables = (config.get("Environment") or {}).get("Variables") or {}
    account = str(config["FunctionArn"]).split(":")[4]
    values = (str(value) for value in variables.values())
    named |= environment_resources(values, granted, ctx.clients.region, account)
    ordered = sorted(named | logged, key=lambda pair: pair[1])
    if len(ordered) > MAX_RESOURCES:
        left = ", ".join(arn for _, arn in ordered[MAX_RESOURCES:])
        ctx.reads.gap(
            f"the resources of function {config['FunctionName']}",
            f"changes of {len(ordered) - MAX_RESOURCES} more resources its role, environment and errors name "
            f"were not searched: {left}",
        )
    return [(kind, arn, (kind, arn) not in named) for kind, arn in ordered[:MAX_RESOURCES]]
