"""What the emulator adds to moto (chaos/sandbox/extensions): a server that keeps connections alive, Lambda
code locations that serve the package, and CloudTrail event history answered by ``LookupEvents``. AWS only
through boto3, as the sandbox identities."""

from __future__ import annotations

import http.client
import io
import json
import math
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.model import Shape

from chaos.sandbox import names
from chaos.sandbox.extensions.cloudtrail import Allowance, EventHistory
from chaos.sandbox.extensions.cloudtrail_record import Event
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from tests.conftest import Undo
from tests.fault_scenarios import cloudtrail_reader

HIDDEN = "HIDDEN_DUE_TO_SECURITY_REASONS"
GLOBAL_REGION = "us-east-1"  # where CloudTrail records IAM, a global service
OPERATOR_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _package(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", f"def handler(event, context):\n    return {text!r}\n")
    return buffer.getvalue()


def _function(sandbox: Sandbox, undo: Undo, package: bytes) -> str:
    name = _unique("extensions-test")
    client = sandbox.session(names.OPERATOR).client("lambda")
    client.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="handler.handler",
        Code={"ZipFile": package},
    )
    undo(lambda: client.delete_function(FunctionName=name))
    return name


def _policy(**statement: Any) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]}


def _role(sandbox: Sandbox, undo: Undo, policy: dict[str, Any]) -> tuple[str, str]:
    """A temporary role the operator may assume, with ``policy`` inline; its name and ARN."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    name = _unique("extensions-test-role")
    trust = _policy(Principal={"AWS": OPERATOR_ARN}, Action="sts:AssumeRole")
    arn: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    undo(lambda: iam.delete_role(RoleName=name))
    iam.put_role_policy(RoleName=name, PolicyName="access", PolicyDocument=json.dumps(policy))
    undo(lambda: iam.delete_role_policy(RoleName=name, PolicyName="access"))
    return name, arn


def _get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, method=method)  # noqa: S310 - the emulator's loopback URL
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers["Content-Type"], error.read()


# --- The server ------------------------------------------------------------------------------------------


def test_connections_are_kept_alive_request_after_request(sandbox: Sandbox, undo: Undo) -> None:
    """More connections at once than cheroot keeps by default (10), each serving three requests on one
    socket: the emulator closes none of them, whatever else holds connections to it."""
    package = _package("kept")
    name = _function(sandbox, undo, package)
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    url = urllib.parse.urlsplit(lambda_.get_function(FunctionName=name)["Code"]["Location"])
    connections = [http.client.HTTPConnection(url.netloc, timeout=5) for _ in range(16)]
    sockets: list[list[object]] = [[] for _ in connections]
    try:
        for _ in range(3):
            for connection, used in zip(connections, sockets, strict=True):
                connection.request("GET", f"{url.path}?{url.query}")
                response = connection.getresponse()
                assert (response.status, response.read()) == (200, package)
                assert not response.will_close, "the emulator closed the connection after a response"
                used.append(connection.sock)
    finally:
        for connection in connections:
            connection.close()
    for used in sockets:
        assert used[0] is not None
        assert used.count(used[0]) == 3, "a request needed a new connection"


def test_a_signed_request_to_a_percent_encoded_path_is_authorized(sandbox: Sandbox, undo: Undo) -> None:
    """The signature covers the path as sent (``:`` of an ARN as ``%3A``), not as the server decoded it."""
    name = _function(sandbox, undo, _package("arn"))
    client = sandbox.session(names.OPERATOR).client("lambda")
    arn = client.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
    assert client.get_function(FunctionName=arn)["Configuration"]["FunctionName"] == name


# --- Code.Location ------------------------------------------------------------------------------------


def test_code_location_serves_each_versions_package(sandbox: Sandbox, undo: Undo) -> None:
    first, second = _package("first"), _package("second")
    name = _function(sandbox, undo, first)
    client = sandbox.session(names.OPERATOR).client("lambda")
    old_latest = client.get_function(FunctionName=name)["Code"]["Location"]
    assert old_latest.startswith(f"{sandbox.endpoint_url}/")
    assert _get(old_latest) == (200, "application/zip", first)

    version = client.publish_version(FunctionName=name)["Version"]
    client.update_function_code(FunctionName=name, ZipFile=second)

    latest = client.get_function(FunctionName=name)["Code"]["Location"]
    published = client.get_function(FunctionName=name, Qualifier=version)["Code"]["Location"]
    assert _get(latest) == (200, "application/zip", second)
    assert _get(published) == (200, "application/zip", first)
    assert _get(old_latest)[0] == 403, "a location of code that has since changed must be refused"


def test_each_update_gives_a_function_and_an_alias_a_new_revision(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("first"))
    client = sandbox.session(names.OPERATOR).client("lambda")
    created = client.get_function_configuration(FunctionName=name)["RevisionId"]
    assert client.get_function(FunctionName=name)["Configuration"]["RevisionId"] == created  # a read keeps it
    updated = client.update_function_configuration(FunctionName=name, Timeout=7)["RevisionId"]
    assert updated != created
    assert client.get_function_configuration(FunctionName=name)["RevisionId"] == updated
    recoded = client.update_function_code(FunctionName=name, ZipFile=_package("second"))["RevisionId"]
    assert recoded not in {created, updated}
    version = client.publish_version(FunctionName=name)["Version"]
    alias = client.create_alias(FunctionName=name, Name="live", FunctionVersion=version)["RevisionId"]
    moved = client.update_alias(FunctionName=name, Name="live", Description="moved")["RevisionId"]
    assert moved != alias
    assert client.get_alias(FunctionName=name, Name="live")["RevisionId"] == moved


def test_code_location_refuses_a_wrong_signature_other_methods_and_unknown_functions(
    sandbox: Sandbox, undo: Undo
) -> None:
    name = _function(sandbox, undo, _package("refused"))
    location = (
        sandbox.session(names.OPERATOR).client("lambda").get_function(FunctionName=name)["Code"]["Location"]
    )
    base, signature = location.split("?Signature=")
    forged = f"{base}?Signature={'0' * len(signature)}"
    status, content_type, body = _get(forged)
    assert (status, content_type) == (403, "application/xml")
    assert b"<Code>AccessDenied</Code>" in body
    assert _get(base)[0] == 403
    assert _get(location.replace(name, f"{name}-gone"))[0] == 404
    assert _get(location, method="DELETE")[0] == 403


# --- CloudTrail ---------------------------------------------------------------------------------------


def _cloudtrail(sandbox: Sandbox, profile: str = names.MCP_SERVER, region: str | None = None) -> Any:
    return cloudtrail_reader(sandbox, profile, region)


def _lookup(client: Any, **params: Any) -> list[dict[str, Any]]:
    """Every event the lookup finds, following NextToken."""
    events: list[dict[str, Any]] = []
    while True:
        page = client.lookup_events(**params)
        events += page["Events"]
        if "NextToken" not in page:
            return events
        params["NextToken"] = page["NextToken"]


def _writes(client: Any, **params: Any) -> list[dict[str, Any]]:
    """The writes among every event the lookup finds (event history records reads too)."""
    return [event for event in _lookup(client, **params) if event["ReadOnly"] == "false"]


def _by(key: str, value: str) -> list[dict[str, str]]:
    return [{"AttributeKey": key, "AttributeValue": value}]


def _record(event: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(event["CloudTrailEvent"])
    return record


def _access_key(sandbox: Sandbox, profile: str) -> str:
    key: str = sandbox.session(profile).get_credentials().access_key
    return key


def _tag_twice(sandbox: Sandbox, name: str, pause: float = 0.0) -> None:
    client = sandbox.session(names.OPERATOR).client("lambda")
    arn = client.get_function_configuration(FunctionName=name)["FunctionArn"]
    client.tag_resource(Resource=arn, Tags={"step": "1"})
    time.sleep(pause)
    client.untag_resource(Resource=arn, TagKeys=["step"])


def test_an_operator_change_is_recorded_with_who_what_and_when(sandbox: Sandbox, undo: Undo) -> None:
    document = _policy(Action="s3:GetObject", Resource="*")
    role, _ = _role(sandbox, undo, document)
    sandbox.session(names.OPERATOR).client("iam").get_role(RoleName=role)  # a read: recorded as one

    events = _lookup(_cloudtrail(sandbox, region=GLOBAL_REGION), LookupAttributes=_by("ResourceName", role))
    assert [(e["EventName"], e["ReadOnly"]) for e in events] == [
        ("GetRole", "true"),
        ("PutRolePolicy", "false"),
        ("CreateRole", "false"),
    ]
    assert _record(events[0])["responseElements"] is None, "CloudTrail records no response of a read"
    assert _record(events[0])["requestParameters"] == {"roleName": role}
    event, operator_key = events[1], _access_key(sandbox, names.OPERATOR)
    assert event["EventSource"] == "iam.amazonaws.com"
    assert (event["Username"], event["AccessKeyId"], event["ReadOnly"]) == (
        names.OPERATOR,
        operator_key,
        "false",
    )
    assert abs((datetime.now(UTC) - event["EventTime"]).total_seconds()) < 30
    assert {"ResourceType": "AWS::IAM::Role", "ResourceName": role} in event["Resources"]
    record = _record(event)
    assert record["userIdentity"]["type"] == "IAMUser"
    assert record["userIdentity"]["arn"] == OPERATOR_ARN
    assert record["userIdentity"]["accessKeyId"] == operator_key
    assert json.loads(record["requestParameters"]["policyDocument"]) == document
    assert record["requestParameters"]["roleName"] == role
    assert (record["eventName"], record["awsRegion"], record["readOnly"]) == (
        "PutRolePolicy",
        GLOBAL_REGION,
        False,
    )
    assert (record["eventType"], record["managementEvent"]) == ("AwsApiCall", True)
    assert record["recipientAccountId"] == names.ACCOUNT_ID
    assert record["eventID"] == event["EventId"]
    assert _lookup(_cloudtrail(sandbox), LookupAttributes=_by("ResourceName", role)) == [], (
        "IAM is a global service: its events are in us-east-1 only"
    )


def test_an_assumed_role_and_its_change_are_recorded(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("assumed"))
    role, role_arn = _role(sandbox, undo, _policy(Action="lambda:TagResource", Resource="*"))
    sts = sandbox.session(names.OPERATOR).client("sts")
    credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName="tagger")["Credentials"]
    assumed = sandbox.session(names.OPERATOR).client(
        "lambda",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    assumed.tag_resource(
        Resource=f"arn:aws:lambda:{sandbox.region}:{names.ACCOUNT_ID}:function:{name}", Tags={"k": "v"}
    )

    cloudtrail = _cloudtrail(sandbox)
    [assume] = _lookup(cloudtrail, LookupAttributes=_by("ResourceName", role_arn))
    assert (assume["EventName"], assume["EventSource"], assume["ReadOnly"]) == (
        "AssumeRole",
        "sts.amazonaws.com",
        "true",
    )
    assert assume["Username"] == names.OPERATOR
    assert credentials["SecretAccessKey"] not in assume["CloudTrailEvent"]

    [tag] = _lookup(cloudtrail, LookupAttributes=_by("AccessKeyId", credentials["AccessKeyId"]))
    assert (tag["EventName"], tag["Username"]) == ("TagResource20170331v2", "tagger")
    identity = _record(tag)["userIdentity"]
    assert identity["type"] == "AssumedRole"
    assert identity["arn"] == f"arn:aws:sts::{names.ACCOUNT_ID}:assumed-role/{role}/tagger"
    assert identity["sessionContext"]["sessionIssuer"]["arn"] == role_arn
    assert {"ResourceType": "AWS::Lambda::Function", "ResourceName": name} in tag["Resources"]


def test_reads_are_recorded_as_read_only_and_data_events_are_not(sandbox: Sandbox) -> None:
    s3 = sandbox.session(names.OPERATOR).client("s3")
    bucket = _unique("cloudtrail-test-bucket")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": sandbox.region})
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
    s3.get_bucket_policy(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="object", Body=b"data")
    s3.get_object(Bucket=bucket, Key="object")["Body"].read()
    s3.list_objects_v2(Bucket=bucket)
    s3.delete_object(Bucket=bucket, Key="object")
    s3.delete_bucket(Bucket=bucket)

    events = _lookup(_cloudtrail(sandbox), LookupAttributes=_by("ResourceName", bucket))
    assert [(e["EventName"], e["ReadOnly"]) for e in events] == [
        ("DeleteBucket", "false"),
        ("GetBucketPolicy", "true"),
        ("PutBucketPolicy", "false"),
        ("CreateBucket", "false"),
    ]
    assert {e["EventSource"] for e in events} == {"s3.amazonaws.com"}


def _logs(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    logs = sandbox.session(names.OPERATOR).client("logs")
    logs.create_log_group(logGroupName=name)
    logs.put_retention_policy(logGroupName=name, retentionInDays=1)
    logs.create_log_stream(logGroupName=name, logStreamName="stream")
    logs.delete_log_group(logGroupName=name)
    return name, ["DeleteLogGroup", "PutRetentionPolicy", "CreateLogGroup"]


def _cloudwatch(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    cloudwatch = sandbox.session(names.OPERATOR).client("cloudwatch")
    cloudwatch.put_metric_data(Namespace="Test", MetricData=[{"MetricName": name, "Value": 1.0}])
    cloudwatch.put_metric_alarm(
        AlarmName=name, Namespace="Test", MetricName=name, Statistic="Sum", Period=60, EvaluationPeriods=1,
        Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
    )  # fmt: skip
    cloudwatch.delete_alarms(AlarmNames=[name])
    return name, ["DeleteAlarms", "PutMetricAlarm"]


def _dynamodb(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    dynamodb = sandbox.session(names.OPERATOR).client("dynamodb")
    dynamodb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )  # fmt: skip
    dynamodb.put_item(TableName=name, Item={"id": {"S": "1"}})
    dynamodb.delete_table(TableName=name)
    return name, ["DeleteTable", "CreateTable"]


def _sqs(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    sqs = sandbox.session(names.OPERATOR).client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="data")
    sqs.delete_queue(QueueUrl=url)
    return name, ["DeleteQueue", "CreateQueue"]


def _sns(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    sns = sandbox.session(names.OPERATOR).client("sns")
    arn = sns.create_topic(Name=name)["TopicArn"]
    sns.publish(TopicArn=arn, Message="data")
    sns.delete_topic(TopicArn=arn)
    return name, ["DeleteTopic", "CreateTopic"]


def _ssm(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    ssm = sandbox.session(names.OPERATOR).client("ssm")
    ssm.put_parameter(Name=f"/{name}", Value="value", Type="SecureString")
    ssm.delete_parameter(Name=f"/{name}")
    return f"/{name}", ["DeleteParameter", "PutParameter"]


def _ec2(sandbox: Sandbox, name: str) -> tuple[str, list[str]]:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    group = ec2.create_security_group(GroupName=name, Description="test", VpcId=sandbox.world.vpc_id)[
        "GroupId"
    ]
    ec2.delete_security_group(GroupId=group)
    return group, ["DeleteSecurityGroup", "CreateSecurityGroup"]


@pytest.mark.parametrize("change", [_logs, _cloudwatch, _dynamodb, _sqs, _sns, _ssm, _ec2])
def test_management_calls_of_each_service_are_recorded(
    sandbox: Sandbox, change: Callable[[Sandbox, str], tuple[str, list[str]]]
) -> None:
    resource, expected = change(sandbox, _unique("cloudtrail-test"))
    events = _lookup(_cloudtrail(sandbox), LookupAttributes=_by("ResourceName", resource))
    assert [e["EventName"] for e in events] == expected
    assert {e["Username"] for e in events} == {names.OPERATOR}


def test_secrets_are_never_recorded(sandbox: Sandbox, undo: Undo) -> None:
    since = datetime.fromtimestamp(time.time() - 1, UTC)
    name = _function(sandbox, undo, _package("secret"))
    variable, secret = f"SECRET_{uuid.uuid4().hex[:8].upper()}", uuid.uuid4().hex
    client = sandbox.session(names.OPERATOR).client("lambda")
    client.update_function_configuration(FunctionName=name, Environment={"Variables": {variable: secret}})

    everything = [
        event["CloudTrailEvent"]
        for region in (sandbox.region, GLOBAL_REGION)
        for event in _lookup(_cloudtrail(sandbox, region=region), StartTime=since)
    ]
    assert everything
    for text in (secret, variable, sandbox.world.mcp_api_key):
        assert not [record for record in everything if text in record], f"{text} was recorded"
    update, create = _lookup(_cloudtrail(sandbox), LookupAttributes=_by("ResourceName", name))
    assert update["EventName"] == "UpdateFunctionConfiguration20150331v2"
    assert _record(update)["requestParameters"]["environment"] == {"variables": HIDDEN}
    assert create["EventName"] == "CreateFunction20150331"
    assert "zipFile" not in _record(create)["requestParameters"]["code"]


def test_lambda_event_names_carry_the_api_version(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("versions"))
    client = sandbox.session(names.OPERATOR).client("lambda")
    client.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=1)
    client.delete_function_concurrency(FunctionName=name)
    client.update_function_code(FunctionName=name, ZipFile=_package("versions, again"))
    version = client.publish_version(FunctionName=name)["Version"]
    client.create_alias(FunctionName=name, Name="live", FunctionVersion=version)
    client.update_alias(FunctionName=name, Name="live", Description="updated")
    client.add_permission(
        FunctionName=name, StatementId="sns", Action="lambda:InvokeFunction", Principal="sns.amazonaws.com"
    )

    events = _lookup(_cloudtrail(sandbox), LookupAttributes=_by("ResourceName", name))
    assert [e["EventName"] for e in reversed(events)] == [
        "CreateFunction20150331",
        "PutFunctionConcurrency20171031",
        "DeleteFunctionConcurrency20171031",
        "UpdateFunctionCode20150331v2",
        "PublishVersion20150331",
        "CreateAlias20150331",
        "UpdateAlias20150331",
        "AddPermission20150331v2",
    ]


def test_pages_return_every_event_once_newest_first(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("pages"))
    _tag_twice(sandbox, name)
    _tag_twice(sandbox, name)
    cloudtrail, query = _cloudtrail(sandbox), _by("ResourceName", name)

    paged = _lookup(cloudtrail, LookupAttributes=query, MaxResults=2)
    whole = cloudtrail.lookup_events(LookupAttributes=query)["Events"]
    assert [e["EventId"] for e in paged] == [e["EventId"] for e in whole]
    assert len({e["EventId"] for e in paged}) == len(paged)
    writes = [e["EventName"] for e in paged if e["ReadOnly"] == "false"]
    assert writes == ["UntagResource20170331v2", "TagResource20170331v2"] * 2 + ["CreateFunction20150331"]
    assert len(paged) > len(writes), "the reads of the function (GetFunctionConfiguration) are recorded too"
    times = [e["EventTime"] for e in paged]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize(
    "key",
    [
        "EventId",
        "EventName",
        "ReadOnly",
        "Username",
        "ResourceType",
        "ResourceName",
        "EventSource",
        "AccessKeyId",
    ],
)
def test_each_lookup_attribute_filters(sandbox: Sandbox, undo: Undo, key: str) -> None:
    name = _function(sandbox, undo, _package(key))
    _tag_twice(sandbox, name)
    cloudtrail = _cloudtrail(sandbox)
    [untag, tag, _] = _writes(cloudtrail, LookupAttributes=_by("ResourceName", name))
    value = {
        "EventId": tag["EventId"],
        "EventName": tag["EventName"],
        "ReadOnly": "false",
        "Username": names.OPERATOR,
        "ResourceType": "AWS::Lambda::Function",
        "ResourceName": name,
        "EventSource": "lambda.amazonaws.com",
        "AccessKeyId": _access_key(sandbox, names.OPERATOR),
    }[key]
    found = cloudtrail.lookup_events(LookupAttributes=_by(key, value))["Events"]
    assert tag["EventId"] in [e["EventId"] for e in found]
    for event in found:
        record = _record(event)
        assert (
            value
            in {
                "EventId": [event["EventId"]],
                "EventName": [event["EventName"], record["eventName"]],
                "ReadOnly": [event["ReadOnly"], str(record["readOnly"]).lower()],
                "Username": [event.get("Username")],
                "ResourceType": [r["ResourceType"] for r in event["Resources"]],
                "ResourceName": [r["ResourceName"] for r in event["Resources"]],
                "EventSource": [event["EventSource"], record["eventSource"]],
                "AccessKeyId": [event["AccessKeyId"], record["userIdentity"]["accessKeyId"]],
            }[key]
        )
    if key == "EventId":
        assert untag["EventId"] not in [e["EventId"] for e in found]


def test_a_time_range_filters(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("times"))
    _tag_twice(sandbox, name, pause=2.0)
    cloudtrail, query = _cloudtrail(sandbox), _by("ResourceName", name)
    untag, tag, _ = _writes(cloudtrail, LookupAttributes=query)
    between = datetime.fromtimestamp(math.floor(tag["EventTime"].timestamp()) + 1, UTC)
    later = _writes(cloudtrail, LookupAttributes=query, StartTime=between)
    earlier = _writes(cloudtrail, LookupAttributes=query, EndTime=between)
    assert [e["EventId"] for e in later] == [untag["EventId"]]
    assert tag["EventId"] in [e["EventId"] for e in earlier]
    assert untag["EventId"] not in [e["EventId"] for e in earlier]


def _error_code(call: Callable[[], object]) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return str(caught.value.response["Error"]["Code"])


def test_invalid_lookups_get_the_documented_errors(sandbox: Sandbox) -> None:
    cloudtrail = _cloudtrail(sandbox)
    now = datetime.now(UTC)
    earlier = datetime.fromtimestamp(now.timestamp() - 60, UTC)
    two = _by("EventSource", "lambda.amazonaws.com") + _by("Username", names.OPERATOR)
    token = cloudtrail.lookup_events(MaxResults=1)["NextToken"]
    assert _error_code(lambda: cloudtrail.lookup_events(MaxResults=51)) == "InvalidMaxResultsException"
    assert (
        _error_code(lambda: cloudtrail.lookup_events(NextToken="not-a-token")) == "InvalidNextTokenException"
    )
    assert (
        _error_code(
            lambda: cloudtrail.lookup_events(
                NextToken=token, LookupAttributes=_by("Username", names.OPERATOR)
            )
        )
        == "InvalidNextTokenException"
    ), "a token is only valid with the parameters it came from"
    assert (
        _error_code(lambda: cloudtrail.lookup_events(LookupAttributes=two))
        == "InvalidLookupAttributesException"
    )
    assert (
        _error_code(lambda: cloudtrail.lookup_events(LookupAttributes=_by("Colour", "blue")))
        == "InvalidLookupAttributesException"
    )
    assert (
        _error_code(lambda: cloudtrail.lookup_events(StartTime=now, EndTime=earlier))
        == "InvalidTimeRangeException"
    )


def test_the_lookup_allowance_is_two_at_once_then_two_a_second() -> None:
    now = [100.0]
    allowance = Allowance(2.0, tokens=2.0, clock=lambda: now[0])
    assert [allowance.take() for _ in range(3)] == [True, True, False]
    now[0] += 0.25
    assert allowance.take() is False, "half a request's worth is not a request"
    now[0] += 0.25
    assert [allowance.take(), allowance.take()] == [True, False]
    now[0] += 60
    assert [allowance.take() for _ in range(3)] == [True, True, False], "an idle minute saves no more than 2"


@pytest.fixture(scope="module")
def at_aws_pace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of its own at time scale 1: LookupEvents allowed at AWS's 2 a second."""
    with running_sandbox(tmp_path_factory.mktemp("aws-pace")) as own:
        yield own


