"""The allowlist: every AWS operation a remediation may apply, one declaration each. A declaration says what
the call touches, how to read afresh the state it changes (the step's precondition), how to build from that
read the call that puts it back (its inverse, never guessed), which parameters it refuses and its risk. The
Resolver, the Critic, the executor and the executor's IAM policy all read this table; an operation not in
it is never applied.

Risk is the declaration's, never the model's: low for a setting put back on the incident's own function
(an alias moved back, a recorded setting, concurrency, a mapping's setting), high for IAM.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from supervisor.remediation.plan import ApiCall, Risk

Params = Mapping[str, Any]
State = dict[str, Any]
Reader = Callable[[str], Any]  # a botocore service name -> a read-only boto3 client for it


VOLATILE: Final = ("RevisionId",)  # changes with every write: part of a precondition, not of a state put back


def settled(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` without what every write changes: what an undo must give back."""
    return {key: value for key, value in state.items() if key not in VOLATILE}


class ReadError(Exception):
    """The fresh read a step needs failed or found nothing to change: the step cannot be planned."""


def function_name(value: object) -> str:
    """A function's name from its name, partial ARN or ARN (``arn:aws:lambda:r:a:function:name[:q]``)."""
    text = str(value)
    parts = text.split(":")
    if text.startswith("arn:") and len(parts) >= 7:
        return parts[6]
    return parts[1] if len(parts) >= 2 and parts[0].isdigit() else parts[0]


@dataclass(frozen=True)
class Operation:
    service: str  # botocore's service name
    name: str  # botocore's operation name
    risk: Risk
    fixes: str  # the kind of fix, for people
    allowed: frozenset[str]  # the parameters the call may carry; any other is refused
    reads: tuple[str, ...]  # the IAM actions of ``read``
    read: Callable[[Reader, Params], State]
    inverse: Callable[[Params, State], ApiCall]
    targets: Callable[[Params, State], tuple[str, ...]]  # the resources it changes, by name
    refuse: Callable[[Params, State], str | None] = lambda _params, _state: None

    @property
    def key(self) -> tuple[str, str]:
        return self.service, self.name

    def refusal(self, params: Params, state: State) -> str | None:
        """Why the call may not be applied with these parameters on this state; None when it may."""
        extra = sorted(set(params) - self.allowed)
        if extra:
            return f"{self.name} may set only {', '.join(sorted(self.allowed))}, not {', '.join(extra)}"
        return self.refuse(params, state)


def _function(params: Params, _state: State) -> tuple[str, ...]:
    return (function_name(params["FunctionName"]),)


def _role(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["RoleName"]),)


# --- Lambda: an alias, recorded settings, reserved concurrency, an event-source mapping -----------------


def _read_alias(client: Reader, params: Params) -> State:
    alias = client("lambda").get_alias(FunctionName=params["FunctionName"], Name=params["Name"])
    return {
        "FunctionVersion": alias["FunctionVersion"],
        "RoutingConfig": alias.get("RoutingConfig") or {"AdditionalVersionWeights": {}},
        "RevisionId": alias.get("RevisionId"),
    }


def _alias_back(params: Params, state: State) -> ApiCall:
    return ApiCall(
        service="lambda",
        operation="UpdateAlias",
        params={
            "FunctionName": params["FunctionName"],
            "Name": params["Name"],
            "FunctionVersion": state["FunctionVersion"],
            "RoutingConfig": state["RoutingConfig"],
        },
    )


def _unmoved_alias(params: Params, state: State) -> str | None:
    if params["FunctionVersion"] == state["FunctionVersion"]:
        return f"alias {params['Name']} already points at version {state['FunctionVersion']}: nothing to do"
    return None


SETTINGS: Final = ("Timeout", "MemorySize", "Handler", "EphemeralStorage")  # never Environment: sensitive


def _read_settings(client: Reader, params: Params) -> State:
    config = client("lambda").get_function_configuration(FunctionName=params["FunctionName"])
    state = {key: config.get(key) for key in SETTINGS if key in params}
    state["RevisionId"] = config.get("RevisionId")
    return state


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
    if all(params[key] == state[key] for key in SETTINGS if key in params):
        return "the function already has these settings: nothing to do"
    return None


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


def _unset_mapping(params: Params, state: State) -> str | None:
    settings = [key for key in MAPPING_SETTINGS if key in params]
    if not settings:
        return "the call sets none of the mapping settings a remediation may put back"
    if any(state[key] is None for key in settings):
        return "the mapping does not report every setting the call changes, so its undo is unknown"
    return None


# --- IAM: an inline policy put back or taken away, a managed policy attached or detached ----------------

_NEVER_ALLOWED: Final = ("iam:passrole",)
_WIDE_SERVICES: Final = ("iam", "sts")


