"""A function's environment-variable key (``KMSKeyArn``), as Lambda keeps it and as it reaches KMS.

1. moto 5.2.5 keeps ``KMSKeyArn`` from ``CreateFunction`` but ignores it in ``UpdateFunctionConfiguration``;
   it is now kept from both (an empty string removes the key: the variables go back to Lambda's own key).
2. Lambda creates a KMS grant on a customer managed key when a function is created or updated with one
   ("Lambda uses your permissions to create a grant on the key":
   https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars-encryption.html), which lets the
   function's execution role decrypt its variables; updating the role makes a new grant, which is how
   AWS's knowledge center restores a lost one
   (https://repost.aws/knowledge-center/lambda-kmsaccessdeniedexception-errors). The sandbox creates that
   grant (grantee the role, operation ``Decrypt``) whenever a create or an update sets the key or the role
   of a function that has one. Not emulated: the check that the caller may ``kms:CreateGrant``, and the
   refusal of a key that cannot take a grant (the update succeeds, the invocations then fail).
3. moto's ``DisableKey``, ``EnableKey``, ``ScheduleKeyDeletion`` and ``CancelKeyDeletion`` find a key by its
   ID only and answer a key ARN with an internal error; AWS takes either
   (https://docs.aws.amazon.com/kms/latest/APIReference/API_DisableKey.html, "KeyId"). They now take both.

What the runtime does with the key at a cold start is the workload's (chaos/workload/environment_key.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

from moto.awslambda.models import LambdaBackend, LambdaFunction
from moto.kms.exceptions import NotFoundException
from moto.kms.models import KmsBackend, kms_backends

GRANT_NAME = "lambda-environment-variables"


def _grant(key_arn: str | None, role_arn: str) -> None:
    """The grant Lambda makes for ``role_arn`` on the key (a key that does not exist gets none)."""
    if not key_arn or not key_arn.startswith("arn:aws:kms:"):
        return
    _, _, _, region, account, _ = key_arn.split(":", 5)
    with contextlib.suppress(NotFoundException, KeyError):
        kms_backends[account][region].create_grant(key_arn, role_arn, ["Decrypt"], GRANT_NAME, {}, "")


def _key_arns_accepted() -> None:
    for name in ("disable_key", "enable_key", "schedule_key_deletion", "cancel_key_deletion"):
        original = getattr(KmsBackend, name)

        def by_any_id(self: Any, key_id: str, *args: Any, _original: Any = original) -> Any:
            return _original(self, self.any_id_to_key_id(key_id), *args)

        setattr(KmsBackend, name, by_any_id)


def install() -> None:
    _key_arns_accepted()
    original_create = LambdaBackend.create_function
    original_update = LambdaFunction.update_configuration

    def create_function(self: Any, spec: dict[str, Any]) -> Any:
        function = original_create(self, spec)
        _grant(spec.get("KMSKeyArn"), spec["Role"])
        return function

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "KMSKeyArn" in config_updates:
            self.kms_key_arn = config_updates["KMSKeyArn"] or None
        response = original_update(self, config_updates)
        if "KMSKeyArn" in config_updates or "Role" in config_updates:
            _grant(self.kms_key_arn, self.role)
        return response

    setattr(LambdaBackend, "create_function", create_function)  # noqa: B010
    setattr(LambdaFunction, "update_configuration", update_configuration)  # noqa: B010
