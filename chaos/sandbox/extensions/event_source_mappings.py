"""SQS event source mappings as Lambda manages them; the sandbox's poller (``chaos/workload/sqs_poller.py``)
delivers, moto does not.

moto 5.2.5 registers an SQS mapping on the queue, and every ``SendMessage`` then invokes the function
itself (through Docker) and deletes the messages, even after the mapping is deleted. Here the mapping is
never registered on its queue: only the client-side poller receives, invokes and deletes.

``CreateEventSourceMapping`` on an SQS queue is refused as Lambda refuses it
(``InvalidParameterValueException``):
- when the queue's visibility timeout is shorter than the function's timeout: ``Queue visibility timeout: 60
  seconds is less than Function timeout: 120 seconds`` (quoted in github-aws-runners/terraform-aws-github-
  runner#465 and winglang/wing#1507);
- when the function's execution role may not ``sqs:ReceiveMessage``, ``sqs:DeleteMessage`` or
  ``sqs:GetQueueAttributes`` on the queue (the permissions Lambda lists in with-sqs.html): ``The function
  execution role does not have permissions to call ReceiveMessage on SQS`` (anomalyco/sst#5737; earlier
  ``The provided execution role ...``, aws/aws-cdk#6770 and functionalone/serverless-iam-roles-per-function#21
  for DeleteMessage). The role's inline and attached policies, and its permissions boundary, are evaluated
  with moto's IAM policy engine against the queue's ARN. The visibility timeout is checked first (AWS does
  not document an order).

A mapping on a Kinesis stream or a DynamoDB stream is never registered on its source either (moto would invoke
the function at each ``PutRecord`` or table write): the sandbox's stream poller delivers
(``chaos/workload/stream_poller.py``). Its creation is refused as Lambda refuses it when the function's role
may not ``GetRecords``, ``GetShardIterator``, ``DescribeStream`` and ``ListStreams`` on the stream
(``kinesis:``, or ``dynamodb:`` for a table's stream): ``Cannot access stream <arn>. Please ensure the role
can perform the GetRecords, GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM.``
(quoted in aws-samples/lambda-refarch-webapp#7 and aws-amplify/amplify-cli#12965). Its answers carry the
stream defaults Lambda answers with (services-kinesis-parameters.html): ``MaximumRetryAttempts`` and
``MaximumRecordAgeInSeconds`` -1 (never give up), ``BisectBatchOnFunctionError`` false,
``ParallelizationFactor`` 1, ``MaximumBatchingWindowInSeconds`` 0 and an empty ``DestinationConfig``;
``MaximumRetryAttempts`` outside -1 to 10,000 and ``MaximumRecordAgeInSeconds`` other than -1 or 60 to 604,800
are refused (``InvalidParameterValueException``), as that page bounds them.

State, StateTransitionReason and LastProcessingResult (API_EventSourceMappingConfiguration): a new mapping is
answered ``Creating`` and then is ``Enabled`` (or ``Disabled``); an update that disables it is answered
``Disabling``, one that enables it ``Enabling``, any other ``Updating``; a deletion ``Deleting`` (as moto
already answers it).
Lambda completes these transitions asynchronously; here they complete at once. StateTransitionReason is
``USER_INITIATED`` and LastProcessingResult ``No records processed`` until the poller reports, as in the
create-event-source-mapping examples of the Lambda developer guide (with-sqs.md, with-mq.md).
``POST /_sandbox/lambda/event-source-mappings/<uuid>`` with a JSON object sets any of those three fields.

``GET /_sandbox/lambda/sqs-poll-view`` answers what the sandbox's pollers ask between their full polls: a
digest of every mapping's configuration, each queue's visible messages by ARN, each stream's records
by ARN and when each mapping was made (what ``LATEST`` starts from) (Lambda's own pollers
long-poll, and answer as soon as a message arrives: chaos/workload/sqs_poller.py).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from typing import Any
from wsgiref.types import StartResponse, WSGIEnvironment

from moto.awslambda.exceptions import InvalidParameterValueException
from moto.awslambda.models import EventSourceMapping, LambdaBackend, lambda_backends
from moto.awslambda.responses import LambdaResponse
from moto.dynamodb.models import dynamodb_backends
from moto.iam import access_control
from moto.iam.models import iam_backends
from moto.kinesis.models import kinesis_backends
from moto.sqs.models import sqs_backends
from moto.utilities.utils import get_partition
from werkzeug.wrappers import Request, Response

from chaos.sandbox.extensions import server_app

CONTROL_PATH = "/_sandbox/lambda/event-source-mappings/"
POLL_VIEW_PATH = "/_sandbox/lambda/sqs-poll-view"
REPORTED_FIELDS = ("State", "StateTransitionReason", "LastProcessingResult")
USER_INITIATED = "USER_INITIATED"
NO_RECORDS = "No records processed"
POLLER_ACTIONS = ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes")
STREAM_ACTIONS = ("GetRecords", "GetShardIterator", "DescribeStream", "ListStreams")
STREAM_DEFAULTS: dict[str, Any] = {
    "MaximumRetryAttempts": -1,
    "MaximumRecordAgeInSeconds": -1,
    "BisectBatchOnFunctionError": False,
    "ParallelizationFactor": 1,
    "MaximumBatchingWindowInSeconds": 0,
    "DestinationConfig": {"OnFailure": {}},
}


def visibility_refusal(visibility_seconds: int, timeout_seconds: int) -> str:
    return (
        f"Queue visibility timeout: {visibility_seconds} seconds is less than Function timeout: "
        f"{timeout_seconds} seconds"
    )


def permission_refusal(action: str) -> str:
    return f"The function execution role does not have permissions to call {action} on SQS"


def _role_allows(account_id: str, region: str, role_arn: str, action: str, resource: str) -> bool:
    """Whether the role's policies (and its boundary, if any) allow ``action`` on ``resource``."""
    backend = iam_backends[account_id][get_partition(region)]
    try:
        role = backend.get_role_by_arn(role_arn)
    except Exception:  # moto raises its own not-found error: a missing role allows nothing
        return False
    documents = [
        _as_json(backend.get_role_policy(role.name, name)[1])
        for name in backend.list_role_policies(role.name)
    ]
    attached, _ = backend.list_attached_role_policies(role.name)
    documents += [_default_document(policy) for policy in attached]
    results = [access_control.IAMPolicy(d).is_action_permitted(action, resource) for d in documents]
    if access_control.PermissionResult.DENIED in results:
        return False
    if access_control.PermissionResult.PERMITTED not in results:
        return False
    if role.permissions_boundary_arn:
        boundary = _default_document(backend.get_policy(role.permissions_boundary_arn))
        verdict = access_control.IAMPolicy(boundary).is_action_permitted(action, resource)
        return bool(verdict == access_control.PermissionResult.PERMITTED)
    return True


