"""Configuration faults (``update_function_configuration``); restore puts the saved values back exactly.
Every change waits for Lambda to finish it (``LastUpdateStatus`` InProgress → Successful; Failed raises).

- ``config-timeout``: ``apply(chaos, target, prior, *, seconds: int)``, the timeout (1-900 s).
- ``config-memory``: ``apply(chaos, target, prior, *, mb: int)``, the memory size (128-10240 MB).
- ``config-env``: ``apply(chaos, target, prior, *, unset: str | None = None, set_: tuple[str, str] |
  None = None)``: remove the variable ``unset`` (refused when it is not set) and/or set
  ``set_ = (NAME, VALUE)``. The saved state is the whole environment. Values are never printed: the
  Lambda call is shown with ``***`` for each value and errors are scrubbed of them. The ledger's own
  ``ssm:PutParameter`` line shows the saved state by its size only.
- ``config-logging``: ``apply(chaos, target, prior, *, log_format: str | None = None, application_level:
  str | None = None, system_level: str | None = None)``: the function's ``LoggingConfig`` (``Text`` or
  ``JSON``; log levels only with JSON, as "To use log-level filtering, your function must be configured to
  use the JSON log format" says, https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html;
  a system level above ``INFO`` drops the start and report records). The saved state is the whole
  ``LoggingConfig`` as Lambda shows it (with JSON, both levels; with Text, none: putting Text back drops the
  levels).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from chaos.faults.calls import MASK
from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import check_fits, give_up, shown_call, wait_until_updated

_VARIABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]+$")  # what Lambda accepts


def update_configuration(
    chaos: Chaos,
    function_name: str,
    *,
    shown: dict[str, Any] | None = None,
    secrets: Iterable[str] = (),
    **settings: Any,
) -> None:
    wait_until_updated(chaos, function_name, check_failed=False)
    if shown is None:
        chaos.call("lambda", "update_function_configuration", FunctionName=function_name, **settings)
    else:
        shown_call(
            chaos,
            "lambda",
            "update_function_configuration",
            shown,
            secrets=secrets,
            FunctionName=function_name,
            **settings,
        )
    wait_until_updated(chaos, function_name)


# --- config-timeout, config-memory ----------------------------------------------------------------------


def _number(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _capture_timeout(chaos: Chaos, target: Target) -> dict[str, Any]:
    return {"function": target.function_name, "timeout": target.configuration["Timeout"]}


def _apply_timeout(chaos: Chaos, target: Target, prior: dict[str, Any], *, seconds: int) -> None:
    if not _number(seconds, 1, 900):
        unchanged = target.configuration["Timeout"] == prior["timeout"]
        error = ChaosError(f"config-timeout: seconds must be a whole number from 1 to 900, not {seconds!r}")
        give_up(chaos, "config-timeout", prior["function"], error, unchanged=unchanged)
    update_configuration(chaos, prior["function"], Timeout=seconds)


def _revert_timeout(chaos: Chaos, prior: dict[str, Any]) -> None:
    update_configuration(chaos, prior["function"], Timeout=prior["timeout"])


def _capture_memory(chaos: Chaos, target: Target) -> dict[str, Any]:
    return {"function": target.function_name, "memory": target.configuration["MemorySize"]}


def _apply_memory(chaos: Chaos, target: Target, prior: dict[str, Any], *, mb: int) -> None:
    if not _number(mb, 128, 10240):
        unchanged = target.configuration["MemorySize"] == prior["memory"]
        error = ChaosError(f"config-memory: mb must be a whole number from 128 to 10240, not {mb!r}")
        give_up(chaos, "config-memory", prior["function"], error, unchanged=unchanged)
    update_configuration(chaos, prior["function"], MemorySize=mb)


def _revert_memory(chaos: Chaos, prior: dict[str, Any]) -> None:
    update_configuration(chaos, prior["function"], MemorySize=prior["memory"])


# --- config-env -----------------------------------------------------------------------------------------


def _variables(configuration: dict[str, Any]) -> dict[str, str]:
    return dict((configuration.get("Environment") or {}).get("Variables") or {})


def _capture_env(chaos: Chaos, target: Target) -> dict[str, Any]:
    error = (target.configuration.get("Environment") or {}).get("Error")
    if error:
        raise ChaosRefused(
            f"refusing config-env on {target.function_name}: Lambda cannot show its environment "
            f"({error.get('ErrorCode', 'error')}), so it could not be restored exactly"
        )
    prior = {"function": target.function_name, "variables": _variables(target.configuration)}
    check_fits("config-env", target.function_name, prior, f"{len(prior['variables'])} variables")
    return prior


def _set_environment(chaos: Chaos, function_name: str, variables: dict[str, str], secrets: list[str]) -> None:
    shown = {"FunctionName": function_name, "Environment": {"Variables": dict.fromkeys(variables, MASK)}}
    update_configuration(
        chaos, function_name, shown=shown, secrets=secrets, Environment={"Variables": variables}
    )


def _apply_env(
    chaos: Chaos,
    target: Target,
    prior: dict[str, Any],
    *,
    unset: str | None = None,
    set_: tuple[str, str] | None = None,
) -> None:
    function_name = prior["function"]
    current = _variables(target.configuration)
    saved: dict[str, str] = prior["variables"]
    unchanged = current == saved
    if unset is None and set_ is None:
        error = ChaosError("config-env: give a variable to unset, or one to set (NAME, VALUE)")
        give_up(chaos, "config-env", function_name, error, unchanged=unchanged)
    changed = dict(current)
    if unset is not None:
        if unset not in current and unset not in saved:
            error = ChaosRefused(f"nothing to unset: {unset} is not set on {function_name}")
            give_up(chaos, "config-env", function_name, error, unchanged=unchanged)
        changed.pop(unset, None)
    secrets = [*saved.values(), *current.values()]
    if set_ is not None:
        name, value = set_
        if not _VARIABLE_NAME.match(name):
            error = ChaosError(f"config-env: {name!r} is not a valid environment variable name")
            give_up(chaos, "config-env", function_name, error, unchanged=unchanged)
        changed[name] = value
        secrets.append(value)
    if changed == current:
        chaos.say(f"  the environment of {function_name} is already so: nothing to change")
        return
    _set_environment(chaos, function_name, changed, secrets)


def _revert_env(chaos: Chaos, prior: dict[str, Any]) -> None:
    variables: dict[str, str] = prior["variables"]
    _set_environment(chaos, prior["function"], variables, list(variables.values()))


# --- config-logging -------------------------------------------------------------------------------------

LOG_FORMATS = ("Text", "JSON")
APPLICATION_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
SYSTEM_LEVELS = ("DEBUG", "INFO", "WARN")


def _capture_logging(chaos: Chaos, target: Target) -> dict[str, Any]:
    return {
        "function": target.function_name,
        "logging": dict(target.configuration.get("LoggingConfig") or {}),
    }


def _apply_logging(
    chaos: Chaos,
    target: Target,
    prior: dict[str, Any],
    *,
    log_format: str | None = None,
    application_level: str | None = None,
    system_level: str | None = None,
) -> None:
    current = dict(target.configuration.get("LoggingConfig") or {})
    settings = (
        ("LogFormat", log_format, LOG_FORMATS),
        ("ApplicationLogLevel", application_level, APPLICATION_LEVELS),
        ("SystemLogLevel", system_level, SYSTEM_LEVELS),
    )
    wanted = {key: value for key, value, _ in settings if value is not None}
    invalid = [
        f"{key} must be one of {', '.join(allowed)}, not {value!r}"
        for key, value, allowed in settings
        if value is not None and value not in allowed
    ]
    if invalid:
        problem = invalid[0]
    elif not wanted:
        problem = "give a log format, an application log level or a system log level"
    elif (wanted.keys() - {"LogFormat"}) and wanted.get("LogFormat", current.get("LogFormat")) != "JSON":
        problem = "log levels apply only to the JSON log format: set it to JSON as well"
    else:
        problem = None
    if problem:
        unchanged = current == prior["logging"]
        give_up(
            chaos,
            "config-logging",
            prior["function"],
            ChaosError(f"config-logging: {problem}"),
            unchanged=unchanged,
        )
    update_configuration(chaos, prior["function"], LoggingConfig=wanted)


def _revert_logging(chaos: Chaos, prior: dict[str, Any]) -> None:
    update_configuration(chaos, prior["function"], LoggingConfig=prior["logging"])


CONFIG_TIMEOUT = Fault("config-timeout", "timeout changed", _capture_timeout, _apply_timeout, _revert_timeout)
CONFIG_MEMORY = Fault("config-memory", "memory size changed", _capture_memory, _apply_memory, _revert_memory)
CONFIG_ENV = Fault("config-env", "environment variable changed", _capture_env, _apply_env, _revert_env)
CONFIG_LOGGING = Fault(
    "config-logging", "log format or log levels changed", _capture_logging, _apply_logging, _revert_logging
)
