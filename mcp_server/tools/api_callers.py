"""The APIs in front of a function, for ``get_event_sources``' ``apis``: each deployed stage of a REST API
(API Gateway) or an HTTP API (``http_api_callers``) with a route whose Lambda integration invokes the
function (any qualifier); for each route, whether the invoked function's or alias's resource policy lets API
Gateway call it for that route; the stage's request and error counts; and the failures its log recorded in
the window (a REST stage's execution log, an HTTP stage's access log).

Reads: GetRestApis (at most ``MAX_APIS``), then each API's resources with their methods (GetResources), then
GetStages of each API that invokes the function and the policy of each qualifier its routes invoke; each
stage's execution log (``API-Gateway-Execution-Logs_<api>/<stage>``, failure lines only) is read newest
first (``log_window``) beside the metrics. Sources:
https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html and
api-gateway-metrics-and-dimensions.html.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from mcp_server.contract.event_sources import ApiRoute, ApiStage, ExecutionLogLine, PolicyStatement
from mcp_server.reads import Read
from mcp_server.tools import event_source_metrics as metrics
from mcp_server.tools import http_api_callers as http
from mcp_server.tools.context import ToolContext
from mcp_server.tools.log_window import newest_suffix
from mcp_server.tools.policy_statements import arn_like, statements

MAX_APIS: Final[int] = 25
MAX_ERROR_LINES: Final[int] = 3
MAX_LOG_EVENTS: Final[int] = 150  # failure lines fetched at most, to find the newest
DEFAULT_TIMEOUT_MS: Final[int] = 29_000
SERVICE: Final[str] = "apigateway.amazonaws.com"
REST: Final[str] = "REST"
# The words API Gateway's execution log uses when a request fails between it and the function.
FAILURE_PATTERN: Final[str] = '?"Execution failed" ?"Lambda execution failed" ?"Lambda invocation failed"'
_URI_MARKER: Final[str] = ":lambda:path/2015-03-31/functions/"
_INVOKE_ACTIONS: Final[frozenset[str]] = frozenset({"lambda:invokefunction", "lambda:*", "*"})
API_FIELDS: Final[tuple[str, ...]] = tuple(field for field, *_ in metrics.API_METRICS)


def stage_key(api_id: str, stage: str) -> str:
    """The key of a stage's figures among the event paths' metrics."""
    return f"api:{api_id}/{stage}"


@dataclass(frozen=True)
class Route:
    """A route of an API that invokes the function: the API, ``METHOD /path`` (an HTTP API's ``$default``
    route: method ``$default``, no path), the qualifier invoked."""

    api_id: str
    api_name: str
    method: str
    path: str
    qualifier: str | None
    timeout_ms: int
    protocol: str = REST

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}" if self.path else self.method

    def source_tail(self) -> str:
        """What follows ``<api>/<stage>/`` in the execute-api ARN of a request on this route."""
        if self.method == http.DEFAULT_ROUTE:
            return self.method
        return f"{'*' if self.method == 'ANY' else self.method}{self.path}"


def apis_read(ctx: ToolContext) -> Read:
    def call() -> list[dict[str, Any]]:
        pages = ctx.clients.apigateway.get_paginator("get_rest_apis").paginate(
            PaginationConfig={"MaxItems": MAX_APIS}
        )
        return [api for page in pages for api in page.get("items", [])]

    return Read(
        "apigateway:GetRestApis",
        f"REST APIs ({ctx.target.account})",
        call,
        "whether a REST API calls the function, and how its callers fared, is unknown",
    )


def _invoked(uri: str, function_arn: str) -> tuple[bool, str | None]:
    """Whether a Lambda integration's URI invokes the function, and the qualifier it names."""
    if _URI_MARKER not in uri:
        return False, None
    arn = uri.split(_URI_MARKER, 1)[1].removesuffix("/invocations")
    parts, wanted = arn.split(":"), function_arn.split(":")[:7]
    return parts[:7] == wanted, parts[7] if len(parts) > 7 else None


