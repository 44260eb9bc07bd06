"""Function URLs as Lambda makes them, where moto 5.2.5 differs.

1. AddPermission's ``FunctionUrlAuthType`` and ``InvokedViaFunctionUrl`` were kept as keys of the statement
   itself. Lambda turns them into conditions (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html):
   ``"Condition": {"StringEquals": {"lambda:FunctionUrlAuthType": "NONE"}}`` and
   ``"Condition": {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}``; so do they here.
2. A URL lacked the slash that ends Lambda's (``https://<url-id>.lambda-url.<region>.on.aws/``,
   https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html); it has it now.
3. AddPermission's ``Principal`` naming an IAM user or role, or an account by its id, was kept as a bare
   string. Lambda writes ``{"AWS": "<the ARN>"}``, an account as ``arn:aws:iam::<id>:root``
   (https://docs.aws.amazon.com/lambda/latest/dg/permissions-function-cross-account.html); so it does here.
"""

from __future__ import annotations

import re
from typing import Any

from moto.awslambda.models import FunctionUrlConfig
from moto.awslambda.policy import Policy

# AddPermission's parameter -> the condition's operator and key
_CONDITIONS = {
    "FunctionUrlAuthType": ("StringEquals", "lambda:FunctionUrlAuthType"),
    "InvokedViaFunctionUrl": ("Bool", "lambda:InvokedViaFunctionUrl"),
}


def install() -> None:
    original = Policy.decode_policy

    def decode_policy(self: Policy, obj: dict[str, Any]) -> Any:
        for parameter, (operator, key) in _CONDITIONS.items():
            if parameter in obj:
                value = obj.pop(parameter)
                written = str(value).lower() if isinstance(value, bool) else str(value)  # Bool: "true"
                obj.setdefault("Condition", {}).setdefault(operator, {})[key] = written
        return original(self, obj)

    Policy.decode_policy = decode_policy  # type: ignore[method-assign]
    original_principal = Policy.principal_formatter

    def principal_formatter(self: Policy, obj: Any) -> Any:
        if isinstance(obj, str) and re.fullmatch(r"\d{12}", obj):
            return {"AWS": f"arn:aws:iam::{obj}:root"}
        if isinstance(obj, str) and obj.startswith("arn:") and ":iam::" in obj:
            return {"AWS": obj}
        return original_principal(self, obj)

    Policy.principal_formatter = principal_formatter  # type: ignore[method-assign]
    original_init = FunctionUrlConfig.__init__

    def init(self: FunctionUrlConfig, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.url += "/"

    FunctionUrlConfig.__init__ = init  # type: ignore[method-assign]
