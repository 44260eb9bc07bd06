"""What API Gateway does with REST APIs that moto 5.2.5 does not.

- ``CreateDeployment`` to a stage that exists points the stage at the new deployment and keeps its settings
  (logging, throttling, variables not given), as redeploying an API to an existing stage does
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-deployments.html; the AWS CLI's
  "deploy the configured resources for an API to an existing stage"). moto made a new stage of that name,
  so its execution logging, set with ``UpdateStage``, was switched off by every redeployment.
- ``UpdateIntegration`` applies ``replace`` patch operations to an integration's ``/timeoutInMillis`` (50 to
  29,000 ms, the default quota) and ``/uri``, the two settings an operator changes on a Lambda proxy
  integration (https://docs.aws.amazon.com/apigateway/latest/api/API_UpdateIntegration.html and its patch
  operations table). moto does not implement it. Other paths or operations are refused with
  ``BadRequestException`` (the sentences are the sandbox's own), the integration left as it was.
"""

from __future__ import annotations

import json
from typing import Any

from moto.apigateway.exceptions import BadRequestException, NoIntegrationDefined
from moto.apigateway.models import RestAPI
from moto.apigateway.responses import APIGatewayResponse

MIN_TIMEOUT_MS, MAX_TIMEOUT_MS = 50, 29_000
_REPLACEABLE = {"/timeoutInMillis": "timeout_in_millis", "/uri": "uri"}


def _install_deployments() -> None:
    original = RestAPI.create_deployment

    def create_deployment(self: Any, name: str, description: str, stage_variables: Any = None) -> Any:
        existing = self.stages.get(name) if name else None
        deployment = original(self, name, description, stage_variables)
        if existing is not None:
            existing.deployment_id = deployment.id
            existing.variables = {**existing.variables, **(stage_variables or {})}
            self.stages[name] = existing
        return deployment

    setattr(RestAPI, "create_deployment", create_deployment)  # noqa: B010


def _changes(operations: Any) -> dict[str, Any]:
    """The integration's attributes the patch operations set, all checked before any is applied."""
    if not isinstance(operations, list) or not operations:
        raise BadRequestException("patchOperations must list at least one operation")
    changes: dict[str, Any] = {}
    for operation in operations:
        op, path, value = (operation.get(k) for k in ("op", "path", "value"))
        if op != "replace" or path not in _REPLACEABLE:
            raise BadRequestException(
                f"Invalid patch operation: op '{op}' on path '{path}' (the sandbox replaces "
                f"{' and '.join(_REPLACEABLE)} only)"
            )
        if path == "/timeoutInMillis":
            if not (isinstance(value, str) and value.isdigit()) or not (
                MIN_TIMEOUT_MS <= int(value) <= MAX_TIMEOUT_MS
            ):
                raise BadRequestException(
                    f"Invalid timeoutInMillis '{value}': it must be {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS} ms"
                )
            value = int(value)
        elif not value:
            raise BadRequestException("Invalid uri: it must not be empty")
        changes[_REPLACEABLE[path]] = value
    return changes


def _update_integration(self: APIGatewayResponse) -> Any:
    parts = self.path.split("/")
    api_id, resource_id, method = parts[2], parts[4], parts[6]
    integration = self.backend.get_integration(api_id, resource_id, method)
    if integration is None:
        raise NoIntegrationDefined()
    for attribute, value in _changes(self._get_param("patchOperations")).items():
        setattr(integration, attribute, value)
    return 200, {}, json.dumps(integration.to_json())


def install() -> None:
    _install_deployments()
    setattr(APIGatewayResponse, "update_integration", _update_integration)  # noqa: B010
