"""``UpdateFunctionConfiguration``'s ``EphemeralStorage``: moto 5.2.5 reads it at ``CreateFunction`` only and
ignores it on update, so a function's ``/tmp`` could never be resized. We set it, with Lambda's bounds
(512 to 10,240 MB: https://docs.aws.amazon.com/lambda/latest/api/API_EphemeralStorage.html) checked by
moto's own setter.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import LambdaFunction


def install() -> None:
    original_update = LambdaFunction.update_configuration

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        storage = config_updates.get("EphemeralStorage")
        if isinstance(storage, dict) and "Size" in storage:
            self.ephemeral_storage = storage["Size"]
        return original_update(self, config_updates)

    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
