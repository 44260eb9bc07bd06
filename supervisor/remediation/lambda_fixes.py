"""The allowlisted fixes on a Lambda function itself: its alias, its recorded settings, its reserved
concurrency, its event-source mapping (its settings, or the mapping made again), a statement of its
resource policy put back."""

from __future__ import annotations

import json
from typing import Any, Final

from supervisor.remediation.operation import (
    CREATED,
    Operation,
    Params,
    Reader,
    ReadError,
    State,
    function_name,
)
from supervisor.remediation.plan import ApiCall


def _function(params: Params, _state: State) -> tuple[str, ...]:
    return (function_name(params["FunctionName"]),)


def _read_alias(client: Reader, params: Params) -> State:
    alias = client("lambda").get_alias(FunctionName=params["FunctionName"], Name=params["Name"])
    return {
        "FunctionVersion": alias["FunctionVersion"],
        "RoutingConfig": alias.get("RoutingConfig"),  # as read: an alias without one reads back without one
        "RevisionId": alias.get("RevisionId"),
    }


def _alias_back(params: Params, state: State) -> ApiCall:
    """The alias's version and routing as read. UpdateAlias leaves a routing it is not given as it was, so
    one is passed only where there was one, or where the fix set one (cleared then, with no weights)."""
    routing = state["RoutingConfig"]
    if routing is None and "RoutingConfig" in params:
        routing = {"AdditionalVersionWeights": {}}
    return ApiCall(
        service="lambda",
        operation="UpdateAlias",
        params={
            "FunctionName": params["FunctionName"],
            "Name": params["Name"],
            "FunctionVersion": state["FunctionVersion"],
            **({"RoutingConfig": routing} if routing is not None else {}),
        },
    )


def _unmoved_alias(params: Params, state: State) -> str | None:
    if params["FunctionVersion"] == state["FunctionVersion"]:
        return f"alias {params['Name']} already points at version {state['FunctionVersion']}: nothing to do"
    return None


# Never Environment: its values are sensitive. DeadLetterConfig reads {"TargetArn": ""} where there is none,
# which is also how UpdateFunctionConfiguration removes one (API_DeadLetterConfig).
SETTINGS: Final = ("Timeout", "MemorySize", "Handler", "EphemeralStorage", "DeadLetterConfig")


def _read_settings(client: Reader, params: Params) -> State:
    config = client("lambda").get_function_configuration(FunctionName=params["FunctionName"])
    state = {key: config.get(key) for key in SETTINGS if key in params}
    if "DeadLetterConfig" in params:
        target = (config.get("DeadLetterConfig") or {}).get("TargetArn")
        state["DeadLetterConfig"] = {"TargetArn": target or ""}
    state["RevisionId"] = config.get("RevisionId")
    return state


def _dead_letter_target(params: Params) -> str:
    return str((params.get("DeadLetterConfig") or {}).get("TargetArn") or "")


def _settings_targets(params: Params, _state: State) -> tuple[str, ...]:
    """The function, and the dead-letter queue or topic the call sends its failed events to."""
    target = _dead_letter_target(params)
    return (function_name(params["FunctionName"]), *((target,) if target else ()))


def _settings_back(params: Params, state: State) -> ApiCall:
    previous = {key: state[key] for key in SETTINGS if key in params}
    return ApiCall(
        service="lambda",
        operation="UpdateFunctionConfiguration",
        params={"FunctionName": params["FunctionName"], **previous},
    )


def _unchanged_settings(params: Params, state: State) -> str | None:
    if not any(key in params for key in SETTINGS):
        return "the call sets none of the settings a remediation may put back"
    if "DeadLetterConfig" in params and (
        set(params["DeadLetterConfig"] or {}) != {"TargetArn"} or not _dead_letter_target(params)
    ):
        return "a fix puts a dead-letter queue back (its TargetArn), never removes one or sets more"
    if _settings_in_place(params, state):
        return "the function already has these settings: nothing to do"
    return None


