"""Existing fault classes on an event path, read from ``get_event_sources`` (which the function's users cannot
write): a caller refused because no resource-policy statement lets it invoke the function, an SNS topic,
the anonymous callers of a public function URL, the signed callers of an AWS_IAM one, or an API's routes
(permission_loss), and a source queue whose visibility timeout is shorter than the function's timeout
(configuration_error)."""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.event_paths import TOOL, mappings, positive
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy
from supervisor.diagnosis.rules.triggers import change_events

# AWS recommends a source queue's visibility timeout of at least six times the function's timeout
# (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html); SQS allows at most 12 hours.
VISIBILITY_FACTOR = 6
MAX_VISIBILITY = 43200


def _removed_statement(c: Conversation) -> ChangeEvent | None:
    return next((e for e in change_events(c) if e.operation == "RemovePermission"), None)


def refused_caller(c: Conversation) -> Finding | None:
    """An SNS subscription the function's resource policy no longer lets invoke it, whose topic counts
    failed notifications; else a public function URL whose callers it refuses."""
    for index, subscription in enumerate(c.event_sources.get("subscriptions") or []):
        failed = subscription.get("notifications_failed")
        if subscription.get("invoke_allowed") is not False or not positive(failed):
            continue
        topic, where = str(subscription["TopicArn"]), f"subscriptions.{index}"
        removed = _removed_statement(c)
        summary = (removed.event.get("summary") or {}) if removed else {}
        sid = str(summary.get("statementId") or f"{topic.rsplit(':', 1)[1]}-invoke")
        params = {
            "FunctionName": c.name,
            "StatementId": sid,
            "Action": "lambda:InvokeFunction",
            "Principal": "sns.amazonaws.com",
            "SourceArn": topic,
        }
        pointers = [
            Pointer(
                TOOL,
                f"{where}.invoke_allowed",
                False,
                f"No statement lets {topic} invoke it",
                "permission_loss",
            ),
            Pointer(TOOL, f"{where}.notifications_failed", failed, f"{failed:g} notifications failed", None),
        ]
        return Finding(
            "permission_loss",
            f"The resource policy of {c.name} no longer lets {topic} invoke it: the topic's notifications "
            "fail.",
            "high",
            pointers,
            Remedy(
                f"Let {topic} invoke {c.name} again",
                "Add the statement back to the function's resource policy (principal sns.amazonaws.com, "
                "source the topic).",
                command(c, "lambda", "AddPermission", params),
                "low",
            ),
            relevant_change=lambda e: e.operation == "RemovePermission",
            resources=(topic,),
        )
    return refused_url(c) or refused_signed_caller(c) or refused_api(c)


# The two statements a public URL made since October 2025 needs (https://docs.aws.amazon.com/lambda/latest/
# dg/urls-auth.html): (action, the answer's condition field, its value, AddPermission's parameter and value).
_URL_STATEMENTS = (
    ("lambda:InvokeFunctionUrl", "FunctionUrlAuthType", "NONE", "FunctionUrlAuthType", "NONE"),
    ("lambda:InvokeFunction", "InvokedViaFunctionUrl", "true", "InvokedViaFunctionUrl", True),
)


