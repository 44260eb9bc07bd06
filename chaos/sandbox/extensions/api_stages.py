"""``CreateDeployment`` to a stage that exists: API Gateway points the stage at the new deployment and keeps
its settings (logging, throttling, variables not given), as redeploying an API to an existing stage does
(https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-deployments.html; the AWS CLI's
"deploy the configured resources for an API to an existing stage"). moto 5.2.5 makes a new stage of that
name, so its execution logging, set with ``UpdateStage``, was switched off by every redeployment.
"""

from __future__ import annotations

from typing import Any

from moto.apigateway.models import RestAPI


def install() -> None:
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