def _settings_in_place(params: Params, state: State) -> bool:
    return all(params[key] == state[key] for key in SETTINGS if key in params)


def _read_concurrency(client: Reader, params: Params) -> State:
    reserved = client("lambda").get_function_concurrency(FunctionName=params["FunctionName"])
    return {"ReservedConcurrentExecutions": reserved.get("ReservedConcurrentExecutions")}


def _concurrency_back(params: Params, state: State) -> ApiCall:
    reserved = state["ReservedConcurrentExecutions"]
    if reserved is None:
        return ApiCall(
            service="lambda",
            operation="DeleteFunctionConcurrency",
            params={"FunctionName": params["FunctionName"]},
        )
    return ApiCall(
        service="lambda",
        operation="PutFunctionConcurrency",
        params={"FunctionName": params["FunctionName"], "ReservedConcurrentExecutions": reserved},
    )


def _no_reservation(_params: Params, state: State) -> str | None:
    if state["ReservedConcurrentExecutions"] is None:
        return "the function reserves no concurrency: nothing to delete"
    return None


MAPPING_SETTINGS: Final = (
    "Enabled",
    "BatchSize",
    "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
)


def _read_mapping(client: Reader, params: Params) -> State:
    mapping = client("lambda").get_event_source_mapping(UUID=params["UUID"])
    state: State = {"FunctionArn": mapping["FunctionArn"]}
    for key in MAPPING_SETTINGS:
        if key == "Enabled":
            state[key] = mapping.get("State") in ("Enabled", "Enabling", "Creating", "Updating")
        elif key in params:
            state[key] = mapping.get(key)
    return state


def _mapping_back(params: Params, state: State) -> ApiCall:
    previous = {key: state[key] for key in MAPPING_SETTINGS if key in params}
    return ApiCall(
        service="lambda", operation="UpdateEventSourceMapping", params={"UUID": params["UUID"], **previous}
    )


def _mapping_function(_params: Params, state: State) -> tuple[str, ...]:
    return (function_name(state["FunctionArn"]),)


def _mapping_in_place(params: Params, state: State) -> bool:
    return all(params[key] == state[key] for key in MAPPING_SETTINGS if key in params)


def _unset_mapping(params: Params, state: State) -> str | None:
    settings = [key for key in MAPPING_SETTINGS if key in params]
    if not settings:
        return "the call sets none of the mapping settings a remediation may put back"
    if any(state[key] is None for key in settings):
        return "the mapping does not report every setting the call changes, so its undo is unknown"
    return None


# What a mapping made again may carry: its source and function, and the settings it was created with (each
# a value a change before the trigger recorded: ``Operation.recorded``).
CREATE_SETTINGS: Final = ("Enabled", "BatchSize", "MaximumBatchingWindowInSeconds", "FunctionResponseTypes")


def _read_source(client: Reader, params: Params) -> State:
    """The live mapping from the call's source to its function (None when there is none). One being deleted
    is not: "a mapping enters a Deleting state and might not be completely deleted for several seconds"
    (https://docs.aws.amazon.com/lambda/latest/api/API_DeleteEventSourceMapping.html)."""
    found = client("lambda").list_event_source_mappings(
        EventSourceArn=params["EventSourceArn"], FunctionName=params["FunctionName"]
    )
    live = [m["UUID"] for m in found.get("EventSourceMappings") or [] if m.get("State") != "Deleting"]
    return {
        "FunctionName": function_name(params["FunctionName"]),
        "EventSourceArn": params["EventSourceArn"],
        "UUID": live[0] if live else None,
    }


def _read_mapping_of(client: Reader, params: Params) -> State:
    mapping = client("lambda").get_event_source_mapping(UUID=params["UUID"])
    function = function_name(mapping["FunctionArn"])
    return {"FunctionName": function, "EventSourceArn": mapping.get("EventSourceArn"), "UUID": params["UUID"]}


