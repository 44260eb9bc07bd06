"""A version's or alias's resource-based policy is its own, as in Lambda, where moto 5.2.5 has one.

AddPermission with a ``Qualifier`` adds the statement to that version's or alias's policy, not the function's
("specify a qualifier to restrict access to a single version or alias. If you use a qualifier, the invoker
must use the full Amazon Resource Name (ARN) of that version or alias to invoke the function",
https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html); GetPolicy and RemovePermission take
the same ``Qualifier`` (API_GetPolicy.html, API_RemovePermission.html). moto keeps one policy per function
object, which a version shares with ``$LATEST`` and an alias with its version, and RemovePermission drops
the qualifier: a statement added to ``orders-api:live`` showed in the function's own policy, and removing
it from one removed it from both. Here each ``(function, qualifier)`` has its own policy, whose statements
name ``<function ARN>:<qualifier>`` as their resource; the unqualified policy stays moto's. Deleting an
alias, a version or the function deletes their policies with them. And a statement
id already in the policy is refused, as Lambda refuses it (``ResourceConflictException``, "The statement
id (...) provided already exists", https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html
lists the error), where moto added a second statement with the same id.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from moto.awslambda.exceptions import GenericResourcNotFound, LambdaClientError, UnknownPolicyException
from moto.awslambda.models import LambdaBackend, LambdaFunction, lambda_backends
from moto.awslambda.policy import Policy
from moto.awslambda.responses import LambdaResponse

# (account, region, function name, qualifier) -> that version's or alias's policy
_POLICIES: dict[tuple[str, str, str, str], Policy] = {}


class _StatementExists(LambdaClientError):
    code = 409

    def __init__(self, sid: str) -> None:
        super().__init__(
            "ResourceConflictException",
            f"The statement id ({sid}) provided already exists. Please provide a new statement id, or remove "
            "the existing statement.",
        )


def _refuse_taken(policy: Policy | None, raw: str) -> None:
    sid = json.loads(raw).get("StatementId")
    if policy is not None and sid and any(s.get("Sid") == sid for s in policy.statements):
        raise _StatementExists(str(sid))


def _qualified(qualifier: str | None) -> bool:
    return bool(qualifier) and str(qualifier).upper() != "$LATEST"


def _key(backend: LambdaBackend, function: LambdaFunction, qualifier: str) -> tuple[str, str, str, str]:
    return backend.account_id, backend.region_name, function.function_name, qualifier


def qualified_policy(backend: LambdaBackend, function_name: str, qualifier: str) -> Policy | None:
    """The policy of ``function_name:qualifier``; None when it has no statement yet. Unknown function or
    qualifier: moto's ResourceNotFoundException."""
    backend.get_function(function_name, qualifier)  # the version or alias must exist
    latest = backend.get_function(function_name)
    return _POLICIES.get(_key(backend, latest, qualifier))


def policy_statements(function: LambdaFunction, qualifier: str | None) -> list[dict[str, Any]]:
    """The statements GetPolicy answers for ``function`` (moto's object for it or its version) and
    ``qualifier``."""
    if not _qualified(qualifier):
        return list(function.policy.statements)
    backend = lambda_backends[function.account_id][function.region]
    policy = qualified_policy(backend, function.function_name, str(qualifier))
    return list(policy.statements) if policy else []


def _forget(backend: LambdaBackend, function_name: str, qualifier: str | None = None) -> None:
    """Drop the policies of a deleted alias or version, or (no qualifier) of every qualifier of a function."""
    name = function_name.split(":")[6] if function_name.startswith("arn:") else function_name.split(":")[0]
    for key in [k for k in _POLICIES if k[:3] == (backend.account_id, backend.region_name, name)]:
        if qualifier is None or key[3] == qualifier:
            del _POLICIES[key]


def install() -> None:
    add, get = LambdaBackend.add_permission, LambdaBackend.get_policy
    remove = LambdaResponse.remove_permission

    def add_permission(self: LambdaBackend, function_name: str, qualifier: str, raw: str) -> dict[str, Any]:
        if not _qualified(qualifier):
            _refuse_taken(self.get_function(function_name).policy, raw)
            return add(self, function_name, qualifier, raw)
        self.get_function(function_name, qualifier)
        latest = self.get_function(function_name)  # the statement's resource is its ARN and the qualifier
        _refuse_taken(_POLICIES.get(_key(self, latest, qualifier)), raw)
        policy = _POLICIES.setdefault(_key(self, latest, qualifier), Policy(latest))
        statement, _ = policy.add_statement(raw, qualifier)
        return statement  # type: ignore[no-any-return]

    def get_policy(self: LambdaBackend, function_name: str, qualifier: str | None = None) -> str:
        if not _qualified(qualifier):
            return get(self, function_name, qualifier)
        policy = qualified_policy(self, function_name, str(qualifier))
        if policy is None:
            raise GenericResourcNotFound()
        return policy.wire_format()

    def remove_permission(self: LambdaResponse) -> Any:
        qualifier = self.querystring.get("Qualifier", [None])[0]
        if not _qualified(qualifier):
            return remove(self)
        function_name = unquote(self.path.split("/")[-3])
        policy = qualified_policy(self.backend, function_name, str(qualifier))
        if policy is None:
            raise UnknownPolicyException()
        revision = self.querystring.get("RevisionId", [""])[0]
        policy.del_statement(self.path.split("/")[-1].split("?")[0], revision)
        return 204, {"status": 204}, "{}"

    delete_alias, delete_function = LambdaBackend.delete_alias, LambdaBackend.delete_function

    def delete_alias_(self: LambdaBackend, name: str, function_name: str) -> None:
        delete_alias(self, name, function_name)
        _forget(self, function_name, name)

    def delete_function_(self: LambdaBackend, function_name: str, qualifier: str | None = None) -> None:
        delete_function(self, function_name, qualifier)
        _forget(self, function_name, qualifier)

    LambdaBackend.delete_alias = delete_alias_  # type: ignore[method-assign]
    LambdaBackend.delete_function = delete_function_  # type: ignore[method-assign]
    LambdaBackend.add_permission = add_permission  # type: ignore[method-assign]
    LambdaBackend.get_policy = get_policy  # type: ignore[method-assign]
    LambdaResponse.remove_permission = remove_permission  # type: ignore[method-assign]
