"""Small corrections to moto 5.2.5's IAM enforcement, applied inside the emulator process only.

1. Signed REST ``GET``/``HEAD``/``DELETE`` requests (Lambda ``GetFunctionConfiguration``, say) are
   checked against a signature moto computes over the request's parsed parameters instead of its
   body, so every one fails with ``SignatureDoesNotMatch``. We hash the raw body, as AWS does.
2. A denied action is always answered in XML, which clients of JSON-protocol services cannot parse
   (they report the bare HTTP status, "403"). For those services we answer in JSON with the code
   they really use, ``AccessDeniedException``.
3. The action authorized is named after the request's signing name, which for CloudWatch is
   ``monitoring``: a policy granting ``cloudwatch:PutMetricData``, as AWS spells it, is refused. We
   authorize the IAM action name.
4. DynamoDB requests are authorized against the resource ``*``, so a grant scoped to a table's ARN,
   as every real policy is, refuses everything. We authorize against the table the request names; a
   request without the ``TableName`` its operation requires (an SDK that does not validate, such as the
   JavaScript v3 one, sends ``TableName: undefined`` as no member) is answered as DynamoDB answers it,
   ``ValidationException: 1 validation error detected: Value null at 'tableName' failed to satisfy
   constraint: Member must not be null`` (as quoted in Netflix-Skunkworks/iep-apps#527 and
   AllocZero/EfficientDynamoDb#164), not refused for want of a resource.
5. A role's permissions boundary is never read: an assumed role may do whatever its policies allow.
   We also require the boundary's default version to allow the action, as AWS does.
6. DynamoDB requests run concurrently on moto's unlocked tables, so two conditional writes racing for one
   item can both succeed. AWS applies each write atomically, its condition checked against the item as it
   is then; we run DynamoDB's requests one at a time.
7. API Gateway's management API is authorized by operation name (``apigateway:GetRestApi``); AWS names
   its actions by the request's HTTP method, ``apigateway:GET``, ``apigateway:POST``, ``apigateway:PATCH``
   (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-control-access-using-iam-policies-to-create-and-manage-api.html).
   We authorize the method's action.
8. Kinesis requests are authorized against the resource ``*``, so a grant scoped to a stream's ARN (as a
   least-privilege role for Lambda's poller is) refuses them. We authorize against the stream the request
   names (``StreamARN``, else ``StreamName`` in the caller's account and region). DynamoDB Streams requests
   likewise, against the table stream their ``StreamArn`` or ``ShardIterator`` (moto's iterators begin with
   the stream's ARN) names.

``tests/test_moto_fixes.py`` runs the emulator with and without these fixes, so an upstream fix or
regression shows up as a failing test.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

import botocore.session
from moto.core.exceptions import JsonRESTError
from moto.dynamodb.responses import DynamoHandler
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
from moto.iam import access_control
from moto.kinesis.responses import KinesisResponse

JSON_PROTOCOL_SERVICES = frozenset({"lambda", "logs", "dynamodb", "ssm", "sqs", "kms"})
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE"})
_IAM_PREFIXES = {"monitoring": "cloudwatch"}  # signing name -> IAM action prefix, where they differ


class _JsonAccessDenied(JsonRESTError):
    code = 403


class _ValidationError(JsonRESTError):
    code = 400


_NULL_TABLE_NAME = (
    "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: "
    "Member must not be null"
)


@functools.cache
def _requires_table_name(operation: str) -> bool:
    """Whether DynamoDB's ``operation`` requires ``TableName`` (botocore's model of the API)."""
    model = botocore.session.get_session().get_service_model("dynamodb")
    if operation not in model.operation_names:
        return False
    shape = model.operation_model(operation).input_shape
    return shape is not None and "TableName" in shape.required_members


def apply() -> None:
    original_create_request = access_control.IAMRequestBase._create_aws_request
    original_access_denied = access_control.IAMRequest._raise_access_denied
    original_init = access_control.IAMRequestBase.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        service, _, operation = self._action.partition(":")
        if service in _IAM_PREFIXES:
            self._action = f"{_IAM_PREFIXES[service]}:{operation}"
        elif service == "apigateway":
            self._action = f"apigateway:{self._method}"

    def create_aws_request(self: Any) -> Any:
        request = original_create_request(self)
        if self._method in _BODYLESS_METHODS:
            request.data = self._body or b""
        return request

    def raise_access_denied(self: Any) -> None:
        if self._service in JSON_PROTOCOL_SERVICES:
            message = f"User: {self._access_key.arn} is not authorized to perform: {self._action}"
            raise _JsonAccessDenied("AccessDeniedException", message)
        original_access_denied(self)

    def table_resource(self: Any) -> str:
        body = self.body  # parsed already when moto's automated parameter parsing is on
        try:
            table = (body if isinstance(body, dict) else json.loads(body or b"{}")).get("TableName")
        except (ValueError, AttributeError):
            table = None
        if not isinstance(table, str) or not table:
            if _requires_table_name(self._get_action()):
                raise _ValidationError("ValidationException", _NULL_TABLE_NAME)
            return "*"
        return f"arn:aws:dynamodb:{self.region}:{self.current_account}:table/{table}"

    def stream_resource(self: Any) -> str:
        body = self.body
        try:
            found = body if isinstance(body, dict) else json.loads(body or b"{}")
        except ValueError:
            found = {}
        if isinstance(found.get("StreamARN"), str):
            return str(found["StreamARN"])
        if isinstance(found.get("StreamName"), str):
            return f"arn:aws:kinesis:{self.region}:{self.current_account}:stream/{found['StreamName']}"
        return "*"

    def table_stream_resource(self: Any) -> str:
        body = self.body
        try:
            found = body if isinstance(body, dict) else json.loads(body or b"{}")
        except ValueError:
            found = {}
        named = found.get("StreamArn") or str(found.get("ShardIterator") or "").split("|", 1)[0]
        return str(named) if isinstance(named, str) and named.startswith("arn:") else "*"

    original_check = access_control.IAMRequestBase.check_action_permitted

    def check_action_permitted(self: Any, resource: str) -> None:
        original_check(self, resource)  # the identity's own policies: raises when they do not allow it
        boundary = _boundary_document(self._access_key)
        if boundary is None:
            return
        result = access_control.IAMPolicy(boundary).is_action_permitted(self._action, resource)
        if result != access_control.PermissionResult.PERMITTED:
            self._raise_access_denied()

    original_call_action = DynamoHandler.call_action
    one_at_a_time = threading.Lock()

    def call_action(self: Any) -> Any:
        with one_at_a_time:
            return original_call_action(self)

    setattr(DynamoHandler, "call_action", call_action)  # noqa: B010
    setattr(access_control.IAMRequestBase, "check_action_permitted", check_action_permitted)  # noqa: B010
    setattr(DynamoHandler, "_determine_resource", table_resource)  # noqa: B010
    setattr(KinesisResponse, "_determine_resource", stream_resource)  # noqa: B010
    setattr(DynamoDBStreamsHandler, "_determine_resource", table_stream_resource)  # noqa: B010
    setattr(access_control.IAMRequestBase, "__init__", init)  # noqa: B010
    setattr(access_control.IAMRequestBase, "_create_aws_request", create_aws_request)  # noqa: B010
    setattr(access_control.IAMRequest, "_raise_access_denied", raise_access_denied)  # noqa: B010


def _boundary_document(access_key: Any) -> str | None:
    """The default version of the permissions boundary of the role behind assumed-role credentials."""
    if not isinstance(access_key, access_control.AssumedRoleAccessKey):
        return None
    role = access_key.backend.get_role(access_key._owner_role_name)
    if not role.permissions_boundary_arn:
        return None
    policy = access_key.backend.get_policy(role.permissions_boundary_arn)
    return next(str(v.document) for v in policy.versions if v.version_id == policy.default_version_id)
