"""The executor's identity in the sandbox, built from ``executor.permissions``: every write the allowlist
does not hold is denied, and so is every allowlisted write of a function or role outside the watched ones.
(That the allowlisted writes work on the watched functions is shown by the round trips of
tests/test_remediation_plan.py and tests/test_executor_run.py, which apply them as this identity.)

Each operation is called with its required parameters filled from botocore's model (no client-side
validation): an authorized call fails later (not found, invalid), a refused one with an access denial. A
bare ``404`` is a route the emulator does not serve at all: such a call cannot succeed, and it never
reached IAM (an authorized call on a missing resource answers with a named error instead)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.model import Shape

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from executor.permissions import (
    MAPPING_ACTIONS,
    PARAMETER_ACTIONS,
    QUEUE_ACTIONS,
    TABLE_ACTIONS,
    TOPIC_ACTIONS,
)
from supervisor.remediation.operations import BY_CALL, OPERATIONS

SERVICES = ("lambda", "iam", "ec2", "kms", "s3", "dynamodb", "sqs", "sns", "ssm", "logs", "sts")
READS = ("Get", "List", "Describe", "Lookup", "Query", "Scan", "BatchGet", "Head", "Select", "Filter")
DENIED = frozenset({"AccessDenied", "AccessDeniedException"})
# Called without credentials: AWS authorizes them by the SAML or OIDC provider's trust, not by the caller's
# policies (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithSAML.html).
UNSIGNED = frozenset({"sts:AssumeRoleWithSAML", "sts:AssumeRoleWithWebIdentity"})
OWN = frozenset(
    {*TABLE_ACTIONS, *QUEUE_ACTIONS, *PARAMETER_ACTIONS, *TOPIC_ACTIONS}
)  # tables, queue, key, notices
OUTSIDE = {"FunctionName": "not-watched", "RoleName": "not-watched-role"}


def _value(shape: Shape, name: str, names_: dict[str, str]) -> Any:
    kind = shape.type_name
    if kind == "structure":
        members = getattr(shape, "members", {})
        return {m: _value(members[m], m, names_) for m in getattr(shape, "required_members", [])}
    if kind == "list":
        return [_value(shape.member, name, names_)]
    if kind == "map":
        return {}
    if kind in {"integer", "long"}:
        return 1
    if kind == "boolean":
        return True
    if kind == "blob":
        return b"{}"
    if kind == "timestamp":
        return "2026-01-01T00:00:00Z"
    if name == "UUID":
        return "00000000-0000-0000-0000-000000000000"
    return names_.get(name, "x")


def _outcome(sandbox: Sandbox, service: str, operation: str, names_: dict[str, str]) -> str:
    config = Config(parameter_validation=False, inject_host_prefix=False, retries={"max_attempts": 1})
    client = sandbox.session(names.EXECUTOR).client(service, config=config)
    shape = client.meta.service_model.operation_model(operation).input_shape
    params = _value(shape, "", names_) if shape is not None else {}
    if (service, operation) == ("lambda", "Invoke"):
        params["Payload"] = b"{}"
    try:
        response = client._make_api_call(operation, params)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    errors = response.get("Errors") or [{}]  # S3's DeleteObjects answers 200 and denies key by key
    return str(errors[0].get("Code", "succeeded"))


def _writes(sandbox: Sandbox, service: str) -> list[str]:
    """The service's operations that write, but the allowlisted ones and the executor's own."""
    model = sandbox.session(names.OPERATOR).client(service).meta.service_model
    return [
        operation
        for operation in model.operation_names
        if not operation.startswith(READS)
        and (service, operation) not in BY_CALL
        and f"{service}:{operation}" not in OWN | UNSIGNED
    ]


def test_the_enumeration_covers_the_services_whole_write_surface(sandbox: Sandbox) -> None:
    assert sum(len(_writes(sandbox, service)) for service in SERVICES) > 1000


@pytest.mark.timeout(360)  # EC2 alone has some 550 writes, each a request: 30 s idle, more on a busy host
@pytest.mark.parametrize("service", SERVICES)
def test_every_write_off_the_allowlist_is_denied_on_the_watched_functions(
    sandbox: Sandbox, service: str
) -> None:
    watched = {"FunctionName": names.FUNCTION_NAME, "RoleName": names.ROLE_NAME}
    outcomes = {
        operation: _outcome(sandbox, service, operation, watched) for operation in _writes(sandbox, service)
    }
    allowed = {operation: code for operation, code in outcomes.items() if code not in DENIED | {"404"}}
    unrouted = [operation for operation, code in outcomes.items() if code == "404"]
    assert outcomes  # each service has writes to refuse
    assert allowed == {}, allowed
    assert service == "lambda" or unrouted == [], unrouted  # only Lambda has routes the emulator lacks


@pytest.mark.parametrize(
    "operation",
    [op for op in OPERATIONS if op.service in {"lambda", "iam"} and op.action not in MAPPING_ACTIONS],
    ids=lambda op: op.action,
)
def test_an_allowlisted_write_outside_the_watched_functions_is_denied(
    sandbox: Sandbox, operation: Any
) -> None:
    assert _outcome(sandbox, operation.service, operation.name, OUTSIDE) in DENIED
    assert (
        _outcome(
            sandbox,
            operation.service,
            operation.name,
            {"FunctionName": names.FUNCTION_NAME, "RoleName": names.ROLE_NAME},
        )
        not in DENIED
    )