def test_lookups_beyond_the_allowance_are_throttled_as_aws_throttles_them(at_aws_pace: Sandbox) -> None:
    # At most 2 + 2 * t of 12 lookups sent at once are answered within t seconds: unless answering them all
    # takes the emulator 5 s, some are refused. Retries off, so botocore does not hide the refusals.
    cloudtrail = at_aws_pace.session(names.MCP_SERVER).client(
        "cloudtrail", config=Config(retries={"total_max_attempts": 1})
    )

    def lookup(_: int) -> str:
        try:
            cloudtrail.lookup_events(MaxResults=1)
        except ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return "answered"

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lookup, range(12)))
    assert "ThrottlingException: Rate exceeded" in answers
    assert set(answers) == {"answered", "ThrottlingException: Rate exceeded"}
    time.sleep(1.0)  # the allowance refills at two a second
    assert lookup(0) == "answered"


def _history_of(count: int, time_scale: float, at: float) -> Callable[[float], int]:
    """How many of ``count`` writes made at ``at`` an event history on the test's clock has delivered by a
    given moment."""
    now = [at]
    history = EventHistory(
        time_scale=time_scale, lookups_per_second=1e9, rng=random.Random(7), clock=lambda: now[0]
    )  # no throttle: the test reads every page at once
    for n in range(count):
        history.add(
            Event(
                names.ACCOUNT_ID,
                names.DEFAULT_REGION,
                at,
                f"e{n}",
                "TagResource",
                "lambda",
                False,
                "K",
                None,
                (),
                "{}",
            )
        )

    def delivered_at(moment: float) -> int:
        now[0] = moment
        query = {"LookupAttributes": [{"AttributeKey": "ReadOnly", "AttributeValue": "false"}]}
        found, token = 0, None
        while True:
            page = history.lookup(
                names.ACCOUNT_ID, names.DEFAULT_REGION, query | ({"NextToken": token} if token else {})
            )
            found += len(page["Events"])
            token = page.get("NextToken")
            if token is None:
                return found

    return delivered_at