def _resources_read(ctx: ToolContext, api: dict[str, Any], function_arn: str) -> Read:
    def call() -> list[Route]:
        pages = ctx.clients.apigateway.get_paginator("get_resources").paginate(
            restApiId=api["id"], embed=["methods"]
        )
        found = []
        for resource in (r for page in pages for r in page.get("items", [])):
            for method, detail in (resource.get("resourceMethods") or {}).items():
                integration = detail.get("methodIntegration") or {}
                invoked, qualifier = _invoked(str(integration.get("uri", "")), function_arn)
                if invoked:
                    timeout = int(integration.get("timeoutInMillis") or DEFAULT_TIMEOUT_MS)
                    found.append(
                        Route(
                            api["id"], str(api.get("name", "")), method, resource["path"], qualifier, timeout
                        )
                    )
        return found

    return Read(
        "apigateway:GetResources",
        f"REST API {api['id']} ({ctx.target.account})",
        call,
        f"whether REST API {api.get('name', api['id'])} calls the function is unknown",
    )


def routes(ctx: ToolContext, apis: list[dict[str, Any]] | None, function_arn: str) -> list[Route]:
    """Every route of the account's REST APIs that invokes the function."""
    found = ctx.reads.many([_resources_read(ctx, api, function_arn) for api in apis or []])
    return [route for api_routes in found for route in api_routes or []]


def http_routes(ctx: ToolContext, apis: list[dict[str, Any]] | None, function_arn: str) -> list[Route]:
    """Every route of the account's HTTP APIs that invokes the function."""
    found = ctx.reads.many([http.routes_read(ctx, api, function_arn) for api in apis or []])
    return [
        Route(str(api["ApiId"]), str(api.get("Name", "")), method, path, qualifier, timeout, http.HTTP)
        for api, api_routes in zip(apis or [], found, strict=True)
        for key, qualifier, timeout in api_routes or []
        for method, _, path in [key.partition(" ")]
    ]


def _stages_read(ctx: ToolContext, api_id: str) -> Read:
    return Read(
        "apigateway:GetStages",
        f"REST API {api_id} ({ctx.target.account})",
        lambda: ctx.clients.apigateway.get_stages(restApiId=api_id).get("item", []),
        f"REST API {api_id}'s stages, their logging and their callers' errors are unknown",
    )


def _policy_read(ctx: ToolContext, qualifier: str | None) -> Read:
    lambda_ = ctx.clients.lambda_
    params = {"FunctionName": ctx.target.function_name} | ({"Qualifier": qualifier} if qualifier else {})

    def call() -> list[PolicyStatement]:
        try:
            return statements(lambda_.get_policy(**params)["Policy"])
        except lambda_.exceptions.ResourceNotFoundException:
            return []

    return Read(
        "lambda:GetPolicy",
        f"function {ctx.target.function_name}{':' + qualifier if qualifier else ''} ({ctx.target.account})",
        call,
        "whether API Gateway may invoke the function is unknown",
    )


def stages_and_policies(
    ctx: ToolContext, found: list[Route]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str | None, list[PolicyStatement] | None]]:
    """The stages of each API with a route to the function, and the policy of each qualifier invoked."""
    protocols = {r.api_id: r.protocol for r in found}
    api_ids, qualifiers = list(protocols), list(dict.fromkeys(r.qualifier for r in found))
    read = ctx.reads.many(
        [
            *(
                http.stages_read(ctx, a) if protocols[a] == http.HTTP else _stages_read(ctx, a)
                for a in api_ids
            ),
            *(_policy_read(ctx, q) for q in qualifiers),
        ]
    )
    stages = {api_id: listed or [] for api_id, listed in zip(api_ids, read[: len(api_ids)], strict=True)}
    return stages, dict(zip(qualifiers, read[len(api_ids) :], strict=True))


Stage = tuple[str, str, str]  # (api id, api name, stage name)


