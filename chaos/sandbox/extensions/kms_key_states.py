"""A KMS key that is not ``Enabled`` refuses the cryptographic operations, as KMS does.

moto 5.2.5 encrypts, decrypts, signs and makes data keys with a key whatever its state. In KMS a key's
state decides whether it can be used (https://docs.aws.amazon.com/kms/latest/developerguide/key-state.html):
a ``Disabled`` key answers ``DisabledException``, a key in another state that forbids the operation
(``PendingDeletion`` among them) ``KMSInvalidStateException``, both HTTP 400
(https://docs.aws.amazon.com/kms/latest/APIReference/API_Encrypt.html, "Errors"). The message names the key
by its ARN ("<key ARN> is disabled.", "<key ARN> is pending deletion."), as KMS's answers do. ``Decrypt``
checks the key the ciphertext was made with; ``ReEncrypt`` both of its keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.kms.models import KmsBackend

# The operations that take the key as ``key_id`` (ReEncrypt goes through Decrypt and Encrypt).
_BY_KEY_ID = ("encrypt", "generate_data_key", "sign", "verify", "generate_mac", "verify_mac")


class _KeyRefused(JsonRESTError):
    code = 400


def _check(backend: KmsBackend, key_id: str) -> None:
    key = backend.keys.get(backend.any_id_to_key_id(key_id))
    if key is None or key.key_state == "Enabled":  # a key that does not exist: moto's own answer
        return
    if key.key_state == "Disabled":
        raise _KeyRefused("DisabledException", f"{key.arn} is disabled.")
    state = "pending deletion" if key.key_state == "PendingDeletion" else key.key_state
    raise _KeyRefused("KMSInvalidStateException", f"{key.arn} is {state}.")


def _checked_before(original: Callable[..., Any]) -> Callable[..., Any]:
    def operation(self: KmsBackend, **kwargs: Any) -> Any:  # moto calls them by keyword
        _check(self, kwargs["key_id"])
        return original(self, **kwargs)

    return operation


def install() -> None:
    for name in _BY_KEY_ID:
        setattr(KmsBackend, name, _checked_before(getattr(KmsBackend, name)))
    original_decrypt = KmsBackend.decrypt

    def decrypt(self: KmsBackend, **kwargs: Any) -> tuple[bytes, str]:
        plaintext, arn = original_decrypt(self, **kwargs)
        _check(self, arn)  # the key the ciphertext names, known once it is read
        return plaintext, arn

    setattr(KmsBackend, "decrypt", decrypt)  # noqa: B010