@pytest.mark.parametrize("time_scale", [1.0, 10.0])
def test_each_event_is_delivered_after_a_delay_drawn_as_aws_documents_it(time_scale: float) -> None:
    # AWS: delivered "within an average of about 5 minutes", not guaranteed; here 1 to 9 minutes, uniformly,
    # divided by the time scale. 2,000 writes made at t = 1000 on the test's clock.
    delivered = _history_of(2_000, time_scale, 1000.0)
    minute = 60.0 / time_scale
    assert delivered(1000.0) == 0, "nothing is delivered at once"
    assert delivered(1000.0 + 0.99 * minute) == 0, "nothing within the first minute"
    half = delivered(1000.0 + 5 * minute)
    assert 900 <= half <= 1_100, f"{half} of 2,000 delivered after 5 minutes: the mean delay is not 5 minutes"
    assert delivered(1000.0 + 9 * minute) == 2_000, "everything within 9 minutes"


def test_a_write_is_not_in_the_event_history_right_after_it_is_made(at_aws_pace: Sandbox, undo: Undo) -> None:
    # The sandbox's default: each event drawn a delay of at least a minute (at AWS's pace, time scale 1).
    name = _function(at_aws_pace, undo, _package("late"))
    cloudtrail = _cloudtrail(at_aws_pace)
    assert _lookup(cloudtrail, LookupAttributes=_by("ResourceName", name)) == []
    at_aws_pace.set_cloudtrail_delay(0)  # a fixed delay replaces the draw ...
    assert [e["EventName"] for e in _lookup(cloudtrail, LookupAttributes=_by("ResourceName", name))] != []
    at_aws_pace.set_cloudtrail_delay(None)  # ... and the draw comes back
    assert _lookup(cloudtrail, LookupAttributes=_by("ResourceName", name)) == []


