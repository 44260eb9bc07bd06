"""``function-copy``: the function's code deployed as a new function with a new role that was never granted
what the code calls.

``apply(chaos, target, prior)`` (no parameter), as an operator would set up a new function, in this order:

1. the role ``<function>-copy-role``, trusted as the function's own role is (its trust policy copied), with
   one inline policy :data:`LOGS_POLICY` that allows CloudWatch Logs writes and nothing else;
2. the log group ``/aws/lambda/<function>-copy``;
3. the alarms every watched function gets (``deploy.alarms``: Errors, Throttles, log silence) on the topic
   the function's own Errors alarm notifies (none when it has no such alarm);
4. the function ``<function>-copy``, last: the function's package (fetched as Lambda does), runtime,
   handler, timeout, memory, architectures, layers and environment (values are never printed), outside
   any VPC (a VPC function's role would need the ENI permissions this role lacks).

The saved state is what will be created; capture refuses when any of it exists already (no saved state
accounts for it). Restore deletes the function, the alarms, the log group, the inline policy and the role.
"""

from __future__ import annotations

import json
import time
from typing import Any

from chaos.faults.calls import MASK
from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import download_package, read_unless, shown_call, wait_until_updated
from deploy.alarms import alarm_name, function_alarms

NAME = "function-copy"
SUFFIX = "-copy"
LOGS_POLICY = "logs-only"
LOG_ACTIONS = ("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents")
ROLE_PROPAGATION_SECONDS = 60.0  # a new role can take seconds before Lambda may assume it
_COPIED = ("Runtime", "Handler", "Timeout", "MemorySize", "Architectures")


def copy_names(function_name: str) -> tuple[str, str]:
    """The copy's function name and its role's name."""
    copy = f"{function_name}{SUFFIX}"
    return copy, f"{copy}-role"


def _exists(chaos: Chaos, prior: dict[str, Any]) -> list[str]:
    """What of the copy exists already."""
    found = []
    missing = ("ResourceNotFoundException",)
    if read_unless(chaos, missing, "lambda", "get_function", FunctionName=prior["copy"]):
        found.append(f"function {prior['copy']}")
    if read_unless(chaos, ("NoSuchEntity",), "iam", "get_role", RoleName=prior["role"]):
        found.append(f"role {prior['role']}")
    groups = chaos.read("logs", "describe_log_groups", logGroupNamePrefix=prior["log_group"])["logGroups"]
    if any(group["logGroupName"] == prior["log_group"] for group in groups):
        found.append(f"log group {prior['log_group']}")
    if prior["alarms"]:
        alarms = chaos.read("cloudwatch", "describe_alarms", AlarmNames=prior["alarms"])["MetricAlarms"]
        found += [f"alarm {alarm['AlarmName']}" for alarm in alarms]
    return found


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    name = target.function_name
    if target.configuration.get("PackageType", "Zip") != "Zip":
        raise ChaosRefused(f"refusing {NAME} on {name}: it copies zip packages only")
    copy, role = copy_names(name)
    errors = chaos.read("cloudwatch", "describe_alarms", AlarmNames=[alarm_name(name, "Errors")])
    topics = [action for alarm in errors["MetricAlarms"] for action in alarm.get("AlarmActions", [])]
    log_group = f"/aws/lambda/{copy}"
    alarms = [alarm["AlarmName"] for alarm in function_alarms(copy, log_group, "")] if topics else []
    prior = {
        "function": name,
        "copy": copy,
        "role": role,
        "log_group": log_group,
        "topic": topics[0] if topics else None,
        "alarms": alarms,
    }
    found = _exists(chaos, prior)
    if found:
        raise ChaosRefused(
            f"refusing {NAME} on {name}: {', '.join(found)} exist(s) already and no saved state accounts for "
            "it; look at it, and delete it if an earlier run left it. Nothing was changed"
        )
    return prior


def _role(chaos: Chaos, target: Target, prior: dict[str, Any]) -> str:
    """The copy's role (created, or as an earlier apply created it): its ARN."""
    trust = chaos.read("iam", "get_role", RoleName=target.role_name)["Role"]["AssumeRolePolicyDocument"]
    created = chaos.call(
        "iam",
        "create_role",
        tolerate=("EntityAlreadyExists",),
        RoleName=prior["role"],
        AssumeRolePolicyDocument=json.dumps(trust),
        Description=f"incident-chaos {NAME}: role of {prior['copy']}; removed by restore",
    )
    logs_only = {"Effect": "Allow", "Action": list(LOG_ACTIONS), "Resource": "*"}
    chaos.call(
        "iam",
        "put_role_policy",
        RoleName=prior["role"],
        PolicyName=LOGS_POLICY,
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [logs_only]}),
    )
    if created is not None:
        return str(created["Role"]["Arn"])
    if chaos.dry_run:
        return f"<the ARN of {prior['role']}>"
    return str(chaos.read("iam", "get_role", RoleName=prior["role"])["Role"]["Arn"])


def _create_function(chaos: Chaos, config: dict[str, Any], prior: dict[str, Any], role_arn: str) -> None:
    package = download_package(chaos, NAME, config)
    variables = dict((config.get("Environment") or {}).get("Variables") or {})
    settings = {key: config[key] for key in _COPIED if key in config}
    if config.get("Layers"):
        settings["Layers"] = [layer["Arn"] for layer in config["Layers"]]
    params = settings | {
        "FunctionName": prior["copy"],
        "Role": role_arn,
        "Description": f"incident-chaos {NAME} of {prior['function']}; removed by restore",
        "Environment": {"Variables": variables},
    }
    shown = params | {
        "Code": {"ZipFile": f"<{len(package)} bytes: the package of {prior['function']}>"},
        "Environment": {"Variables": dict.fromkeys(variables, MASK)},
    }
    deadline = time.monotonic() + ROLE_PROPAGATION_SECONDS
    while True:
        try:
            shown_call(
                chaos,
                "lambda",
                "create_function",
                shown,
                tolerate=("ResourceConflictException",),
                secrets=variables.values(),
                Code={"ZipFile": package},
                **params,
            )
            break
        except ChaosError as error:  # on AWS, a role created seconds ago may not be assumable yet
            if "cannot be assumed" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(2.0)
    wait_until_updated(chaos, prior["copy"])


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    role_arn = _role(chaos, target, prior)
    exists = ("ResourceAlreadyExistsException",)
    chaos.call("logs", "create_log_group", logGroupName=prior["log_group"], tolerate=exists)
    if prior["topic"] is not None:
        for alarm in function_alarms(prior["copy"], prior["log_group"], prior["topic"]):
            chaos.call("cloudwatch", "put_metric_alarm", **alarm)
    _create_function(chaos, target.configuration, prior, role_arn)


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    chaos.call(
        "lambda", "delete_function", FunctionName=prior["copy"], tolerate=("ResourceNotFoundException",)
    )
    if prior["alarms"]:
        chaos.call("cloudwatch", "delete_alarms", AlarmNames=prior["alarms"])
    chaos.call(
        "logs", "delete_log_group", logGroupName=prior["log_group"], tolerate=("ResourceNotFoundException",)
    )
    role = prior["role"]
    chaos.call("iam", "delete_role_policy", RoleName=role, PolicyName=LOGS_POLICY, tolerate=("NoSuchEntity",))
    chaos.call("iam", "delete_role", RoleName=role, tolerate=("NoSuchEntity",))


FUNCTION_COPY = Fault(
    NAME,
    "the function's code deployed as <function>-copy, with a new role that grants only log writes",
    _capture,
    _apply,
    _revert,
)
