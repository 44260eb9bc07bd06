"""Lambda ``LoggingConfig``, which moto 5.2.5 neither stores nor returns: kept from ``CreateFunction`` and
``UpdateFunctionConfiguration`` and returned as AWS does (``LogFormat`` ``Text`` and ``LogGroup``
``/aws/lambda/<name>`` unless set), so the runtime writes to, and the tools read, the group it names."""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import LambdaFunction

_DEFAULTS = {"LogFormat": "Text"}


def install() -> None:
    original_init = LambdaFunction.__init__
    original_update = LambdaFunction.update_configuration
    original_configuration = LambdaFunction.get_configuration

    def init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original_init(self, account_id, spec, *args, **kwargs)
        self.logging_config = dict(spec.get("LoggingConfig") or {})

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "LoggingConfig" in config_updates:
            self.logging_config = {**getattr(self, "logging_config", {}), **config_updates["LoggingConfig"]}
        return original_update(self, config_updates)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = original_configuration(self, on_create)
        stored = getattr(self, "logging_config", {})
        config["LoggingConfig"] = _DEFAULTS | {"LogGroup": f"/aws/lambda/{self.function_name}"} | stored
        return config

    setattr(LambdaFunction, "__init__", init)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010
