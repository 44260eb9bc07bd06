"""The revision of a function's configuration and of an alias, which moto does not keep.

AWS gives a function and each alias a ``RevisionId``, "the latest updated revision of the function or
alias" (https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConfiguration.html), which every
update changes: the update calls take it to refuse a change to a function that changed since it was read
("Update the function only if the revision ID matches the ID that's specified",
https://docs.aws.amazon.com/lambda/latest/api/API_UpdateFunctionConfiguration.html). moto returns none for a
function, and an alias's never changes. Here a function's configuration carries one, made anew by each
``UpdateFunctionConfiguration`` and ``UpdateFunctionCode``, and an alias's is made anew by ``UpdateAlias``.
The ``RevisionId`` parameter of those calls is not checked (the product never sends it).
"""

from __future__ import annotations

import uuid
from typing import Any

from moto.awslambda.models import LambdaAlias, LambdaFunction

_REVISION = "_sandbox_revision_id"


def _revision(function: LambdaFunction) -> str:
    if not hasattr(function, _REVISION):
        setattr(function, _REVISION, str(uuid.uuid4()))
    return str(getattr(function, _REVISION))


def install() -> None:
    configuration = LambdaFunction.get_configuration
    update_configuration = LambdaFunction.update_configuration
    update_code = LambdaFunction.update_function_code
    update_alias = LambdaAlias.update

    def get_configuration(self: LambdaFunction, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(configuration(self, *args, **kwargs)) | {"RevisionId": _revision(self)}

    def revised(update: Any) -> Any:
        def apply(self: LambdaFunction, *args: Any, **kwargs: Any) -> dict[str, Any]:
            update(self, *args, **kwargs)
            setattr(self, _REVISION, str(uuid.uuid4()))
            return get_configuration(self)

        return apply

    def alias_update(self: LambdaAlias, *args: Any, **kwargs: Any) -> None:
        update_alias(self, *args, **kwargs)
        self.revision_id = str(uuid.uuid4())

    setattr(LambdaFunction, "get_configuration", get_configuration)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", revised(update_configuration))  # noqa: B010
    setattr(LambdaFunction, "update_function_code", revised(update_code))  # noqa: B010
    setattr(LambdaAlias, "update", alias_update)  # noqa: B010