def _as_json(document: object) -> str:
    """A policy document as JSON text: moto keeps one written by CloudFormation as a dict."""
    return json.dumps(document) if isinstance(document, dict) else str(document)


def _default_document(policy: Any) -> str:
    return next(str(v.document) for v in policy.versions if v.version_id == policy.default_version_id)


def _check_sqs_source(backend: LambdaBackend, spec: dict[str, Any]) -> None:
    """Refuse the mapping as Lambda does, if its source is an SQS queue of this account and region."""
    queues = sqs_backends[backend.account_id][backend.region_name].queues.values()
    queue = next((q for q in queues if q.queue_arn == spec.get("EventSourceArn")), None)
    if queue is None:
        return
    function = backend.get_function(str(spec.get("FunctionName") or ""))
    visibility, timeout = int(getattr(queue, "visibility_timeout", 0)), int(function.timeout)
    if visibility < timeout:
        raise InvalidParameterValueException(visibility_refusal(visibility, timeout))
    for action in POLLER_ACTIONS:
        if not _role_allows(
            backend.account_id, backend.region_name, function.role, f"sqs:{action}", queue.queue_arn
        ):
            raise InvalidParameterValueException(permission_refusal(action))


def stream_refusal(stream_arn: str) -> str:
    return (
        f"Cannot access stream {stream_arn}. Please ensure the role can perform the GetRecords, "
        "GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM."
    )


