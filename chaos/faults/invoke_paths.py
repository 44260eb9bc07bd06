"""Faults on the paths by which callers and Lambda's asynchronous invocation reach a function; restore puts
the saved state back exactly.

- ``permission-remove`` (``apply(..., statement_id=None)``): ``RemovePermission`` of one statement of the
  resource-based policies of the function and its aliases (each alias has a policy of its own, as an API's
  integration on ``function:alias`` needs) that lets a caller invoke it: ``statement_id``, or else the only
  such statement, or else the only one whose principal is ``sns.amazonaws.com``. The saved state is every
  such statement, an alias's marked with its ``Qualifier``; restore adds back each one that is missing from
  its policy with ``AddPermission`` (its
  principal, action, ``SourceArn``, ``SourceAccount``, ``PrincipalOrgID``, ``FunctionUrlAuthType``,
  ``InvokedViaFunctionUrl``). A statement with another condition is refused: ``AddPermission`` could not
  write it again. A function URL's ``lambda:InvokeFunctionUrl`` statement counts as letting a caller invoke.
- ``sns-unsubscribe`` (``apply(..., topic=None)``): ``Unsubscribe`` of the function's ``lambda``
  subscription to ``topic`` (a name or ARN; by default its only one). The saved state is every such
  subscription with its filter, redrive and delivery policies; restore subscribes the function again to
  each topic it is missing from (SNS gives the subscription a new ARN).
- ``async-dlq-remove`` (no parameter): ``UpdateFunctionConfiguration`` with ``DeadLetterConfig``
  ``TargetArn`` "" — how a dead-letter queue is removed: the API's ``TargetArn`` pattern admits the empty
  string, ``(arn:(aws[a-zA-Z-]*)?:[a-z0-9-.]+:.*)|()`` (botocore's model of
  https://docs.aws.amazon.com/lambda/latest/api/API_DeadLetterConfig.html), and it is what Terraform's
  provider sends to remove one (hashicorp/terraform-provider-aws#2684) and Ansible's module documents
  ("To delete set dead_letter_arn to an empty string", ansible/ansible#21720). Refused when the function has
  no dead-letter queue. Restore: the saved ``TargetArn``.
- ``async-retries`` (``apply(..., attempts=None, max_age=None)``): ``PutFunctionEventInvokeConfig`` with
  ``MaximumRetryAttempts`` (0-2) and/or ``MaximumEventAgeInSeconds`` (60-21600), the destinations kept
  (Put overwrites the whole configuration: https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html).
  Restore: the saved configuration put back, or deleted (``DeleteFunctionEventInvokeConfig``) if there
  was none.
"""

from __future__ import annotations

import json
from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.config import update_configuration
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import give_up, read_unless

INVOKE_ACTIONS = ("lambda:InvokeFunction", "lambda:InvokeFunctionUrl", "lambda:*", "*")
SNS_PRINCIPAL = "sns.amazonaws.com"
# Condition keys AddPermission writes, and the parameter each comes from.
_CONDITIONS = {
    ("ArnLike", "AWS:SourceArn"): "SourceArn",
    ("StringEquals", "AWS:SourceAccount"): "SourceAccount",
    ("StringEquals", "aws:PrincipalOrgID"): "PrincipalOrgID",
    ("StringEquals", "lambda:FunctionUrlAuthType"): "FunctionUrlAuthType",
    ("Bool", "lambda:InvokedViaFunctionUrl"): "InvokedViaFunctionUrl",  # a boolean parameter
}
_SUBSCRIPTION_ATTRIBUTES = ("FilterPolicy", "FilterPolicyScope", "RedrivePolicy", "DeliveryPolicy")


# --- permission-remove ----------------------------------------------------------------------------------


def _statements(chaos: Chaos, function_name: str, qualifier: str | None = None) -> list[dict[str, Any]]:
    """The statements of the function's (or its alias's) policy, an alias's marked with its Qualifier."""
    policy = read_unless(
        chaos,
        ("ResourceNotFoundException",),
        "lambda",
        "get_policy",
        FunctionName=function_name,
        **({"Qualifier": qualifier} if qualifier else {}),
    )
    if policy is None:
        return []
    statements = json.loads(policy["Policy"]).get("Statement", [])
    listed = [statements] if isinstance(statements, dict) else list(statements)
    return [{**s, "Qualifier": qualifier} if qualifier else s for s in listed]