def test_the_delivery_delay_holds_new_events_back(sandbox: Sandbox, undo: Undo) -> None:
    delay = 4.0
    sandbox.set_cloudtrail_delay(delay)
    undo(lambda: sandbox.set_cloudtrail_delay(0))
    started = time.time()
    name = _function(sandbox, undo, _package("delay"))
    _tag_twice(sandbox, name)
    cloudtrail, query = _cloudtrail(sandbox), _by("ResourceName", name)
    assert _lookup(cloudtrail, LookupAttributes=query) == []
    while len(_lookup(cloudtrail, LookupAttributes=query)) < 3:
        assert time.time() - started < delay + 10, "the held-back events never arrived"
        time.sleep(0.2)
    assert time.time() - started >= delay


def test_an_identity_without_lookup_events_is_denied(sandbox: Sandbox) -> None:
    with pytest.raises(ClientError) as denied:
        _cloudtrail(sandbox, names.WATCHDOG).lookup_events()
    error = denied.value.response
    assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (
        "AccessDeniedException",
        403,
    )
    assert "cloudtrail:LookupEvents" in error["Error"]["Message"]


def _conformance_errors(shape: Shape, value: Any, path: str = "") -> list[str]:
    """Where ``value`` (a decoded JSON response) strays from ``shape``: unknown members or wrong types."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        errors = [f"{path}.{key}: not a member of {shape.name}" for key in value if key not in shape.members]
        for key, member in shape.members.items():
            if key in value:
                errors += _conformance_errors(member, value[key], f"{path}.{key}")
        return errors
    if kind == "list":
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [
            error
            for i, item in enumerate(value)
            for error in _conformance_errors(shape.member, item, f"{path}[{i}]")
        ]
    expected: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "boolean": (bool,),
        "integer": (int,),
        "long": (int,),
        "timestamp": (int, float),
    }
    ok = isinstance(value, expected[kind]) and not (kind != "boolean" and isinstance(value, bool))
    return [] if ok else [f"{path}: {value!r} is not a {kind}"]


def test_lookup_events_answers_in_the_shape_botocore_expects(sandbox: Sandbox, undo: Undo) -> None:
    name = _function(sandbox, undo, _package("shape"))
    _tag_twice(sandbox, name)
    cloudtrail = _cloudtrail(sandbox)
    bodies: list[bytes] = []
    cloudtrail.meta.events.register(
        "before-parse.cloudtrail.LookupEvents",
        lambda response_dict, **_: bodies.append(response_dict["body"]),
    )
    cloudtrail.lookup_events(LookupAttributes=_by("ResourceName", name), MaxResults=2)
    output = (
        botocore.session.get_session()
        .get_service_model("cloudtrail")
        .operation_model("LookupEvents")
        .output_shape
    )
    answer = json.loads(bodies[0])
    assert answer["NextToken"]
    assert len(answer["Events"]) == 2
    assert all(event["Username"] and event["Resources"] for event in answer["Events"])
    assert _conformance_errors(output, answer) == []


@pytest.mark.parametrize("body", [b"-1", b"soon", b"inf", b""])
def test_a_delivery_delay_that_is_not_seconds_or_aws_is_refused_saying_what_is_accepted(
    sandbox: Sandbox, body: bytes
) -> None:
    request = urllib.request.Request(  # noqa: S310 - the emulator's loopback URL
        f"{sandbox.endpoint_url}/_sandbox/cloudtrail/delivery-delay", data=body, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)  # noqa: S310
    with refused.value as error:
        assert (error.code, error.read()) == (
            400,
            b"the body must be a number of seconds, 0 or more, or 'aws'\n",
        )