def _is_stream(arn: object) -> bool:
    """A Kinesis stream's ARN, or a DynamoDB table stream's (``...:table/<name>/stream/<label>``)."""
    service = str(arn).split(":")[2:3]
    return service == ["kinesis"] or (service == ["dynamodb"] and "/stream/" in str(arn))


def _check_stream_source(backend: LambdaBackend, spec: dict[str, Any], creating: bool) -> None:
    """Refuse limits Lambda refuses, and (at creation) a role that may not read the stream."""
    retries, age = spec.get("MaximumRetryAttempts"), spec.get("MaximumRecordAgeInSeconds")
    if retries is not None and not -1 <= int(retries) <= 10000:
        raise InvalidParameterValueException(f"MaximumRetryAttempts {retries} is not between -1 and 10000")
    if age is not None and int(age) != -1 and not 60 <= int(age) <= 604800:
        raise InvalidParameterValueException(f"MaximumRecordAgeInSeconds {age} is not -1 or 60 to 604800")
    if not creating:
        return
    function = backend.get_function(str(spec.get("FunctionName") or ""))
    arn = str(spec["EventSourceArn"])
    service, role = arn.split(":")[2], function.role  # kinesis:, or dynamodb: for a table's stream
    for action in STREAM_ACTIONS:
        if not _role_allows(backend.account_id, backend.region_name, role, f"{service}:{action}", arn):
            raise InvalidParameterValueException(stream_refusal(arn))


def _reported(mapping: EventSourceMapping) -> dict[str, str]:
    stored: dict[str, str] = getattr(mapping, "sandbox_reported", {})
    settled = "Enabled" if mapping.enabled else "Disabled"
    return {
        "State": settled,
        "StateTransitionReason": USER_INITIATED,
        "LastProcessingResult": NO_RECORDS,
    } | stored


def _patch_models() -> None:
    original_create = LambdaBackend.create_event_source_mapping
    original_update = LambdaBackend.update_event_source_mapping
    original_configuration = EventSourceMapping.get_configuration

    def create(self: LambdaBackend, spec: dict[str, Any]) -> EventSourceMapping:
        _check_sqs_source(self, spec)
        if _is_stream(spec.get("EventSourceArn")):
            _check_stream_source(self, spec, creating=True)
        mapping = original_create(self, spec)
        mapping.sandbox_created = time.time()  # type: ignore[attr-defined]
        _unregister(self, mapping)
        return mapping

    def update(self: LambdaBackend, uuid: str, spec: dict[str, Any]) -> EventSourceMapping | None:
        existing = self.get_event_source_mapping(uuid)
        if existing is not None and _is_stream(existing.event_source_arn):
            _check_stream_source(self, spec, creating=False)
        mapping = original_update(self, uuid, spec)
        if mapping is not None and "Enabled" in spec:
            # A user's enable or disable settles the state the poller may have reported.
            reported = getattr(mapping, "sandbox_reported", {})
            mapping.sandbox_reported = {  # type: ignore[attr-defined]
                k: v for k, v in reported.items() if k not in ("State", "StateTransitionReason")
            }
        return mapping

    def get_configuration(self: EventSourceMapping) -> dict[str, Any]:
        answer: dict[str, Any] = original_configuration(self) | _reported(self)
        return (STREAM_DEFAULTS | answer) if _is_stream(self.event_source_arn) else answer

    setattr(LambdaBackend, "create_event_source_mapping", create)  # noqa: B010
    setattr(LambdaBackend, "update_event_source_mapping", update)  # noqa: B010
    setattr(EventSourceMapping, "get_configuration", get_configuration)  # noqa: B010


def _unregister(backend: LambdaBackend, mapping: EventSourceMapping) -> None:
    """Take the mapping off its source, where moto would deliver it itself: the sandbox's pollers do."""
    for queue in sqs_backends[backend.account_id][backend.region_name].queues.values():
        queue.lambda_event_source_mappings.pop(mapping.function_arn, None)
    for stream in kinesis_backends[backend.account_id][backend.region_name].streams.values():
        stream.lambda_event_source_mappings.pop(mapping.event_source_arn, None)
    for table in dynamodb_backends[backend.account_id][backend.region_name].tables.values():
        table.lambda_event_source_mappings.pop(mapping.function_arn, None)