def _missing_url_statements(statements: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """Of the two statements, those the policy lacks: (action, parameter, value)."""
    return [
        (action, parameter, value)
        for action, field, wanted, parameter, value in _URL_STATEMENTS
        if not any(
            s.get("Effect") == "Allow"
            and s.get("Principal") == "*"
            and action.lower() in {a.strip().lower() for a in str(s.get("Action", "")).split(",")}
            and str(s.get(field) or "").lower() == wanted.lower()
            for s in statements
        )
    ]


def refused_url(c: Conversation) -> Finding | None:
    """A public (AuthType NONE) function URL whose policy no longer lets everyone call it, while callers
    were answered 4XX: the statement that is missing, added back (the id the RemovePermission named)."""
    url = c.event_sources.get("function_url") or {}
    refused = url.get("client_errors")
    if url.get("invoke_allowed") is not False or not positive(refused):
        return None
    missing = _missing_url_statements(c.event_sources.get("policy_statements") or [])
    removed = _removed_statement(c)
    sid = str(((removed.event.get("summary") or {}) if removed else {}).get("statementId") or "")
    pointers = [
        Pointer(
            TOOL,
            "function_url.invoke_allowed",
            False,
            "Its policy lets no anonymous caller use the URL",
            "permission_loss",
        ),
        Pointer(TOOL, "function_url.client_errors", refused, f"{refused:g} requests were answered 4XX", None),
    ]
    if not missing:  # a Deny refuses them: which one to delete is for a person to read
        command_text, details = None, "A Deny statement of its resource policy refuses them: delete it."
    else:
        action, parameter, value = missing[0]
        params = {
            "FunctionName": c.name,
            "StatementId": sid or "FunctionURLAllowPublicAccess",
            "Action": action,
            "Principal": "*",
            parameter: value,
        }
        command_text = command(c, "lambda", "AddPermission", params)
        details = f"Let everyone {action} again, as a public URL needs" + (
            f"; then {missing[1][0]} too." if len(missing) > 1 else "."
        )
    return Finding(
        "permission_loss",
        f"The resource policy of {c.name} no longer lets anonymous callers use its function URL "
        f"({url.get('FunctionUrl')}): their requests are refused before the function runs.",
        "high",
        pointers,
        Remedy(f"Let callers use the function URL of {c.name} again", details, command_text, "low"),
        relevant_change=lambda e: e.operation == "RemovePermission",
        resources=(),
    )


# The AddPermission parameters that write a URL statement (CloudTrail records them in lowerCamelCase).
_ADD_PERMISSION = (
    "StatementId",
    "Action",
    "Principal",
    "SourceAccount",
    "PrincipalOrgID",
    "FunctionUrlAuthType",
    "InvokedViaFunctionUrl",
)


def _added_statement(c: Conversation, sid: str, removed: ChangeEvent) -> ChangeEvent | None:
    """The AddPermission that wrote statement ``sid`` before it was removed, if the history reaches it."""
    return next(
        (
            e
            for e in change_events(c)
            if e.operation == "AddPermission"
            and e.time < removed.time
            and (e.event.get("summary") or {}).get("statementId") == sid
        ),
        None,
    )


def refused_signed_caller(c: Conversation) -> Finding | None:
    """An AWS_IAM function URL answering 4XX after a RemovePermission took out the statement an earlier
    AddPermission wrote for a caller of the URL, whom the policy no longer lets in. Lambda writes no Deny:
    the fix is the statement written again as that AddPermission wrote it. Without that AddPermission in the
    history (older than the window), who was let in is unknown: no finding."""
    url = c.event_sources.get("function_url") or {}
    refused, removed = url.get("client_errors"), _removed_statement(c)
    if url.get("AuthType") != "AWS_IAM" or not positive(refused) or removed is None:
        return None
    sid = (removed.event.get("summary") or {}).get("statementId")
    added = _added_statement(c, str(sid), removed) if sid else None
    request = (added.event.get("summary") or {}) if added else {}
    principal, granted = request.get("principal"), url.get("granted_callers")
    if added is None or not principal or not isinstance(granted, list) or principal in granted:
        return None
    members = {m[:1].lower() + m[1:]: m for m in _ADD_PERMISSION}
    params = {"FunctionName": c.name} | {members[k]: v for k, v in request.items() if k in members}
    pointers = [
        Pointer(
            TOOL,
            "function_url.granted_callers",
            granted,
            f"{principal} is not among the callers the policy lets in",
            "permission_loss",
        ),
        Pointer(TOOL, "function_url.client_errors", refused, f"{refused:g} requests were answered 4XX", None),
    ]
    return Finding(
        "permission_loss",
        f"The resource policy of {c.name} no longer has statement {sid}, which let {principal} invoke it "
        f"through its AWS_IAM function URL ({url.get('FunctionUrl')}): its signed requests are refused "
        "before the function runs.",
        "high",
        pointers,
        Remedy(
            f"Let {principal} invoke {c.name} through the URL again",
            f"Write the statement again as the AddPermission of {added.event.get('time')} wrote it.",
            command(c, "lambda", "AddPermission", params),
            "low",
        ),
        relevant_change=lambda e: e.operation == "RemovePermission",
        resources=(),
    )


def _refused_route(apis: list[Any]) -> tuple[int, int, dict[str, Any]] | None:
    """The first stage that answered 5XX with a route its policy no longer lets API Gateway invoke."""
    for n, stage in enumerate(apis):
        if not isinstance(stage, dict) or not positive(stage.get("server_errors")):
            continue
        for m, route in enumerate(stage.get("routes") or []):
            if route.get("invoke_allowed") is False:
                return n, m, stage
    return None


def refused_api(c: Conversation) -> Finding | None:
    """A REST or HTTP API stage answering 5XX whose route the invoked function's (or alias's) policy no
    longer lets API Gateway invoke: API Gateway refuses before the function runs ("Invalid permissions on
    Lambda function"; an HTTP API's access log: "doesn't have permissions to call the integration").
    Lambda's policies hold only Allow statements (AddPermission writes no Deny), so the fix is the statement
    added back, for every route of the API as the console writes it."""
    apis = c.event_sources.get("apis")
    found = _refused_route(apis) if isinstance(apis, list) else None
    if found is None:
        return None
    n, m, stage = found
    route = stage["routes"][m]
    partition, _, region = str(c.event_sources.get("function_arn", "")).split(":")[1:4]
    api_id, api_name, failed = stage.get("api_id"), stage.get("api_name"), stage["server_errors"]
    removed = _removed_statement(c)
    sid = ((removed.event.get("summary") or {}) if removed else {}).get("statementId")
    params = {
        "FunctionName": c.name,
        **({"Qualifier": route["qualifier"]} if route.get("qualifier") else {}),
        "StatementId": str(sid or f"{api_name}-invoke"),
        "Action": "lambda:InvokeFunction",
        "Principal": "apigateway.amazonaws.com",
        "SourceArn": stage.get("api_source_arn"),
    }
    where = f"stage {stage.get('stage')} of {stage.get('protocol') or 'REST'} API {api_name}"
    pointers = [
        Pointer(
            TOOL,
            f"apis.{n}.routes.{m}.invoke_allowed",
            False,
            f"No statement lets API Gateway invoke it for {route.get('route')}",
            "permission_loss",
        ),
        Pointer(TOOL, f"apis.{n}.server_errors", failed, f"{where} answered {failed:g} requests 5XX", None),
        Pointer(TOOL, f"apis.{n}.api_source_arn", params["SourceArn"], "Every route of the API", None),
    ]
    invoked = f"{c.name}:{route['qualifier']}" if route.get("qualifier") else c.name
    return Finding(
        "permission_loss",
        f"The resource policy of {invoked} no longer lets {where} invoke it: API Gateway answers 500 "
        "before the function runs.",
        "high",
        pointers,
        Remedy(
            f"Let {api_name} invoke {invoked} again",
            "Add the statement back (principal apigateway.amazonaws.com, source every route of the API).",
            command(c, "lambda", "AddPermission", params),
            "low",
        ),
        relevant_change=lambda e: e.operation == "RemovePermission",
        resources=(f"arn:{partition}:apigateway:{region}::/restapis/{api_id}",),
    )


def short_visibility(c: Conversation) -> Finding | None:
    """A mapping's source queue whose visibility timeout is shorter than the function's timeout: messages
    still being processed become visible again and are received twice."""
    timeout = c.event_sources.get("timeout_seconds")
    for index, mapping in mappings(c):
        queue = mapping.get("queue") or {}
        if mapping.get("visibility_timeout_below_function_timeout") is not True or not queue.get("QueueUrl"):
            continue
        if not isinstance(timeout, int):
            return None
        wanted = min(MAX_VISIBILITY, VISIBILITY_FACTOR * timeout)
        where, visibility = f"mappings.{index}", queue.get("VisibilityTimeout")
        pointers = [
            Pointer(
                TOOL,
                f"{where}.visibility_timeout_below_function_timeout",
                True,
                "The queue's visibility timeout is shorter than the function's timeout",
                "configuration_error",
            ),
            Pointer(TOOL, f"{where}.queue.VisibilityTimeout", visibility, "The visibility timeout, s", None),
            Pointer(TOOL, "timeout_seconds", timeout, "The function's timeout, s", None),
        ]
        return Finding(
            "configuration_error",
            f"The visibility timeout of {queue['QueueArn']} ({visibility} s) is shorter than the timeout of "
            f"{c.name} ({timeout} s): messages still being processed become visible again and are received "
            "twice.",
            "medium",
            pointers,
            Remedy(
                f"Set the visibility timeout of {queue['QueueArn']} to {wanted} s",
                f"AWS recommends at least six times the function's timeout ({timeout} s).",
                command(
                    c,
                    "sqs",
                    "SetQueueAttributes",
                    {"QueueUrl": queue["QueueUrl"], "Attributes": {"VisibilityTimeout": str(wanted)}},
                ),
                "low",
            ),
            relevant_change=lambda e: (
                e.operation == "SetQueueAttributes"
                or (e.operation == "UpdateFunctionConfiguration" and "timeout" in e.changed_fields)
            ),
            resources=(str(queue["QueueArn"]),),
        )
    return None
