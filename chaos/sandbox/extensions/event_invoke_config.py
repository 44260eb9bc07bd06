"""Lambda's asynchronous invocation configuration as AWS keeps it: moto 5.2.5 appends every
``PutFunctionEventInvokeConfig`` to a list and answers ``GetFunctionEventInvokeConfig`` with the first, so
a second put changes nothing anyone can read.

On AWS, ``PutFunctionEventInvokeConfig`` "overwrites" an existing configuration ("If you exclude any
settings, they are removed"), and ``UpdateFunctionEventInvokeConfig`` sets the options given "without
affecting existing settings for other options"
(https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html,
https://docs.aws.amazon.com/lambda/latest/api/API_UpdateFunctionEventInvokeConfig.html). Both are so here.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import EventInvokeConfig, LambdaBackend


def _put(self: LambdaBackend, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
    function = self.get_function(function_name)
    stored = EventInvokeConfig(function.function_arn, function.last_modified, config)
    function.event_invoke_config = [stored]
    return stored.response()


def _update(self: LambdaBackend, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
    function = self.get_function(function_name)
    existing = function.event_invoke_config[0].config if function.event_invoke_config else {}
    return _put(self, function_name, {**existing, **config})


def install() -> None:
    LambdaBackend.put_function_event_invoke_config = _put  # type: ignore[method-assign]
    LambdaBackend.update_function_event_invoke_config = _update  # type: ignore[method-assign]