@dataclass(frozen=True)
class Callers:
    """What the first rounds found: the routes to the function, each API's stages, each qualifier's policy."""

    routes: list[Route]
    stages: dict[str, list[dict[str, Any]]]
    policies: dict[str | None, list[PolicyStatement] | None]

    def protocol(self, api_id: str) -> str:
        return next(r.protocol for r in self.routes if r.api_id == api_id)

    def stage_names(self) -> list[Stage]:
        """(api id, api name, stage) of every stage whose figures the answer shows."""
        names = {r.api_id: r.api_name for r in self.routes}
        return [(a, names[a], str(s["stageName"])) for a, listed in self.stages.items() for s in listed]

    def settings(self, stage: Stage) -> dict[str, Any]:
        api_id, _, name = stage
        return next(s for s in self.stages[api_id] if s["stageName"] == name)

    def metric_stages(self) -> tuple[metrics.ApiStageMetrics, ...]:
        """Each stage's figures' key, its dimensions, and whether it is an HTTP API's."""
        found = []
        for api_id, name, stage in self.stage_names():
            is_http = self.protocol(api_id) == http.HTTP
            api = ("ApiId", api_id) if is_http else ("ApiName", name)
            found.append((stage_key(api_id, stage), (api, ("Stage", stage)), is_http))
        return tuple(found)

    def failure_reads(
        self, ctx: ToolContext, start: datetime, end: datetime
    ) -> tuple[list[Stage], list[Read]]:
        """The stages whose log shows their failures, and the reads of those failures (a REST stage's
        execution log; an HTTP stage's access log, when it is JSON with the request's status)."""
        stages, reads = [], []
        for stage in self.stage_names():
            api_id, _, name = stage
            group: str | None = f"API-Gateway-Execution-Logs_{api_id}/{name}"
            pattern: str | None = FAILURE_PATTERN
            status: str | None = None
            if self.protocol(api_id) == http.HTTP:
                access = self.settings(stage).get("accessLogSettings") or {}
                log_format = str(access.get("Format") or "")
                group, pattern = http.access_log_group(access), http.failure_pattern(log_format)
                status = (http.status_field(log_format) or (None,))[0]
            if group is None or pattern is None:
                continue
            stages.append(stage)
            reads.append(_failures_read(ctx, group, pattern, start, end, f"stage {name}", status))
        return stages, reads


def callers(
    ctx: ToolContext,
    apis: list[dict[str, Any]] | None,
    http_apis: list[dict[str, Any]] | None,
    function_arn: str,
) -> Callers:
    """The account's REST and HTTP API routes to the function, and the stages and policies they need read."""
    found = [*routes(ctx, apis, function_arn), *http_routes(ctx, http_apis, function_arn)]
    if not found:
        return Callers([], {}, {})
    return Callers(found, *stages_and_policies(ctx, found))


def _failures_read(
    ctx: ToolContext,
    group: str,
    pattern: str,
    start: datetime,
    end: datetime,
    stage: str,
    status: str | None = None,
) -> Read:
    """The newest failure lines of a stage's log; ``status``: the access log's field of the request's
    status, read into each line."""
    logs = ctx.clients.logs

    def call() -> list[ExecutionLogLine]:
        params = {
            "logGroupName": group,
            "startTime": int(start.timestamp() * 1000),
            "endTime": int(end.timestamp() * 1000),
            "filterPattern": pattern,
        }
        try:  # newest first: on a busy stage the window's older failures would use the budget up
            events = newest_suffix(logs, params, MAX_LOG_EVENTS).events
        except logs.exceptions.ResourceNotFoundException:  # nothing logged yet
            return []
        lines = []
        for event in events[-MAX_ERROR_LINES:]:
            message = str(event.get("message", "")).rstrip("\n")
            lines.append(
                ExecutionLogLine(
                    at=datetime.fromtimestamp(int(event.get("timestamp", 0)) / 1000, UTC).isoformat(),
                    message=message,
                    status=http.line_status(message, status) if status else None,
                )
            )
        return lines

    return Read(
        "logs:FilterLogEvents",
        f"{group} ({ctx.target.account})",
        call,
        f"what API Gateway recorded of {stage}'s failures is unknown",
    )


