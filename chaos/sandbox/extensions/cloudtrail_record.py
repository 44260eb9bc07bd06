"""One CloudTrail management event from one API call the emulator authorized and answered with success.

A call is identified before moto answers it, with moto's own router (every protocol and service moto
serves, routed as moto routes it); parameters are parsed with moto's request parsers and the response
with botocore's. Both are rendered through the operation's shapes as CloudTrail writes them: member names
in lowerCamelCase, timestamps in ISO 8601, binary members (a Lambda ``ZipFile``) left out, and every
member the service model marks sensitive (Lambda environment variables, names and values; SSM parameter
values; secret access keys; passwords) written as ``HIDDEN_DUE_TO_SECURITY_REASONS``.

Recorded, as event history records them: every management call, reads included (``Get*``, ``List*``,
``Describe*``, ``LookupEvents``, ``sts:GetCallerIdentity``, ... with ``readOnly`` true and, as CloudTrail
writes reads, no ``responseElements``; event history holds the read and write management events of 90 days:
https://docs.aws.amazon.com/awscloudtrail/latest/userguide/view-cloudtrail-events.html). Not recorded, as in a
default trail: data events (S3 object operations, DynamoDB items, Lambda ``Invoke``, SQS messages, Kinesis
records, SNS ``Publish``, ``PutLogEvents``/``CreateLogStream``, ``PutMetricData``). Calls made before IAM
enforcement (the sandbox bootstrap) are recorded too, with ``userIdentity.type`` "Unknown" when the access key
is no identity's. As in AWS, events of global services (IAM) are recorded in us-east-1, whatever region signed
the call.
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from wsgiref.types import WSGIEnvironment

from botocore.awsrequest import HeadersDict
from botocore.exceptions import DataNotFoundError
from botocore.model import OperationModel, Shape
from botocore.parsers import create_parser
from moto.core.parse import PROTOCOL_PARSERS
from moto.core.request import Request, determine_request_protocol
from moto.core.routing import get_service_router
from moto.iam.exceptions import NotFoundException
from moto.iam.models import get_account_id_from, iam_backends
from moto.sts.models import sts_backends
from moto.utilities.utils import get_partition
from werkzeug.exceptions import NotFound

HIDDEN = "HIDDEN_DUE_TO_SECURITY_REASONS"
GLOBAL_SERVICE_REGION = "us-east-1"

_GLOBAL_SERVICES = frozenset({"iam", "cloudfront", "route53", "organizations"})
_SERVICE_BY_SIGNING_NAME = {"monitoring": "cloudwatch", "email": "ses"}
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/([^/]+)/aws4_request")
_READ_PREFIXES = (
    "Get", "List", "Describe", "Lookup", "Head", "BatchGet", "Query", "Scan", "Receive", "Search",
    "Filter", "Select", "Simulate",
)  # fmt: skip
# Read-only events whose response CloudTrail does record (the session it issued); not named by _READ_PREFIXES.
_READS_WITH_RESPONSE = frozenset({("sts", "AssumeRole")})
# Data events, which a default trail and event history do not record
# (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/logging-data-events-with-cloudtrail.html).
_DATA_EVENTS = {
    "dynamodb": frozenset(
        {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems",
         "BatchGetItem", "TransactGetItems", "Query", "Scan",
         "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"}
    ),
    "lambda": frozenset({"Invoke", "InvokeAsync", "InvokeWithResponseStream"}),
    # https://docs.aws.amazon.com/streams/latest/dev/logging-using-cloudtrail.html (data events)
    "kinesis": frozenset({"PutRecord", "PutRecords", "GetRecords", "GetShardIterator", "SubscribeToShard"}),
    "sqs": frozenset(
        {"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
         "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"}
    ),
    "sns": frozenset({"Publish", "PublishBatch"}),
    "logs": frozenset({"PutLogEvents", "CreateLogStream"}),
    "cloudwatch": frozenset({"PutMetricData"}),
    "s3": frozenset(
        {"DeleteObjects", "ListObjects", "ListObjectsV2", "ListObjectVersions", "ListMultipartUploads"}
    ),  # and every operation on an object `Key`
}  # fmt: skip
# https://docs.aws.amazon.com/lambda/latest/dg/logging-using-cloudtrail.html lists the event names that
# carry an API version; these are the mutating ones.
_LAMBDA_EVENT_NAMES = {
    "AddPermission": "AddPermission20150331v2",
    "CreateAlias": "CreateAlias20150331",
    "CreateEventSourceMapping": "CreateEventSourceMapping20150331",
    "CreateFunction": "CreateFunction20150331",
    "DeleteAlias": "DeleteAlias20150331",
    "DeleteEventSourceMapping": "DeleteEventSourceMapping20150331",
    "DeleteFunction": "DeleteFunction20150331",
    "DeleteFunctionConcurrency": "DeleteFunctionConcurrency20171031",
    "PublishLayerVersion": "PublishLayerVersion20181031",
    "PublishVersion": "PublishVersion20150331",
    "PutFunctionConcurrency": "PutFunctionConcurrency20171031",
    "RemovePermission": "RemovePermission20150331v2",
    "TagResource": "TagResource20170331v2",
    "UntagResource": "UntagResource20170331v2",
    "UpdateAlias": "UpdateAlias20150331",
    "UpdateEventSourceMapping": "UpdateEventSourceMapping20150331",
    "UpdateFunctionCode": "UpdateFunctionCode20150331v2",
    "UpdateFunctionConfiguration": "UpdateFunctionConfiguration20150331v2",
}
# Top-level request or response members that name a resource: (member, resource type, ARN template after
# "arn:{partition}:"). A value that already is an ARN is kept; `{bare}` is the name without a leading slash.
_RESOURCE_MEMBERS: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "lambda": (
        ("FunctionName", "AWS::Lambda::Function", "lambda:{region}:{account}:function:{name}"),
        ("Resource", "AWS::Lambda::Function", None),  # TagResource, UntagResource: the function's ARN
    ),
    "iam": (
        ("RoleName", "AWS::IAM::Role", "iam::{account}:role/{name}"),
        ("UserName", "AWS::IAM::User", "iam::{account}:user/{name}"),
        ("GroupName", "AWS::IAM::Group", "iam::{account}:group/{name}"),
        ("PolicyArn", "AWS::IAM::Policy", None),
        ("PolicyName", "AWS::IAM::Policy", None),
    ),
    "sts": (("RoleArn", "AWS::IAM::Role", None),),
    "ec2": (
        ("GroupId", "AWS::EC2::SecurityGroup", "ec2:{region}:{account}:security-group/{name}"),
        ("VpcId", "AWS::EC2::VPC", "ec2:{region}:{account}:vpc/{name}"),
        ("SubnetId", "AWS::EC2::Subnet", "ec2:{region}:{account}:subnet/{name}"),
        ("NetworkAclId", "AWS::EC2::NetworkAcl", "ec2:{region}:{account}:network-acl/{name}"),
        ("RouteTableId", "AWS::EC2::RouteTable", "ec2:{region}:{account}:route-table/{name}"),
        ("NatGatewayId", "AWS::EC2::NatGateway", "ec2:{region}:{account}:natgateway/{name}"),
    ),
    "s3": (("Bucket", "AWS::S3::Bucket", "s3:::{name}"),),
    "dynamodb": (("TableName", "AWS::DynamoDB::Table", "dynamodb:{region}:{account}:table/{name}"),),
    "sns": (("TopicArn", "AWS::SNS::Topic", None),),
    "sqs": (("QueueUrl", "AWS::SQS::Queue", "sqs:{region}:{account}:{name}"),),
    "logs": (("logGroupName", "AWS::Logs::LogGroup", "logs:{region}:{account}:log-group:{name}"),),
    "cloudwatch": (
        ("AlarmName", "AWS::CloudWatch::Alarm", "cloudwatch:{region}:{account}:alarm:{name}"),
        ("AlarmNames", "AWS::CloudWatch::Alarm", "cloudwatch:{region}:{account}:alarm:{name}"),
    ),
    "ssm": (("Name", "AWS::SSM::Parameter", "ssm:{region}:{account}:parameter/{bare}"),),
    "kms": (("KeyId", "AWS::KMS::Key", "kms:{region}:{account}:key/{name}"),),
}
_OMIT = object()


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    arn: str | None


@dataclass(frozen=True)
class Event:
    """A recorded event: the fields ``LookupEvents`` filters and returns, and the whole record as JSON."""

    account: str
    region: str
    time: float
    event_id: str
    event_name: str
    event_source: str
    read_only: bool
    access_key_id: str
    username: str | None
    resources: tuple[Resource, ...]
    record: str


@dataclass(frozen=True)
class Call:
    """A request that will be recorded if moto answers it with success."""

    service: str
    operation: OperationModel
    protocol: str
    request: Request
    uri_params: dict[str, Any]
    body: bytes
    account: str
    partition: str
    region: str
    access_key_id: str
    identity: dict[str, Any]
    username: str | None
    read_only: bool
    time: datetime

    def event(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> Event:
        parsed_request = PROTOCOL_PARSERS[self.protocol](self.operation, map_type=dict).parse(
            {
                "method": self.request.method,
                "values": self.request.values,
                "headers": self.request.headers,
                "body": self.body,
                "url_path": self.request.path,
                "url_params": self.uri_params,
            }
        )
        response_headers = HeadersDict(headers)
        with_response = not self.read_only or (self.service, self.operation.name) in _READS_WITH_RESPONSE
        parsed_response = self._parse_response(status, response_headers, body) if with_response else None
        resources = self._resources(parsed_request, parsed_response)
        event_id = str(uuid.uuid4())
        name = self.operation.name
        event_name = _LAMBDA_EVENT_NAMES.get(name, name) if self.service == "lambda" else name
        source = f"{self.operation.service_model.endpoint_prefix}.amazonaws.com"
        record: dict[str, Any] = {
            "eventVersion": "1.09",
            "userIdentity": self.identity,
            "eventTime": self.time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "eventSource": source,
            "eventName": event_name,
            "awsRegion": self.region,
            "sourceIPAddress": self.request.remote_addr,
            "userAgent": self.request.user_agent.string,
            "requestParameters": _render(self.operation.input_shape, parsed_request) or None,
            "responseElements": _render(self.operation.output_shape, parsed_response) or None,
            "requestID": response_headers.get("x-amzn-RequestId")
            or response_headers.get("x-amz-request-id")
            or str(uuid.uuid4()),
            "eventID": event_id,
            "readOnly": self.read_only,
            "resources": [
                {"ARN": r.arn, "accountId": self.account, "type": r.type} for r in resources if r.arn
            ],
            "eventType": "AwsApiCall",
            "managementEvent": True,
            "recipientAccountId": self.account,
            "eventCategory": "Management",
        }
        return Event(
            account=self.account,
            region=self.region,
            time=self.time.timestamp(),
            event_id=event_id,
            event_name=event_name,
            event_source=source,
            read_only=self.read_only,
            access_key_id=self.access_key_id,
            username=self.username,
            resources=resources,
            record=json.dumps(record, default=str),
        )

    def _parse_response(self, status: int, headers: HeadersDict, body: bytes) -> dict[str, Any] | None:
        shape = self.operation.output_shape
        if shape is None or self.operation.has_streaming_output:
            return None
        parsed: dict[str, Any] = create_parser(self.protocol).parse(
            {"status_code": status, "headers": headers, "body": body}, shape
        )
        return parsed

    def _resources(
        self, parsed_request: Mapping[str, Any], parsed_response: Mapping[str, Any] | None
    ) -> tuple[Resource, ...]:
        found: dict[tuple[str, str], Resource] = {}
        for member, resource_type, template in _RESOURCE_MEMBERS.get(self.service, ()):
            for params in (parsed_request, parsed_response or {}):
                values = params.get(member)
                for value in values if isinstance(values, list) else [values]:
                    if isinstance(value, str) and value:
                        resource = self._resource(resource_type, template, value)
                        found.setdefault((resource.type, resource.name), resource)
        return tuple(found.values())

    def _resource(self, resource_type: str, template: str | None, value: str) -> Resource:
        if value.startswith("arn:"):
            return Resource(resource_type, re.split(r"[:/]", value)[-1], value)
        name = value.rstrip("/").rsplit("/", 1)[-1] if value.startswith("http") else value
        arn = None
        if template is not None:
            arn = f"arn:{self.partition}:" + template.format(
                region=self.region,
                account=self.account,
                name=name,
                bare=name.lstrip("/"),
            )
        return Resource(resource_type, name, arn)


def identify(environ: WSGIEnvironment) -> Call | None:
    """The call ``environ`` makes, if it is one to record; leaves the request body readable."""
    if environ.get("REQUEST_METHOD") == "OPTIONS":
        return None
    credential = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if credential is None:
        return None
    access_key_id, signed_region, signing_name = credential.groups()
    body = _read_body(environ)
    request = Request({**environ, "wsgi.input": io.BytesIO(body)})
    service = _SERVICE_BY_SIGNING_NAME.get(signing_name, signing_name)
    if service == "apigateway" and request.path.startswith("/v2/"):
        service = "apigatewayv2"  # HTTP APIs: signed as API Gateway, served under /v2/
    try:
        operation, uri_params = get_service_router(service).match(request)
    except (NotFound, DataNotFoundError, NotImplementedError):
        return None
    if _is_data_event(service, operation):
        return None
    read_only = (service, operation.name) in _READS_WITH_RESPONSE or operation.name.startswith(_READ_PREFIXES)
    account = (
        os.environ.get("MOTO_ACCOUNT_ID")
        or environ.get("HTTP_X_MOTO_ACCOUNT_ID")
        or get_account_id_from(access_key_id)
    )
    partition = get_partition(signed_region)
    identity, username = _identity(account, partition, access_key_id)
    return Call(
        service=service,
        operation=operation,
        protocol=determine_request_protocol(operation.service_model, request.content_type),
        request=request,
        uri_params=uri_params,
        body=body,
        account=account,
        partition=partition,
        region=GLOBAL_SERVICE_REGION if service in _GLOBAL_SERVICES else signed_region,
        access_key_id=access_key_id,
        identity=identity,
        username=username,
        read_only=read_only,
        time=datetime.now(UTC),
    )


def _read_body(environ: WSGIEnvironment) -> bytes:
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        body: bytes = stream.read()
    else:
        body = stream.read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _is_data_event(service: str, operation: OperationModel) -> bool:
    if operation.name in _DATA_EVENTS.get(service, ()):
        return True
    shape = operation.input_shape
    return service == "s3" and shape is not None and "Key" in shape.members


def _identity(account: str, partition: str, access_key_id: str) -> tuple[dict[str, Any], str | None]:
    """``userIdentity`` for the caller, and the user name ``LookupEvents`` reports."""
    iam = iam_backends[account][partition]
    key = iam.access_keys.get(access_key_id)
    user = iam.users.get(key.user_name) if key is not None and key.user_name else None
    if user is not None:
        identity: dict[str, Any] = {
            "type": "IAMUser",
            "principalId": user.id,
            "arn": user.arn,
            "accountId": account,
        }
        return identity | {"accessKeyId": access_key_id, "userName": user.name}, user.name
    session = sts_backends[account][partition].get_assumed_role_from_access_key(access_key_id)
    if session is None:
        return {"type": "Unknown", "accountId": account, "accessKeyId": access_key_id}, None
    issuer = {"type": "Role", "arn": session.role_arn, "accountId": account}
    try:
        role = iam.get_role_by_arn(session.role_arn)
        issuer |= {"principalId": role.id, "userName": role.name}
    except NotFoundException:
        issuer |= {"userName": session.role_arn.rsplit("/", 1)[-1]}
    return {
        "type": "AssumedRole",
        "principalId": session.user_id,
        "arn": session.arn,
        "accountId": account,
        "accessKeyId": access_key_id,
        "sessionContext": {"sessionIssuer": issuer, "attributes": {"mfaAuthenticated": "false"}},
    }, session.session_name


def _render(shape: Shape | None, value: Any) -> Any:
    """``value`` as CloudTrail writes it (see the module docstring); ``_OMIT`` for what it leaves out."""
    if shape is None or value is None or shape.type_name == "blob":
        return None if shape is None or value is None else _OMIT
    if shape.metadata.get("sensitive"):
        return HIDDEN
    if shape.type_name == "structure" and isinstance(value, Mapping):
        members = {
            name[:1].lower() + name[1:]: _render(member, value[name])
            for name, member in shape.members.items()
            if name in value
        }
        return {name: item for name, item in members.items() if item is not _OMIT}
    if shape.type_name == "list" and isinstance(value, list):
        return [item for item in (_render(shape.member, v) for v in value) if item is not _OMIT]
    if shape.type_name == "map" and isinstance(value, Mapping):
        entries = {str(k): _render(shape.value, v) for k, v in value.items()}
        return {k: item for k, item in entries.items() if item is not _OMIT}
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value