def _source_unmapped(params: Params, _state: State) -> ApiCall:
    """The mapping this step creates, deleted: its UUID is the one read after the call (``CREATED``)."""
    return ApiCall(service="lambda", operation="DeleteEventSourceMapping", params={"UUID": CREATED})


def _mapped_again(_params: Params, state: State) -> ApiCall:
    # Never applied: a deletion is on the allowlist only as the undo of a mapping made again.
    return ApiCall(
        service="lambda",
        operation="CreateEventSourceMapping",
        params={"EventSourceArn": state["EventSourceArn"], "FunctionName": state["FunctionName"]},
    )


def _source_and_function(params: Params, state: State) -> tuple[str, ...]:
    source = params.get("EventSourceArn") or state["EventSourceArn"]
    return (function_name(params.get("FunctionName") or state["FunctionName"]), str(source))


def _already_mapped(params: Params, state: State) -> str | None:
    if state["UUID"] is not None:
        return f"{params['EventSourceArn']} is mapped to it already ({state['UUID']}): nothing to do"
    return None


# A resource-policy statement as AddPermission writes it: each condition key and the parameter it came from.
_CONDITIONS: Final = {
    ("ArnLike", "AWS:SourceArn"): "SourceArn",
    ("StringEquals", "AWS:SourceAccount"): "SourceAccount",
    ("StringEquals", "lambda:FunctionUrlAuthType"): "FunctionUrlAuthType",
    ("Bool", "lambda:InvokedViaFunctionUrl"): "InvokedViaFunctionUrl",
}
_INVOKE_ACTIONS: Final = ("lambda:InvokeFunction", "lambda:InvokeFunctionUrl")


def _where(params: Params) -> dict[str, Any]:
    where = {"FunctionName": params["FunctionName"]}
    return where | ({"Qualifier": params["Qualifier"]} if "Qualifier" in params else {})


def _rebuilt(statement: dict[str, Any]) -> dict[str, Any]:
    """The AddPermission parameters that write ``statement`` again; ReadError when it holds more."""
    principal = statement.get("Principal")
    if isinstance(principal, dict) and len(principal) == 1:
        principal = next(iter(principal.values()))
    params: dict[str, Any] = {"Action": statement.get("Action"), "Principal": principal}
    for operator, keys in (statement.get("Condition") or {}).items():
        for key, value in keys.items():
            name = _CONDITIONS.get((operator, key))
            if name is None:
                raise ReadError(
                    f"statement {statement.get('Sid')} has a condition AddPermission cannot write"
                )
            params[name] = value == "true" if name == "InvokedViaFunctionUrl" else value
    return params


def _read_statement(client: Reader, params: Params) -> State:
    lambda_ = client("lambda")
    try:
        policy = lambda_.get_policy(**_where(params))
    except lambda_.exceptions.ResourceNotFoundException:
        return {"Statement": None}
    statements = json.loads(policy["Policy"]).get("Statement") or []
    found = next((s for s in statements if s.get("Sid") == params["StatementId"]), None)
    return {
        "Statement": None if found is None else _rebuilt(found),
        "RevisionId": policy.get("RevisionId"),
    }


def _statement_back(params: Params, state: State) -> ApiCall:
    names = {**_where(params), "StatementId": params["StatementId"]}
    if state["Statement"] is None:
        return ApiCall(service="lambda", operation="RemovePermission", params=names)
    return ApiCall(service="lambda", operation="AddPermission", params={**names, **state["Statement"]})


def _statement_in_place(params: Params, state: State) -> bool:
    names = {"FunctionName", "Qualifier", "StatementId"}
    return bool(state["Statement"] == {key: value for key, value in params.items() if key not in names})