def _allows(found: PolicyStatement, source_arn: str) -> bool:
    actions = {a.strip().lower() for a in found.Action.split(",")}
    account = source_arn.split(":")[4]
    return (
        SERVICE in {p.strip() for p in found.Principal.split(",")}
        and bool(actions & _INVOKE_ACTIONS)
        and (
            found.SourceArn is None
            or any(arn_like(source_arn, p.strip()) for p in found.SourceArn.split(","))
        )
        and found.SourceAccount in (None, account)
    )


def route_allowed(statements: list[PolicyStatement], source_arn: str) -> bool:
    """Whether the policy lets API Gateway invoke the function for the route ``source_arn`` names (its
    ``arn:aws:execute-api:...:<api>/<stage>/<METHOD>/<path>``): an Allow that matches, no Deny that does."""
    matching = [s.Effect for s in statements if _allows(s, source_arn)]
    return "Allow" in matching and "Deny" not in matching


def _logging(ctx: ToolContext, found: Callers, stage: Stage) -> str:
    """The stage's logging level as the answer shows it, and a gap when its log cannot show its failures."""
    api_id, api_name, name = stage
    settings = found.settings(stage)
    if found.protocol(api_id) == http.HTTP:
        access = settings.get("accessLogSettings") or {}
        if http.access_log_group(access) is None:
            ctx.reads.gap(
                f"stage {name} of HTTP API {api_name}",
                "its access logging is off (HTTP APIs write no execution log): why API Gateway answered 5XX "
                "is not recorded",
            )
            return "OFF"
        if http.failure_pattern(str(access.get("Format") or "")) is None:
            ctx.reads.gap(
                f"stage {name} of HTTP API {api_name}",
                "its access log is not JSON with a $context.status field: its failed requests are not "
                "picked out",
            )
        return "ACCESS"
    level = str(((settings.get("methodSettings") or {}).get("*/*") or {}).get("loggingLevel") or "OFF")
    if level == "OFF":
        ctx.reads.gap(
            f"stage {name} of REST API {api_name}",
            "its execution logging is off: what API Gateway did with the function's answers (a malformed "
            "response, a timeout, a refused invocation) is not recorded",
        )
    return level


def api_stages(
    ctx: ToolContext,
    function_arn: str,
    found: Callers,
    figures: dict[Any, float | None],
    errors: dict[Stage, list[ExecutionLogLine] | None],
) -> list[ApiStage] | None:
    """The answer's ``apis`` (None when no API calls the function), with each stage's failure lines from
    ``errors``; a gap for each stage whose log cannot show them."""
    answer = []
    for stage in found.stage_names():
        api_id, api_name, name = stage
        level = _logging(ctx, found, stage)
        answer.append(
            ApiStage(
                api_id=api_id,
                api_name=api_name,
                stage=name,
                protocol=http.HTTP if found.protocol(api_id) == http.HTTP else None,
                logging_level=level,
                api_source_arn=f"{_execute_api(function_arn)}{api_id}/*",
                routes=[
                    _route(function_arn, r, name, found.policies.get(r.qualifier))
                    for r in found.routes
                    if r.api_id == api_id
                ],
                **{f: figures.get((stage_key(api_id, name), f)) for f in API_FIELDS},
                execution_errors=errors.get(stage) or [],
            )
        )
    return answer or None


def _execute_api(function_arn: str) -> str:
    """``arn:<partition>:execute-api:<region>:<account>:``, the start of every ARN of the function's APIs."""
    _, partition, _, region, account = function_arn.split(":")[:5]
    return f"arn:{partition}:execute-api:{region}:{account}:"


def _route(function_arn: str, route: Route, stage: str, statements: list[PolicyStatement] | None) -> ApiRoute:
    source = f"{_execute_api(function_arn)}{route.api_id}/{stage}/{route.source_tail()}"
    return ApiRoute(
        route=route.key,
        qualifier=route.qualifier,
        timeout_ms=route.timeout_ms,
        invoke_allowed=None if statements is None else route_allowed(statements, source),
    )
