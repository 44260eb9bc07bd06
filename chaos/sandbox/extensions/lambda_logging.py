"""Lambda ``LoggingConfig``, which moto 5.2.5 neither stores nor returns: kept from ``CreateFunction`` and
``UpdateFunctionConfiguration`` and returned as AWS does (``LogFormat`` ``Text`` and ``LogGroup``
``/aws/lambda/<name>`` unless set; ``ApplicationLogLevel`` and ``SystemLogLevel`` ``INFO`` unless set, for
JSON only), so the runtime writes to, and the tools read, the group it names, in the format it names.

Requests are refused as Lambda refuses them (API Reference, ``LoggingConfig``): a value outside its enum or
a log group outside its length or pattern is a ``ValidationException``; a log level with the ``Text``
format is an ``InvalidParameterValueException``. An update merges into what is stored; one that sets
``LogFormat`` to ``Text`` drops the stored levels.
"""

from __future__ import annotations

import re
from typing import Any

from moto.awslambda.exceptions import InvalidParameterValueException, LambdaClientError
from moto.awslambda.models import LambdaFunction

_DEFAULTS = {"LogFormat": "Text"}
_LEVELS = ("ApplicationLogLevel", "SystemLogLevel")
_ENUMS = {
    "LogFormat": ("JSON", "Text"),
    "ApplicationLogLevel": ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"),
    "SystemLogLevel": ("DEBUG", "INFO", "WARN"),
}
_GROUP_PATTERN = r"[\.\-_/#A-Za-z0-9]+"
TEXT_WITH_LEVEL = (
    'LogLevel is not supported when LogFormat is set to "Text". Remove LogLevel from your request or '
    'change the LogFormat to "JSON" and try again.'
)


class ValidationException(LambdaClientError):
    def __init__(self, message: str) -> None:
        super().__init__("ValidationException", message)


def _violations(request: dict[str, Any]) -> list[str]:
    """Each constraint the request breaks, in AWS's wording."""
    found = []
    for key, allowed in _ENUMS.items():
        if key in request and request[key] not in allowed:
            found.append(
                f"Value '{request[key]}' at 'loggingConfig.{key[0].lower()}{key[1:]}' failed to satisfy "
                f"constraint: Member must satisfy enum value set: [{', '.join(allowed)}]"
            )
    group = request.get("LogGroup")
    if group is not None:
        at = f"Value '{group}' at 'loggingConfig.logGroup' failed to satisfy constraint: Member must"
        if len(group) < 1:
            found.append(f"{at} have length greater than or equal to 1")
        elif len(group) > 512:
            found.append(f"{at} have length less than or equal to 512")
        elif not re.fullmatch(_GROUP_PATTERN, group):
            found.append(f"{at} satisfy regular expression pattern: {_GROUP_PATTERN}")
    return found


def _validated(request: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """The configuration after ``request``, or the error Lambda answers it with."""
    if found := _violations(request):
        count = f"{len(found)} validation error{'s' if len(found) > 1 else ''}"
        raise ValidationException(f"{count} detected: {'; '.join(found)}")
    log_format = request.get("LogFormat") or stored.get("LogFormat") or "Text"
    if log_format == "Text" and any(key in request for key in _LEVELS):
        raise InvalidParameterValueException(TEXT_WITH_LEVEL)
    merged = {**stored, **request}
    if log_format == "Text":
        merged = {k: v for k, v in merged.items() if k not in _LEVELS}
    return merged


def install() -> None:
    original_init = LambdaFunction.__init__
    original_update = LambdaFunction.update_configuration
    original_configuration = LambdaFunction.get_configuration

    def init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        logging_config = _validated(dict(spec.get("LoggingConfig") or {}), {})
        original_init(self, account_id, spec, *args, **kwargs)
        self.logging_config = logging_config

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "LoggingConfig" in config_updates:
            stored = getattr(self, "logging_config", {})
            self.logging_config = _validated(dict(config_updates["LoggingConfig"] or {}), stored)
        return original_update(self, config_updates)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = original_configuration(self, on_create)
        stored = getattr(self, "logging_config", {})
        answer = _DEFAULTS | {"LogGroup": f"/aws/lambda/{self.function_name}"} | stored
        if answer["LogFormat"] == "JSON":
            answer = {"ApplicationLogLevel": "INFO", "SystemLogLevel": "INFO"} | answer
        config["LoggingConfig"] = answer
        return config

    setattr(LambdaFunction, "__init__", init)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010
