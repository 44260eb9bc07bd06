"""The sandbox world's REST API (docs/sandbox.md, "The world it provisions"): ``orders-rest-api``, an API
Gateway REST API whose ``prod`` stage serves ``POST /orders`` and ``GET /orders/{order_id}`` through a
Lambda proxy integration on ``orders-api:live`` (``chaos/workload/api_gateway.py`` answers its requests).

As the console sets it up: the integration's default timeout (29 s), a statement of the alias's resource
policy letting ``apigateway.amazonaws.com`` invoke it for any route of the API, the stage's execution
logging at ``INFO``, and an alarm on the API's ``5XXError`` (deploy/alarms.py) on the alerts topic.
"""

from __future__ import annotations

import boto3

from chaos.sandbox import names
from deploy.alarms import api_alarms


def provision_rest_api(operator: boto3.Session, alias_arn: str, alerts_topic_arn: str) -> str:
    """Create the API in front of ``alias_arn`` and its alarm; its id."""
    apigateway, lambda_ = operator.client("apigateway"), operator.client("lambda")
    region = operator.region_name
    api = apigateway.create_rest_api(
        name=names.ORDERS_REST_API,
        description="Orders API: submit and read orders (orders-api:live)",
        endpointConfiguration={"types": ["REGIONAL"]},
    )
    api_id: str = api["id"]
    orders = apigateway.create_resource(restApiId=api_id, parentId=api["rootResourceId"], pathPart="orders")
    order = apigateway.create_resource(restApiId=api_id, parentId=orders["id"], pathPart="{order_id}")
    uri = f"arn:aws:apigateway:{region}:lambda:path/2015-03-31/functions/{alias_arn}/invocations"
    for resource, method in ((orders, "POST"), (order, "GET")):
        apigateway.put_method(
            restApiId=api_id, resourceId=resource["id"], httpMethod=method, authorizationType="NONE"
        )
        apigateway.put_integration(
            restApiId=api_id,
            resourceId=resource["id"],
            httpMethod=method,
            type="AWS_PROXY",
            integrationHttpMethod="POST",  # Lambda's Invoke is a POST whatever the route's method
            uri=uri,
            timeoutInMillis=29_000,  # the default, which AWS reports and moto leaves out unless given
        )
    function_arn, _, qualifier = alias_arn.rpartition(":")
    function = function_arn.rsplit(":", 1)[-1]
    lambda_.add_permission(
        FunctionName=function_arn,
        Qualifier=qualifier,
        StatementId=names.ORDERS_API_STATEMENT,
        Action="lambda:InvokeFunction",
        Principal="apigateway.amazonaws.com",
        SourceArn=f"arn:aws:execute-api:{region}:{alias_arn.split(':')[4]}:{api_id}/*",
    )
    apigateway.create_deployment(restApiId=api_id, stageName=names.ORDERS_API_STAGE)
    apigateway.update_stage(
        restApiId=api_id,
        stageName=names.ORDERS_API_STAGE,
        patchOperations=[{"op": "replace", "path": "/*/*/logging/loglevel", "value": "INFO"}],
    )
    # The stage's execution log group, as API Gateway leaves it after its first logged request
    operator.client("logs").create_log_group(
        logGroupName=f"API-Gateway-Execution-Logs_{api_id}/{names.ORDERS_API_STAGE}"
    )
    cloudwatch = operator.client("cloudwatch")
    for alarm in api_alarms(names.ORDERS_REST_API, function, alerts_topic_arn):
        cloudwatch.put_metric_alarm(**alarm)
    return api_id