def _every_statement(chaos: Chaos, function_name: str) -> list[dict[str, Any]]:
    """The function's statements, then each alias's."""
    aliases = chaos.read("lambda", "list_aliases", FunctionName=function_name).get("Aliases", [])
    found = _statements(chaos, function_name)
    for alias in aliases:
        found += _statements(chaos, function_name, alias["Name"])
    return found


def _key(statement: dict[str, Any]) -> tuple[str | None, str]:
    return statement.get("Qualifier"), str(statement["Sid"])


def _principal(statement: dict[str, Any]) -> str:
    principal = statement.get("Principal")
    if isinstance(principal, dict) and len(principal) == 1:
        return str(next(iter(principal.values())))
    return str(principal)


def _invokes(statement: dict[str, Any]) -> bool:
    actions = statement.get("Action")
    listed = [actions] if isinstance(actions, str) else list(actions or [])
    return statement.get("Effect") == "Allow" and any(a in INVOKE_ACTIONS for a in listed)


def add_permission_params(statement: dict[str, Any]) -> dict[str, Any]:
    """The ``AddPermission`` parameters that write ``statement`` again; ChaosRefused when none can."""
    params: dict[str, Any] = {
        "StatementId": statement["Sid"],
        "Action": statement["Action"],
        "Principal": _principal(statement),
        **({"Qualifier": statement["Qualifier"]} if statement.get("Qualifier") else {}),
    }
    for operator, conditions in (statement.get("Condition") or {}).items():
        for key, value in conditions.items():
            member = _CONDITIONS.get((operator, key))
            if member is None or not isinstance(value, str):
                raise ChaosRefused(
                    f"the statement {statement['Sid']} has the condition {operator} {key}, which "
                    "AddPermission cannot write again: it could not be restored exactly"
                )
            params[member] = value == "true" if operator == "Bool" else value
    return params


def _capture_permission(chaos: Chaos, target: Target) -> dict[str, Any]:
    statements = [s for s in _every_statement(chaos, target.function_name) if _invokes(s)]
    if not statements:
        raise ChaosRefused(
            f"nothing to remove: the resource-based policies of {target.function_name} and its aliases let "
            "no caller invoke it"
        )
    return {"function": target.function_name, "statements": statements}


def _named(statement: dict[str, Any]) -> str:
    qualifier = statement.get("Qualifier")
    return f"{statement['Sid']} (alias {qualifier})" if qualifier else str(statement["Sid"])


def _chosen_statement(saved: list[dict[str, Any]], statement_id: str | None) -> dict[str, Any] | str:
    """The statement to remove, or why none can be chosen."""
    sids = sorted(_named(s) for s in saved)
    if statement_id is not None:
        found = [s for s in saved if s["Sid"] == statement_id]
        if len(found) == 1:
            return found[0]
        return (
            f"several policies have a statement {statement_id!r} ({sids})"
            if found
            else f"no statement {statement_id!r} lets a caller invoke it (statements: {sids})"
        )
    if len(saved) == 1:
        return saved[0]
    sns = [s for s in saved if _principal(s) == SNS_PRINCIPAL]
    if len(sns) == 1:
        return sns[0]
    return f"several statements let callers invoke it ({sids}): choose one with statement_id"


def _apply_permission(
    chaos: Chaos, target: Target, prior: dict[str, Any], *, statement_id: str | None = None
) -> None:
    function_name = prior["function"]
    chosen = _chosen_statement(prior["statements"], statement_id)
    current = {_key(s) for s in _every_statement(chaos, function_name)}
    unchanged = current >= {_key(s) for s in prior["statements"]}
    if isinstance(chosen, str):
        give_up(
            chaos,
            "permission-remove",
            function_name,
            ChaosRefused(f"permission-remove on {function_name}: {chosen}"),
            unchanged=unchanged,
        )
    try:
        add_permission_params(chosen)
    except ChaosRefused as refused:
        give_up(chaos, "permission-remove", function_name, refused, unchanged=unchanged)
    chaos.call(
        "lambda",
        "remove_permission",
        FunctionName=function_name,
        StatementId=chosen["Sid"],
        **({"Qualifier": chosen["Qualifier"]} if chosen.get("Qualifier") else {}),
        tolerate=("ResourceNotFoundException",),
    )


