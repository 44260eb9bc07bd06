"""A function's asynchronous settings as Lambda keeps them, which moto 5.2.5 does not:

- ``DeadLetterConfig`` (moto neither stores nor returns it): kept from ``CreateFunction`` and
  ``UpdateFunctionConfiguration`` and returned by ``GetFunction``/``GetFunctionConfiguration`` when set
  (https://docs.aws.amazon.com/lambda/latest/api/API_DeadLetterConfig.html). An empty ``TargetArn`` (the
  type's pattern allows it) removes it. It is part of the version's configuration, so a published version
  keeps the one it was published with
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq).
- ``PutFunctionEventInvokeConfig`` overwrites the stored configuration ("If you exclude any settings, they
  are removed") and ``UpdateFunctionEventInvokeConfig`` changes only the settings it names
  (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html); moto appends every
  put to a list and answers the first one forever.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import EventInvokeConfig, LambdaBackend, LambdaFunction


def _dead_letter(spec: dict[str, Any]) -> dict[str, str] | None:
    target = (spec.get("DeadLetterConfig") or {}).get("TargetArn")
    return {"TargetArn": target} if target else None


def _install_dead_letter_config() -> None:
    original_init = LambdaFunction.__init__
    original_update = LambdaFunction.update_configuration
    original_configuration = LambdaFunction.get_configuration

    def init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original_init(self, account_id, spec, *args, **kwargs)
        self.dead_letter_config = _dead_letter(spec)

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "DeadLetterConfig" in config_updates:
            self.dead_letter_config = _dead_letter(config_updates)
        return original_update(self, config_updates)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = original_configuration(self, on_create)
        dead_letter = getattr(self, "dead_letter_config", None)
        if dead_letter:
            config["DeadLetterConfig"] = dict(dead_letter)
        return config

    setattr(LambdaFunction, "__init__", init)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010


def _install_event_invoke_config() -> None:
    def put(self: LambdaBackend, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        function = self.get_function(function_name)
        stored = EventInvokeConfig(function.function_arn, function.last_modified, config)
        function.event_invoke_config = [stored]
        response: dict[str, Any] = stored.response()
        return response

    def update(self: LambdaBackend, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        function = self.get_function(function_name)
        current = function.event_invoke_config[0].config if function.event_invoke_config else {}
        return put(self, function_name, {**current, **config})

    setattr(LambdaBackend, "put_function_event_invoke_config", put)  # noqa: B010
    setattr(LambdaBackend, "update_function_event_invoke_config", update)  # noqa: B010


def install() -> None:
    _install_dead_letter_config()
    _install_event_invoke_config()