def _wide_statement(params: Params, state: State) -> str | None:
    if state["Statement"] is not None:
        return f"statement {params['StatementId']} is already in the policy: nothing to add"
    if params["Action"] not in _INVOKE_ACTIONS:
        return f"a fix lets a caller invoke the function, not {params['Action']}"
    scoped = ("SourceArn", "SourceAccount", "FunctionUrlAuthType", "InvokedViaFunctionUrl")
    if params["Principal"] == "*" and not any(key in params for key in scoped):
        return "the statement would let anyone invoke the function, by any path"
    return None


FIXES: Final[tuple[Operation, ...]] = (
    Operation(
        "lambda",
        "UpdateAlias",
        "low",
        "move an alias back to the version it held",
        frozenset({"FunctionName", "Name", "FunctionVersion"}),
        ("lambda:GetAlias",),
        _read_alias,
        _alias_back,
        _function,
        _unmoved_alias,
        done=lambda params, state: params["FunctionVersion"] == state["FunctionVersion"],
    ),
    Operation(
        "lambda",
        "UpdateFunctionConfiguration",
        "low",
        "put back a recorded setting (timeout, memory, handler, ephemeral storage, dead-letter queue)",
        frozenset({"FunctionName", *SETTINGS}),
        ("lambda:GetFunctionConfiguration",),
        _read_settings,
        _settings_back,
        _settings_targets,
        _unchanged_settings,
        recorded=SETTINGS,
        done=_settings_in_place,
    ),
    Operation(
        "lambda",
        "PutFunctionConcurrency",
        "low",
        "put back reserved concurrency",
        frozenset({"FunctionName", "ReservedConcurrentExecutions"}),
        ("lambda:GetFunctionConcurrency",),
        _read_concurrency,
        _concurrency_back,
        _function,
        done=lambda params, state: (
            params["ReservedConcurrentExecutions"] == state["ReservedConcurrentExecutions"]
        ),
    ),
    Operation(
        "lambda",
        "DeleteFunctionConcurrency",
        "low",
        "remove a concurrency reservation",
        frozenset({"FunctionName"}),
        ("lambda:GetFunctionConcurrency",),
        _read_concurrency,
        _concurrency_back,
        _function,
        _no_reservation,
        done=lambda _params, state: state["ReservedConcurrentExecutions"] is None,
    ),
    Operation(
        "lambda",
        "UpdateEventSourceMapping",
        "low",
        "re-enable a mapping or put back its retry settings",
        frozenset({"UUID", *MAPPING_SETTINGS}),
        ("lambda:GetEventSourceMapping",),
        _read_mapping,
        _mapping_back,
        _mapping_function,
        _unset_mapping,
        done=_mapping_in_place,
    ),
    Operation(
        "lambda",
        "CreateEventSourceMapping",
        "low",
        "map a source to the function again, with the settings it was created with",
        frozenset({"EventSourceArn", "FunctionName", *CREATE_SETTINGS}),
        ("lambda:ListEventSourceMappings",),
        _read_source,
        _source_unmapped,
        _source_and_function,
        _already_mapped,
        recorded=CREATE_SETTINGS,
    ),
    Operation(
        "lambda",
        "DeleteEventSourceMapping",
        "low",
        "delete a mapping again (the undo of making it again)",
        frozenset({"UUID"}),
        ("lambda:GetEventSourceMapping",),
        _read_mapping_of,
        _mapped_again,
        _source_and_function,
        fix=False,
    ),
    Operation(
        "lambda",
        "AddPermission",
        "high",
        "put back the statement that let a caller invoke the function",
        frozenset({"FunctionName", "Qualifier", "StatementId", "Action", "Principal", *_CONDITIONS.values()}),
        ("lambda:GetPolicy",),
        _read_statement,
        _statement_back,
        _function,
        _wide_statement,
        done=_statement_in_place,
    ),
    Operation(
        "lambda",
        "RemovePermission",
        "high",
        "take a statement out of the resource policy again (the undo of adding it)",
        frozenset({"FunctionName", "Qualifier", "StatementId"}),
        ("lambda:GetPolicy",),
        _read_statement,
        _statement_back,
        _function,
        fix=False,
    ),
)
