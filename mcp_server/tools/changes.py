"""``get_recent_changes``: the CloudTrail management events that touched the function or what it relies on
(its versions and aliases, execution role and attached policies, its environment variables' key, security
groups, its subnets (the network interfaces made in them) and their network ACLs and route tables, its event
paths: event source mappings, their source queues, the SNS topics that deliver to it, the REST and HTTP APIs
with a route to it; and the tables, buckets, queues, topics and keys its role grants by name or its errors
name, :mod:`.dependencies`), newest first, each with who, when and a bounded summary.

Each resource is a search by ``ResourceName``: in the function's region, or in us-east-1 for IAM, where
CloudTrail records global services. The function is searched by name and by ARN, as CloudTrail may record
either. Changes that may name no resource the function can be found by (an event source mapping updated or
deleted by its UUID, a subscription removed by its ARN) are searched by ``EventName`` and kept when their
request or response names the function, one of its mappings or one of its topics; API Gateway's are
searched by ``EventSource`` and kept when they name one of the APIs. How the searches become
``LookupEvents`` calls, paced and bounded, is :mod:`.change_lookups`.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_server.aws import GLOBAL_EVENTS_REGION
from mcp_server.contract import (
    ChangedResource,
    ChangeEvent,
    ChangeEventDetail,
    GetRecentChangesArgs,
    RecentChangesResponse,
)
from mcp_server.contract.changes import NAMED_BY_ERRORS
from mcp_server.reads import Read
from mcp_server.tools.api_callers import SERVICE as APIGATEWAY
from mcp_server.tools.api_callers import apis_read, http_routes, routes
from mcp_server.tools.change_lookups import Found, Lookups, Search
from mcp_server.tools.context import ToolContext
from mcp_server.tools.dependencies import called_resources, logged_lines_read, logged_resources
from mcp_server.tools.event_sources import resource_policy, subscriptions_to, unqualified
from mcp_server.tools.http_api_callers import apis_read as http_apis_read
from mcp_server.tools.iam import listed
from mcp_server.tools.lambda_config import function_configuration, log_group
from mcp_server.tools.logs import truncate_message

SUMMARY_BYTE_CAP = 4096  # one event's summary
SUMMARIES_BYTE_CAP = 64 * 1024  # all summaries of one answer
HIDDEN_ENVIRONMENT = "set; CloudTrail hides the variables' names and values"
DELIVERY_NOTE = (
    "CloudTrail delivers events within about 5 minutes (sometimes 15): the newest changes may be missing."
)


# Lambda names these events with the API version
# (https://docs.aws.amazon.com/lambda/latest/dg/logging-using-cloudtrail.html).
MAPPING_EVENTS = (
    "CreateEventSourceMapping20150331",
    "UpdateEventSourceMapping20150331",
    "DeleteEventSourceMapping20150331",
)
SNS_PRINCIPAL = "sns.amazonaws.com"


def _associated(
    ec2: Any, operation: str, key: str, vpc_id: str, subnets: list[str], default: str
) -> list[str]:
    """Ids of the network ACLs or route tables (``key``) associated with ``subnets``; when a subnet has no
    explicit association, also the VPC's ``default`` one (filter name: "default" or "association.main")."""
    tables = listed(ec2, operation, key, Filters=[{"Name": "association.subnet-id", "Values": subnets}])
    associated = {a.get("SubnetId") for table in tables for a in table.get("Associations", [])}
    if set(subnets) - associated:
        filters = [{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": default, "Values": ["true"]}]
        tables += listed(ec2, operation, key, Filters=filters)
    id_key = "NetworkAclId" if key == "NetworkAcls" else "RouteTableId"
    return sorted({table[id_key] for table in tables})


def _event_path_reads(ctx: ToolContext, config: dict[str, Any]) -> list[Read]:
    """The reads that find the function's event source mappings and the SNS topics that deliver to it
    (its subscriptions, and the topics its resource policy lets invoke it)."""
    name = ctx.target.function_name
    return [
        Read(
            "lambda:ListEventSourceMappings",
            f"function {name}",
            lambda: listed(
                ctx.clients.lambda_, "list_event_source_mappings", "EventSourceMappings", FunctionName=name
            ),
            "changes to the function's current event source mappings and their source queues were not "
            "searched by their UUID and queue (mapping events that name the function still are)",
        ),
        Read(
            "sns:ListSubscriptions",
            f"subscriptions with endpoint {unqualified(config['FunctionArn'])}",
            lambda: subscriptions_to(ctx.clients.sns, config["FunctionArn"]),
            "changes to the SNS topics subscribed to the function were not searched",
        ),
        Read(
            "lambda:GetPolicy",
            f"function {ctx.target.function}",
            lambda: resource_policy(ctx),
            "the SNS topics the function's resource policy lets invoke it are unknown: their "
            "unsubscriptions were not searched",
        ),
    ]


def _related_reads(
    ctx: ToolContext, config: dict[str, Any], role_name: str, window: tuple[int, int]
) -> list[Read]:
    """The reads that find the role's managed policies, the function's event paths, the resources its error
    lines name in the ``window`` (ms) and, for a function in a VPC, its subnets' network ACLs and route
    tables."""
    iam, ec2 = ctx.clients.iam, ctx.clients.ec2
    vpc = config.get("VpcConfig") or {}
    subnets, vpc_id = vpc.get("SubnetIds") or [], vpc.get("VpcId") or ""
    reads = [
        Read(
            "iam:ListAttachedRolePolicies",
            f"role {role_name}",
            lambda: listed(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=role_name),
            "new versions of the role's managed policies, and the resources they grant, were not searched "
            "(attachments and detachments still are, through the role)",
        ),
        Read(
            "iam:ListRolePolicies",
            f"role {role_name}",
            lambda: listed(iam, "list_role_policies", "PolicyNames", RoleName=role_name),
            "the resources the role's inline policies grant were not searched",
        ),
        *_event_path_reads(ctx, config),
        logged_lines_read(ctx, log_group(config, ctx.target.function_name), *window),
        replace(
            apis_read(ctx), meaning="changes to the REST APIs in front of the function were not searched"
        ),
        replace(
            http_apis_read(ctx),
            meaning="changes to the HTTP APIs in front of the function were not searched",
        ),
    ]
    if not subnets:
        return reads
    return [
        *reads,
        Read(
            "ec2:DescribeNetworkAcls",
            f"subnets {', '.join(subnets)}",
            lambda: _associated(ec2, "describe_network_acls", "NetworkAcls", vpc_id, subnets, "default"),
            "changes to the network ACLs of the function's subnets were not searched",
        ),
        Read(
            "ec2:DescribeRouteTables",
            f"subnets {', '.join(subnets)}",
            lambda: _associated(
                ec2, "describe_route_tables", "RouteTables", vpc_id, subnets, "association.main"
            ),
            "changes to the route tables of the function's subnets were not searched",
        ),
    ]


def _function_named(value: Any, name: str) -> bool:
    """Whether ``value`` (a function's name, ``name:qualifier`` or ARN, qualified or not) names ``name``."""
    if not isinstance(value, str):
        return False
    parts = value.split(":")
    return (parts[6] if value.startswith("arn:") and len(parts) > 6 else parts[0]) == name


def _names_mapping(record: dict[str, Any], name: str, uuids: set[str]) -> bool:
    """A mapping event of the function: its request names one of its mappings or the function, or its
    response (the mapping's configuration) names the function."""
    request = record.get("requestParameters") or {}
    response = record.get("responseElements") or {}
    uuid = next((value for key, value in request.items() if key.lower() == "uuid"), None)
    return (
        uuid in uuids
        or _function_named(request.get("functionName"), name)
        or _function_named(response.get("functionArn"), name)
    )


def _unsubscribes(record: dict[str, Any], topics: list[str]) -> bool:
    subscription = str((record.get("requestParameters") or {}).get("subscriptionArn") or "")
    return any(subscription.startswith(topic + ":") for topic in topics)


def _topics(subscriptions: list[dict[str, Any]] | None, statements: list[Any] | None) -> list[str]:
    """The topics subscribed to the function, and those its resource policy names (without wildcards)."""
    allowed = [
        s.SourceArn
        for s in statements or []
        if s.Principal == SNS_PRINCIPAL and s.SourceArn and ":sns:" in s.SourceArn and "*" not in s.SourceArn
    ]
    return list(dict.fromkeys([*(sub["TopicArn"] for sub in subscriptions or []), *allowed]))


def _event_path_searches(
    name: str, region: str, mappings: list[dict[str, Any]] | None, topics: list[str]
) -> list[Search]:
    uuids = {m["UUID"] for m in mappings or []}
    queues = dict.fromkeys(
        m["EventSourceArn"] for m in mappings or [] if ":sqs:" in m.get("EventSourceArn", "")
    )
    return [
        *(Search(f"event source mapping {uuid}", uuid, region) for uuid in sorted(uuids)),
        *(
            Search(
                f"{event[: -len('20150331')]} of function {name}",
                event,
                region,
                "EventName",
                lambda record: _names_mapping(record, name, uuids),
            )
            for event in MAPPING_EVENTS
        ),
        *(Search(f"queue {arn}", arn, region) for arn in queues),
        *(Search(f"topic {topic}", topic, region) for topic in topics),
        *(
            [
                Search(
                    f"Unsubscribe of topics {', '.join(topics)}",
                    "Unsubscribe",
                    region,
                    "EventName",
                    lambda record: _unsubscribes(record, topics),
                )
            ]
            if topics
            else []
        ),
    ]


def _searches(ctx: ToolContext, config: dict[str, Any], window: tuple[int, int]) -> list[Search]:
    """What to look up: the function, its role, its environment variables' key, and what the related reads
    find (a failed read is a gap, and its resources are not searched)."""
    name, region = ctx.target.function_name, ctx.clients.region
    role_name = config["Role"].rsplit("/", 1)[-1]  # arn:aws:iam::<account>:role/<optional path/><name>
    vpc = config.get("VpcConfig") or {}
    policies, inline, mappings, subscriptions, statements, logged, apis, http_apis, *tables = ctx.reads.many(
        _related_reads(ctx, config, role_name, window)
    )
    acls, route_tables = tables or (None, None)
    function_arn = unqualified(config["FunctionArn"])
    rest_ids = sorted({route.api_id for route in routes(ctx, apis, function_arn)})
    http_ids = sorted({route.api_id for route in http_routes(ctx, http_apis, function_arn)})
    searches = [
        Search(f"function {name}", name, region),
        Search(f"function {function_arn}", function_arn, region),
        Search(f"role {role_name}", role_name, GLOBAL_EVENTS_REGION),
        *(
            Search(f"policy {arn}", arn, GLOBAL_EVENTS_REGION)
            for arn in sorted(p["PolicyArn"] for p in policies or [])
        ),
        *([Search(f"key {key}", key, region)] if (key := config.get("KMSKeyArn")) else []),
        *(Search(f"security group {group}", group, region) for group in vpc.get("SecurityGroupIds") or []),
        *(Search(f"subnet {subnet}", subnet, region) for subnet in vpc.get("SubnetIds") or []),
        *(Search(f"network ACL {acl}", acl, region) for acl in acls or []),
        *(Search(f"route table {table}", table, region) for table in route_tables or []),
        *_event_path_searches(name, region, mappings, _topics(subscriptions, statements)),
        *([_api_search(rest_ids, http_ids, region)] if rest_ids or http_ids else []),
        *(
            Search(f"{kind} {arn}{NAMED_BY_ERRORS if only_logged else ''}", arn, arn.split(":")[3] or region)
            for kind, arn, only_logged in called_resources(
                ctx, config, inline, policies, logged_resources(logged or [])
            )
        ),
    ]
    unique: dict[tuple[str, str], Search] = {}  # a queue on an event path may also be granted: searched once
    for search in searches:
        unique.setdefault((search.attribute, search.name), search)
    return list(unique.values())


def _api_search(rest_ids: list[str], http_ids: list[str], region: str) -> Search:
    """API Gateway's changes to the REST and HTTP APIs with a route that invokes the function (their
    integrations, routes, deployments, stages), by event source: CloudTrail's API Gateway events are kept by
    the API their request names (``restApiId``, an HTTP API's ``apiId``), not by a resource name. One search
    for both, as both are API Gateway's events."""
    rest, http = set(rest_ids), set(http_ids)

    def names_api(record: dict[str, Any]) -> bool:
        request = record.get("requestParameters") or {}
        return request.get("restApiId") in rest or request.get("apiId") in http

    label = " and ".join(
        f"{kind} API {', '.join(ids)}" for kind, ids in (("REST", rest_ids), ("HTTP", http_ids)) if ids
    )
    return Search(label, APIGATEWAY, region, "EventSource", names_api)


def _masked(access_key_id: str | None) -> str | None:
    if not access_key_id:
        return None
    return f"{access_key_id[:4]}…{access_key_id[-4:]}" if len(access_key_id) > 8 else "…"


def _document(text: str) -> Any:
    """A policy document as JSON when it parses (raw or URL-encoded), else the text itself."""
    for candidate in (text, urllib.parse.unquote(text)):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return text


def _environment(value: Any) -> Any:
    """Variable names when the request shows them; never a value."""
    variables = value.get("variables") if isinstance(value, dict) else None
    return {"variable_names": sorted(variables)} if isinstance(variables, dict) else HIDDEN_ENVIRONMENT


def _shown(key: str, value: Any) -> Any:
    """A request parameter as the summary shows it: environments reduced to names, documents parsed."""
    if key == "environment":
        return _environment(value)
    if key.lower().endswith("policydocument") and isinstance(value, str):
        return _document(value)
    if isinstance(value, dict):
        return {name: _shown(name, item) for name, item in value.items()}
    if isinstance(value, list):
        return [_shown("", item) for item in value]
    return value


_IDEMPOTENCY_TOKEN = "clienttoken"  # noqa: S105 - the SDK's retry token (EC2, ...): says nothing of the change


def _summary(event_name: str, request: Any, cap: int) -> dict[str, Any]:
    """The request parameters but an idempotency token, at most ``cap`` bytes of JSON (else an excerpt
    ending in a marker)."""
    if not isinstance(request, dict):
        return {}
    summary: dict[str, Any] = {
        key: _shown(key, value) for key, value in request.items() if key.lower() != _IDEMPOTENCY_TOKEN
    }
    if event_name.startswith("UpdateFunctionConfiguration"):
        summary = {"changed_fields": sorted(key for key in request if key != "functionName")} | summary
    text = json.dumps(summary, default=str)
    return summary if len(text.encode()) <= cap else {"excerpt": truncate_message(text, cap)[0]}


def _request(event_name: str, record: dict[str, Any]) -> Any:
    """The request parameters; for a mapping updated or deleted by its UUID, with the source and function
    its response (the mapping's configuration) names: what the mapping was, once it is gone."""
    request = record.get("requestParameters")
    response = record.get("responseElements")
    if event_name not in MAPPING_EVENTS or not isinstance(request, dict) or not isinstance(response, dict):
        return request
    named = {key: response[key] for key in ("eventSourceArn", "functionArn") if response.get(key)}
    return named | request


def _change(event: dict[str, Any], matched: list[str], summary_cap: int, detail: bool) -> ChangeEvent:
    record: dict[str, Any] = json.loads(event.get("CloudTrailEvent") or "{}")
    identity = record.get("userIdentity") or {}
    change = ChangeEvent(
        time=event["EventTime"].astimezone(UTC).isoformat(),
        event_name=event["EventName"],
        service=event.get("EventSource") or record.get("eventSource") or "unknown",
        identity_arn=identity.get("arn") or identity.get("invokedBy"),
        summary=_summary(event["EventName"], _request(event["EventName"], record), summary_cap),
        error_code=record.get("errorCode"),
    )
    if not detail:
        return change
    return ChangeEventDetail(
        **change.model_dump(),
        event_id=event["EventId"],
        resources=[
            ChangedResource(type=r.get("ResourceType"), name=r["ResourceName"])
            for r in event.get("Resources") or []
            if r.get("ResourceName")
        ],
        region=record.get("awsRegion"),
        identity_type=identity.get("type"),
        access_key_id=_masked(identity.get("accessKeyId") or event.get("AccessKeyId")),
        matched=matched,
    )


def _merged(searches: list[Search], found: list[Found | None]) -> list[tuple[dict[str, Any], list[str]]]:
    """Distinct events (by id) with the searches that found each, newest first."""
    by_id: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for search, result in zip(searches, found, strict=True):
        for event in result.events if result else []:
            by_id.setdefault(event["EventId"], (event, []))[1].append(search.label)
    return sorted(by_id.values(), key=lambda item: (item[0]["EventTime"], item[0]["EventId"]), reverse=True)


def _changes(merged: list[tuple[dict[str, Any], list[str]]], detail: bool) -> list[ChangeEvent]:
    """The events as answered, the newest first to get their summaries' share of the byte budget."""
    changes, budget = [], SUMMARIES_BYTE_CAP
    for event, matched in merged:
        change = _change(event, matched, min(SUMMARY_BYTE_CAP, budget), detail)
        budget = max(0, budget - len(json.dumps(change.summary, default=str).encode()))
        changes.append(change)
    return changes


def recent_changes(ctx: ToolContext, args: GetRecentChangesArgs) -> RecentChangesResponse:
    config = function_configuration(ctx)
    end = datetime.now(UTC)
    start = end - timedelta(hours=args.hours)
    searches = _searches(ctx, config, (int(start.timestamp() * 1000), int(end.timestamp() * 1000)))
    found = Lookups(ctx, start, end, args.limit).found(searches)
    for search, result in zip(searches, found, strict=True):
        if result is not None and result.stopped:
            ctx.reads.gap(
                f"cloudtrail:LookupEvents of {search.label} ({search.region})",
                f"stopped reading because {result.stopped}: its changes before "
                f"{(result.reached or end).astimezone(UTC).isoformat()} were not searched",
            )
    merged = _merged(searches, found)
    events = _changes(merged[: args.limit], args.detail)
    return RecentChangesResponse(
        function_name=ctx.target.function_name,
        window_start=start.isoformat(),
        window_end=end.isoformat(),
        searched=[search.label for search in searches],
        matched_events=len(merged),
        more_events=any(result is not None and result.more for result in found),
        returned_events=len(events),
        events=events,
        note=DELIVERY_NOTE,
        gaps=ctx.reads.gaps,
    )