def _revert_permission(chaos: Chaos, prior: dict[str, Any]) -> None:
    present = {_key(s) for s in _every_statement(chaos, prior["function"])}
    for statement in prior["statements"]:
        if _key(statement) not in present:
            chaos.call(
                "lambda", "add_permission", FunctionName=prior["function"], **add_permission_params(statement)
            )


# --- sns-unsubscribe ------------------------------------------------------------------------------------


def _function_of(endpoint: str) -> str:
    """The function name in a lambda endpoint ``arn:aws:lambda:<region>:<account>:function:<name>[:q]``."""
    parts = endpoint.split(":")
    return parts[6] if len(parts) > 6 and parts[5] == "function" else ""


def _subscriptions(chaos: Chaos, function_arn: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    name, account = _function_of(function_arn), function_arn.split(":")[4]
    while True:
        page = chaos.read("sns", "list_subscriptions", **params)
        found += [
            s
            for s in page["Subscriptions"]
            if s["Protocol"] == "lambda"
            and _function_of(s["Endpoint"]) == name
            and s["Endpoint"].split(":")[4] == account
        ]
        if not page.get("NextToken"):
            return found
        params["NextToken"] = page["NextToken"]


def _capture_subscription(chaos: Chaos, target: Target) -> dict[str, Any]:
    saved = []
    for subscription in _subscriptions(chaos, target.configuration["FunctionArn"]):
        attributes = chaos.read(
            "sns", "get_subscription_attributes", SubscriptionArn=subscription["SubscriptionArn"]
        )
        kept = {k: v for k, v in attributes["Attributes"].items() if k in _SUBSCRIPTION_ATTRIBUTES and v}
        saved.append(
            {
                "topic": subscription["TopicArn"],
                "endpoint": subscription["Endpoint"],
                "arn": subscription["SubscriptionArn"],
                "attributes": kept,
            }
        )
    if not saved:
        raise ChaosRefused(
            f"nothing to unsubscribe: no SNS topic has a lambda subscription to {target.function_name}"
        )
    return {
        "function": target.function_name,
        "function_arn": target.configuration["FunctionArn"],
        "subscriptions": saved,
    }


def _apply_subscription(
    chaos: Chaos, target: Target, prior: dict[str, Any], *, topic: str | None = None
) -> None:
    saved: list[dict[str, Any]] = prior["subscriptions"]
    chosen = [s for s in saved if topic in (None, s["topic"], s["topic"].rsplit(":", 1)[-1])]
    if len(chosen) != 1:
        topics = sorted(s["topic"] for s in saved)
        why = (
            f"no subscription to {topic}"
            if not chosen
            else "it is subscribed to several topics: choose one with topic"
        )
        current = {(s["TopicArn"], s["Endpoint"]) for s in _subscriptions(chaos, prior["function_arn"])}
        unchanged = current >= {(s["topic"], s["endpoint"]) for s in saved}
        error = ChaosRefused(f"sns-unsubscribe on {prior['function']}: {why} (topics: {topics})")
        give_up(chaos, "sns-unsubscribe", prior["function"], error, unchanged=unchanged)
    current_arns = {
        (s["TopicArn"], s["Endpoint"]): s["SubscriptionArn"]
        for s in _subscriptions(chaos, prior["function_arn"])
    }
    arn = current_arns.get((chosen[0]["topic"], chosen[0]["endpoint"]))
    if arn is None:
        chaos.say(
            f"  {prior['function']} is not subscribed to {chosen[0]['topic']} any more: nothing to change"
        )
        return
    chaos.call("sns", "unsubscribe", SubscriptionArn=arn)


def _revert_subscription(chaos: Chaos, prior: dict[str, Any]) -> None:
    present = {(s["TopicArn"], s["Endpoint"]) for s in _subscriptions(chaos, prior["function_arn"])}
    for saved in prior["subscriptions"]:
        if (saved["topic"], saved["endpoint"]) in present:
            continue
        chaos.call(
            "sns",
            "subscribe",
            TopicArn=saved["topic"],
            Protocol="lambda",
            Endpoint=saved["endpoint"],
            ReturnSubscriptionArn=True,
            **({"Attributes": saved["attributes"]} if saved["attributes"] else {}),
        )


# --- async-dlq-remove -----------------------------------------------------------------------------------


def _capture_dlq(chaos: Chaos, target: Target) -> dict[str, Any]:
    target_arn = (target.configuration.get("DeadLetterConfig") or {}).get("TargetArn")
    if not target_arn:
        raise ChaosRefused(
            f"nothing to remove: {target.function_name} has no dead-letter queue (DeadLetterConfig)"
        )
    return {"function": target.function_name, "target_arn": target_arn}


def _apply_dlq(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    update_configuration(chaos, prior["function"], DeadLetterConfig={"TargetArn": ""})


def _revert_dlq(chaos: Chaos, prior: dict[str, Any]) -> None:
    update_configuration(chaos, prior["function"], DeadLetterConfig={"TargetArn": prior["target_arn"]})


# --- async-retries --------------------------------------------------------------------------------------

_INVOKE_CONFIG = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")


def _invoke_config(chaos: Chaos, function_name: str) -> dict[str, Any] | None:
    found = read_unless(
        chaos,
        ("ResourceNotFoundException",),
        "lambda",
        "get_function_event_invoke_config",
        FunctionName=function_name,
    )
    if found is None:
        return None
    return {key: found[key] for key in _INVOKE_CONFIG if found.get(key) not in (None, {})}


def _capture_retries(chaos: Chaos, target: Target) -> dict[str, Any]:
    return {"function": target.function_name, "config": _invoke_config(chaos, target.function_name)}


def _in_range(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _apply_retries(
    chaos: Chaos,
    target: Target,
    prior: dict[str, Any],
    *,
    attempts: int | None = None,
    max_age: int | None = None,
) -> None:
    function_name = prior["function"]
    current = _invoke_config(chaos, function_name)
    if attempts is None and max_age is None:
        problem = "give the retry attempts, the maximum event age, or both"
    elif attempts is not None and not _in_range(attempts, 0, 2):
        problem = f"attempts must be a whole number from 0 to 2, not {attempts!r}"
    elif max_age is not None and not _in_range(max_age, 60, 21600):
        problem = f"max_age must be a whole number of seconds from 60 to 21600, not {max_age!r}"
    else:
        problem = None
    if problem:
        give_up(
            chaos,
            "async-retries",
            function_name,
            ChaosError(f"async-retries: {problem}"),
            unchanged=current == prior["config"],
        )
    wanted = dict(current or {})
    if attempts is not None:
        wanted["MaximumRetryAttempts"] = attempts
    if max_age is not None:
        wanted["MaximumEventAgeInSeconds"] = max_age
    chaos.call("lambda", "put_function_event_invoke_config", FunctionName=function_name, **wanted)


def _revert_retries(chaos: Chaos, prior: dict[str, Any]) -> None:
    if prior["config"] is None:
        chaos.call(
            "lambda",
            "delete_function_event_invoke_config",
            FunctionName=prior["function"],
            tolerate=("ResourceNotFoundException",),
        )
    else:
        chaos.call(
            "lambda", "put_function_event_invoke_config", FunctionName=prior["function"], **prior["config"]
        )


PERMISSION_REMOVE = Fault(
    "permission-remove",
    "a caller's invoke permission removed from the resource-based policy",
    _capture_permission,
    _apply_permission,
    _revert_permission,
)
SNS_UNSUBSCRIBE = Fault(
    "sns-unsubscribe",
    "the function's subscription to an SNS topic removed",
    _capture_subscription,
    _apply_subscription,
    _revert_subscription,
)
ASYNC_DLQ_REMOVE = Fault(
    "async-dlq-remove",
    "dead-letter queue of asynchronous invocations removed",
    _capture_dlq,
    _apply_dlq,
    _revert_dlq,
)
ASYNC_RETRIES = Fault(
    "async-retries",
    "retry attempts or maximum event age of asynchronous invocations changed",
    _capture_retries,
    _apply_retries,
    _revert_retries,
)
