"""The HTTP APIs (API Gateway v2) in front of a function, for ``get_event_sources``' ``apis``: each API with a
route whose Lambda proxy integration invokes the function (any qualifier), its stages with their access
logging, and the failed requests its access log recorded in the window.

Reads: GetApis (at most ``MAX_APIS``; WebSocket APIs are left out), then each HTTP API's integrations and
routes (GetIntegrations, GetRoutes), then GetStages of each API that invokes the function; the routes are
shaped as ``api_callers.Route`` so that the policy, metrics and answer are read as for REST APIs. HTTP APIs
write no execution log: a stage's failures are read from its access log, when the log is JSON with a
``$context.status`` field (``{ $.status = "5*" }``, or ``>= 500`` when the field is a number). Sources:
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-logging.html and http-api-metrics.html.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext

HTTP: Final[str] = "HTTP"
MAX_APIS: Final[int] = 25
DEFAULT_TIMEOUT_MS: Final[int] = 30_000
DEFAULT_ROUTE: Final[str] = "$default"
_STATUS: Final[str] = "$context.status"
_NUMBER_FIELD: Final[re.Pattern[str]] = re.compile(r'"([A-Za-z0-9_-]+)"\s*:\s*\$context\.status\b')


def apis_read(ctx: ToolContext) -> Read:
    def call() -> list[dict[str, Any]]:
        pages = ctx.clients.apigatewayv2.get_paginator("get_apis").paginate(
            PaginationConfig={"MaxItems": MAX_APIS}
        )
        return [api for page in pages for api in page.get("Items", []) if api.get("ProtocolType") == HTTP]

    return Read(
        "apigateway:GetApis",
        f"HTTP APIs ({ctx.target.account})",
        call,
        "whether an HTTP API calls the function, and how its callers fared, is unknown",
    )


def invoked(uri: str, function_arn: str) -> tuple[bool, str | None]:
    """Whether an integration's URI (a function ARN, or API Gateway's ``...:lambda:path/...`` form) invokes
    the function, and the qualifier it names."""
    marker = ":lambda:path/2015-03-31/functions/"
    arn = uri.split(marker, 1)[1].removesuffix("/invocations") if marker in uri else uri
    parts = arn.split(":")
    if len(parts) < 7 or parts[2] != "lambda":
        return False, None
    return parts[:7] == function_arn.split(":")[:7], parts[7] if len(parts) > 7 else None


def routes_read(ctx: ToolContext, api: dict[str, Any], function_arn: str) -> Read:
    """The API's routes whose integration invokes the function, as (route key, qualifier, timeout ms)."""
    client, api_id = ctx.clients.apigatewayv2, str(api["ApiId"])

    def call() -> list[tuple[str, str | None, int]]:
        integrations = {
            str(i["IntegrationId"]): i
            for page in client.get_paginator("get_integrations").paginate(ApiId=api_id)
            for i in page.get("Items", [])
            if i.get("IntegrationType") == "AWS_PROXY"
        }
        found = []
        for route in (
            r for page in client.get_paginator("get_routes").paginate(ApiId=api_id) for r in page["Items"]
        ):
            integration = integrations.get(str(route.get("Target", "")).removeprefix("integrations/"))
            if integration is None:
                continue
            calls, qualifier = invoked(str(integration.get("IntegrationUri", "")), function_arn)
            if calls:
                timeout = int(integration.get("TimeoutInMillis") or DEFAULT_TIMEOUT_MS)
                found.append((str(route["RouteKey"]), qualifier, timeout))
        return found

    return Read(
        "apigateway:GetRoutes",
        f"HTTP API {api_id} ({ctx.target.account})",
        call,
        f"whether HTTP API {api.get('Name', api_id)} calls the function is unknown",
    )


def stages_read(ctx: ToolContext, api_id: str) -> Read:
    """The API's stages as REST's are shaped: ``stageName``, and ``accessLogSettings`` when set."""

    def call() -> list[dict[str, Any]]:
        pages = ctx.clients.apigatewayv2.get_paginator("get_stages").paginate(ApiId=api_id)
        return [
            {"stageName": s["StageName"], "accessLogSettings": s.get("AccessLogSettings")}
            for page in pages
            for s in page.get("Items", [])
        ]

    return Read(
        "apigateway:GetStages",
        f"HTTP API {api_id} ({ctx.target.account})",
        call,
        f"HTTP API {api_id}'s stages, their access logs and their callers' errors are unknown",
    )


def status_field(log_format: str) -> tuple[str, bool] | None:
    """The field of a JSON access log's format that holds ``$context.status``, and whether as a number;
    None when the log is not JSON with one."""
    try:
        fields = json.loads(log_format)
    except ValueError:
        fields = None
    if isinstance(fields, dict):
        named = next((k for k, v in fields.items() if v == _STATUS and re.fullmatch(r"[\w-]+", k)), None)
        if named:
            return named, False
    number = _NUMBER_FIELD.search(log_format) if log_format.lstrip().startswith("{") else None
    return (number.group(1), True) if number else None


def failure_pattern(log_format: str) -> str | None:
    """The filter pattern that finds an access log's 5XX requests (the log must be JSON with a field holding
    ``$context.status``, as a string or a number); None when it is not."""
    found = status_field(log_format)
    if found is None:
        return None
    name, numeric = found
    return f"{{ $.{name} >= 500 }}" if numeric else f'{{ $.{name} = "5*" }}'


def line_status(message: str, field: str) -> int | None:
    """The status an access log line records in ``field``; None when the line does not say one."""
    try:
        line = json.loads(message)
    except ValueError:
        return None
    value = str(line.get(field, "")) if isinstance(line, dict) else ""
    return int(value) if value.isdigit() else None


def access_log_group(settings: dict[str, Any] | None) -> str | None:
    """The log group a stage's access log settings name, if any."""
    arn = str((settings or {}).get("DestinationArn") or "")
    return arn.split(":log-group:", 1)[1].removesuffix(":*") if ":log-group:" in arn else None