def _listed(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def statement_refusal(document: object, *, resource_wildcard: bool) -> str | None:
    """Why a policy document is too wide for a fix: an allowed wildcard action, any IAM or STS wildcard,
    ``iam:PassRole``, ``NotAction``/``NotResource``, and (unless ``resource_wildcard``) the resource ``*``."""
    if not isinstance(document, Mapping):
        return "the policy document is not a JSON object"
    statements = document.get("Statement")
    for statement in statements if isinstance(statements, list) else [statements]:
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        if "NotAction" in statement or "NotResource" in statement:
            return "an Allow with NotAction or NotResource grants everything it does not name"
        for action in _listed(statement.get("Action")):
            lowered = action.lower()
            service = lowered.split(":", 1)[0]
            if lowered == "*" or lowered.endswith(":*") or lowered in _NEVER_ALLOWED:
                return f"the document allows {action}"
            if service in _WIDE_SERVICES and "*" in lowered:
                return f"the document allows {action}"
        if not resource_wildcard and "*" in _listed(statement.get("Resource")):
            return "the document allows its actions on every resource (*)"
    return None


def _read_inline(client: Reader, params: Params) -> State:
    iam = client("iam")
    try:
        policy = iam.get_role_policy(RoleName=params["RoleName"], PolicyName=params["PolicyName"])
    except iam.exceptions.NoSuchEntityException:
        return {"PolicyDocument": None}
    document = policy["PolicyDocument"]
    return {"PolicyDocument": json.loads(document) if isinstance(document, str) else document}


def _inline_back(params: Params, state: State) -> ApiCall:
    names = {"RoleName": params["RoleName"], "PolicyName": params["PolicyName"]}
    if state["PolicyDocument"] is None:
        return ApiCall(service="iam", operation="DeleteRolePolicy", params=names)
    document = json.dumps(state["PolicyDocument"], separators=(",", ":"))
    return ApiCall(service="iam", operation="PutRolePolicy", params={**names, "PolicyDocument": document})


def _wide_inline(params: Params, _state: State) -> str | None:
    try:
        document = json.loads(str(params["PolicyDocument"]))
    except ValueError:
        return "the policy document is not JSON"
    return statement_refusal(document, resource_wildcard=False)


def _no_inline(params: Params, state: State) -> str | None:
    if state["PolicyDocument"] is None:
        return f"{params['RoleName']} has no inline policy {params['PolicyName']}: nothing to delete"
    return None


def _read_attachment(client: Reader, params: Params) -> State:
    iam = client("iam")
    arn = str(params["PolicyArn"])
    attached = [
        item["PolicyArn"]
        for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=params["RoleName"])
        for item in page["AttachedPolicies"]
    ]
    try:
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    except iam.exceptions.NoSuchEntityException as error:
        raise ReadError(f"policy {arn} does not exist") from error
    return {
        "Attached": arn in attached,
        "PolicyDocument": json.loads(document) if isinstance(document, str) else document,
    }


_ATTACHMENT_READS: Final = ("iam:ListAttachedRolePolicies", "iam:GetPolicy", "iam:GetPolicyVersion")


def _attachment_back(params: Params, state: State) -> ApiCall:
    names = {"RoleName": params["RoleName"], "PolicyArn": params["PolicyArn"]}
    return ApiCall(
        service="iam", operation="AttachRolePolicy" if state["Attached"] else "DetachRolePolicy", params=names
    )


def _wide_attachment(params: Params, state: State) -> str | None:
    arn = str(params["PolicyArn"])
    if arn.startswith("arn:aws:iam::aws:"):
        return f"{arn} is an AWS managed policy: a fix attaches only the account's own policies"
    if state["Attached"]:
        return f"{arn} is already attached: nothing to do"
    return statement_refusal(state["PolicyDocument"], resource_wildcard=True)


def _not_attached(params: Params, state: State) -> str | None:
    return None if state["Attached"] else f"{params['PolicyArn']} is not attached: nothing to detach"


OPERATIONS: Final[tuple[Operation, ...]] = (
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
    ),
    Operation(
        "lambda",
        "UpdateFunctionConfiguration",
        "low",
        "put back a recorded setting (timeout, memory, handler, ephemeral storage)",
        frozenset({"FunctionName", *SETTINGS}),
        ("lambda:GetFunctionConfiguration",),
        _read_settings,
        _settings_back,
        _function,
        _unchanged_settings,
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
    ),
    Operation(
        "iam",
        "PutRolePolicy",
        "high",
        "put back an inline policy of the function's role, or add the one missing statement",
        frozenset({"RoleName", "PolicyName", "PolicyDocument"}),
        ("iam:GetRolePolicy",),
        _read_inline,
        _inline_back,
        _role,
        _wide_inline,
    ),
    Operation(
        "iam",
        "DeleteRolePolicy",
        "high",
        "take away an inline policy that denies",
        frozenset({"RoleName", "PolicyName"}),
        ("iam:GetRolePolicy",),
        _read_inline,
        _inline_back,
        _role,
        _no_inline,
    ),
    Operation(
        "iam",
        "AttachRolePolicy",
        "high",
        "attach again a policy of the account that the role had",
        frozenset({"RoleName", "PolicyArn"}),
        _ATTACHMENT_READS,
        _read_attachment,
        _attachment_back,
        _role,
        _wide_attachment,
    ),
    Operation(
        "iam",
        "DetachRolePolicy",
        "high",
        "detach a policy that denies",
        frozenset({"RoleName", "PolicyArn"}),
        _ATTACHMENT_READS,
        _read_attachment,
        _attachment_back,
        _role,
        _not_attached,
    ),
)

BY_CALL: Final[Mapping[tuple[str, str], Operation]] = {operation.key: operation for operation in OPERATIONS}
READ_ACTIONS: Final[tuple[str, ...]] = tuple(sorted({action for op in OPERATIONS for action in op.reads}))