def _patch_responses() -> None:
    """The answers to Create and Update show the transition Lambda starts, not the state it settles in."""
    original_create = LambdaResponse.create_event_source_mapping
    original_update = LambdaResponse.update_event_source_mapping

    def create(self: LambdaResponse) -> Any:
        status, headers, body = original_create(self)
        return status, headers, _with_state(body, "Creating")

    def update(self: LambdaResponse) -> Any:
        mapping = self.backend.get_event_source_mapping(self.path.split("/")[-1])
        was_enabled = bool(mapping.enabled) if mapping is not None else None
        status, headers, body = original_update(self)
        enabled = self.json_body.get("Enabled")
        if enabled is None or enabled == was_enabled:
            transition = "Updating"
        else:
            transition = "Enabling" if enabled else "Disabling"
        return status, headers, _with_state(body, transition) if status == 202 else body

    setattr(LambdaResponse, "create_event_source_mapping", create)  # noqa: B010
    setattr(LambdaResponse, "update_event_source_mapping", update)  # noqa: B010


def _with_state(body: str | bytes, state: str) -> str:
    return json.dumps(json.loads(body) | {"State": state})


def _find(uuid: str) -> EventSourceMapping | None:
    for regions in list(lambda_backends.values()):
        for backend in list(regions.values()):
            mapping = backend.get_event_source_mapping(uuid)
            if mapping is not None:
                return mapping
    return None


def _control(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    request = Request(environ)
    if request.method != "POST":
        return Response("POST a JSON object\n", status=405)(environ, start_response)
    mapping = _find(request.path[len(CONTROL_PATH) :])
    if mapping is None:
        return Response("no such event source mapping\n", status=404)(environ, start_response)
    try:
        update = json.loads(request.get_data() or b"{}")
    except ValueError:
        update = None
    if not isinstance(update, dict) or not set(update) <= set(REPORTED_FIELDS):
        message = f"a JSON object with any of {', '.join(REPORTED_FIELDS)}\n"
        return Response(message, status=400)(environ, start_response)
    if not all(isinstance(v, str) for v in update.values()):
        return Response("every value must be a string\n", status=400)(environ, start_response)
    mapping.sandbox_reported = getattr(mapping, "sandbox_reported", {}) | update  # type: ignore[attr-defined]
    body = json.dumps(_reported(mapping))
    return Response(body, status=200, content_type="application/json")(environ, start_response)


def _poll_view(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    configurations = sorted(
        json.dumps(mapping.get_configuration(), sort_keys=True, default=str)
        for regions in list(lambda_backends.values())
        for backend in list(regions.values())
        for mapping in list(backend._event_source_mappings.values())
    )
    visible = {
        queue.queue_arn: sum(1 for m in list(queue._messages) if m.visible and not m.delayed)
        for regions in list(sqs_backends.values())
        for backend in list(regions.values())
        for queue in list(backend.queues.values())
    }
    records = {
        stream.arn: sum(len(shard.records) for shard in list(stream.shards.values()))
        for regions in list(kinesis_backends.values())
        for backend in list(regions.values())
        for stream in list(backend.streams.values())
    } | {
        f"{table.table_arn}/stream/{table.latest_stream_label}": len(table.stream_shard.items)
        for regions in list(dynamodb_backends.values())
        for backend in list(regions.values())
        for table in list(backend.tables.values())
        if table.stream_shard is not None
    }
    created = {
        mapping.uuid: getattr(mapping, "sandbox_created", None)
        for regions in list(lambda_backends.values())
        for backend in list(regions.values())
        for mapping in list(backend._event_source_mappings.values())
    }
    digest = hashlib.sha256("\n".join(configurations).encode()).hexdigest()
    body = json.dumps({"mappings": digest, "visible": visible, "records": records, "created": created})
    return Response(body, content_type="application/json")(environ, start_response)


def install() -> None:
    _patch_models()
    _patch_responses()
    server_app.mount(CONTROL_PATH, _control)
    server_app.mount(POLL_VIEW_PATH, _poll_view)
