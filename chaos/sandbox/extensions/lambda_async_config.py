"""A function's asynchronous-invocation settings, which moto 5.2.5 keeps wrongly or not at all.

1. ``DeadLetterConfig`` is neither stored nor returned: it is kept from ``CreateFunction`` and
   ``UpdateFunctionConfiguration`` and returned by ``GetFunction``/``GetFunctionConfiguration`` as
   ``{"TargetArn": ...}`` (API Reference, ``DeadLetterConfig``:
   https://docs.aws.amazon.com/lambda/latest/api/API_DeadLetterConfig.html). ``TargetArn``'s pattern
   admits the empty string, which removes the dead-letter queue; the documentation does not say what is
   returned then: the sandbox omits ``DeadLetterConfig``, as for a function that never had one. Lambda's
   check, at create or update time, that the role may send to the target is not made.
2. ``PutFunctionEventInvokeConfig`` appends a configuration and ``GetFunctionEventInvokeConfig`` returns the
   first, so a second ``Put`` changes nothing that can be read. AWS: "If a configuration already exists for
   a function, version, or alias, this operation overwrites it. If you exclude any settings, they are
   removed" (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html); and
   ``UpdateFunctionEventInvokeConfig`` sets the options given without affecting the others. Both now do
   so. Qualifiers are still not told apart (one configuration per function), as in moto.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import EventInvokeConfig, LambdaBackend, LambdaFunction


def _dead_letter_config() -> None:
    original_init = LambdaFunction.__init__
    original_update = LambdaFunction.update_configuration
    original_configuration = LambdaFunction.get_configuration

    def init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original_init(self, account_id, spec, *args, **kwargs)
        self.dead_letter_target = str((spec.get("DeadLetterConfig") or {}).get("TargetArn") or "")

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "DeadLetterConfig" in config_updates:
            target = (config_updates["DeadLetterConfig"] or {}).get("TargetArn")
            self.dead_letter_target = str(target or "")
        return original_update(self, config_updates)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = original_configuration(self, on_create)
        target = getattr(self, "dead_letter_target", "")
        if target:
            config["DeadLetterConfig"] = {"TargetArn": target}
        else:
            config.pop("DeadLetterConfig", None)
        return config

    setattr(LambdaFunction, "__init__", init)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010


def _event_invoke_config() -> None:
    def put(self: Any, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        function = self.get_function(function_name)
        stored = EventInvokeConfig(function.function_arn, function.last_modified, config)
        function.event_invoke_config = [stored]
        response: dict[str, Any] = stored.response()
        return response

    def update(self: Any, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        current = self.get_function(function_name).event_invoke_config
        return put(self, function_name, {**(current[0].config if current else {}), **config})

    setattr(LambdaBackend, "put_function_event_invoke_config", put)  # noqa: B010
    setattr(LambdaBackend, "update_function_event_invoke_config", update)  # noqa: B010


def install() -> None:
    _dead_letter_config()
    _event_invoke_config()
