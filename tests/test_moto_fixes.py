"""Our moto fixes are needed (released moto fails without them) and work (our sandbox passes).

If the first test fails, moto changed upstream: re-check `chaos/sandbox/moto_fixes.py` and drop the fix
that is no longer needed.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from tests.conftest import Undo
from tests.stream_stage import table_with_stream


@pytest.fixture(scope="module")
def unpatched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with running_sandbox(Path(tmp_path_factory.mktemp("unpatched")), unpatched=True) as sandbox:
        yield sandbox


def _signed_get_error(sandbox: Sandbox) -> str | None:
    client = sandbox.session(names.OPERATOR).client("lambda")
    try:
        client.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def _json_denial_code(sandbox: Sandbox) -> str:
    client = sandbox.session(names.MCP_SERVER).client("logs")
    with pytest.raises(ClientError) as caught:
        client.delete_log_group(logGroupName=names.LOG_GROUP)
    return str(caught.value.response["Error"]["Code"])


def test_released_moto_still_has_both_bugs(unpatched: Sandbox) -> None:
    assert _signed_get_error(unpatched) == "403", "moto now verifies signed GETs: remove fix 1"
    assert _json_denial_code(unpatched) == "403", (
        "moto now answers JSON-protocol denials in JSON: remove fix 2"
    )


def test_fixed_sandbox_verifies_signed_gets_and_answers_denials_in_json(sandbox: Sandbox) -> None:
    assert _signed_get_error(sandbox) is None
    assert _json_denial_code(sandbox) == "AccessDeniedException"


def test_released_moto_still_lacks_what_the_cloudwatch_extension_adds(unpatched: Sandbox) -> None:
    """If this fails, re-check chaos/sandbox/extensions/cloudwatch_alarms.py and log_metrics.py."""
    operator = unpatched.session(names.OPERATOR)
    cloudwatch, logs = operator.client("cloudwatch"), operator.client("logs")
    errors = {"MetricName": "Errors", "Dimensions": [{"Name": "FunctionName", "Value": names.FUNCTION_NAME}]}
    cloudwatch.put_metric_alarm(
        AlarmName="released-moto-errors",
        Namespace="AWS/Lambda",
        **errors,
        Statistic="Sum",
        Period=10,
        EvaluationPeriods=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )
    cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=[errors | {"Value": 5.0}])
    logs.create_log_stream(logGroupName=names.LOG_GROUP, logStreamName="released-moto")
    logs.put_log_events(
        logGroupName=names.LOG_GROUP,
        logStreamName="released-moto",
        logEvents=[{"timestamp": int(time.time() * 1000), "message": "hello"}],
    )
    time.sleep(3)

    [alarm] = cloudwatch.describe_alarms(AlarmNames=["released-moto-errors"])["MetricAlarms"]
    assert (alarm["StateValue"], alarm["StateReason"]) == ("OK", "Unchecked: Initial alarm creation"), (
        "moto now evaluates alarms (or starts them in INSUFFICIENT_DATA)"
    )
    assert cloudwatch.list_metrics(Namespace="AWS/Logs")["Metrics"] == [], "moto now publishes AWS/Logs"
    metric = {"Namespace": "AWS/Lambda"} | errors
    reader = unpatched.session(names.MCP_SERVER).client("cloudwatch")  # readable only with moto_fixes fix 3
    with pytest.raises(ClientError, match="not authorized to perform: monitoring:GetMetricData"):
        reader.get_metric_data(
            MetricDataQueries=[
                {"Id": "errors", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Sum"}}
            ],
            StartTime=datetime.now(UTC) - timedelta(minutes=5),
            EndTime=datetime.now(UTC),
        )


def _let_one_request_through(sandbox: Sandbox) -> None:
    reset_auth = urllib.request.Request(  # noqa: S310 - the emulator's loopback URL
        f"{sandbox.endpoint_url}/moto-api/reset-auth", data=b"1", headers={"Content-Type": "text/plain"}
    )
    with urllib.request.urlopen(reset_auth, timeout=5):  # noqa: S310
        pass


def _alias_statement(sandbox: Sandbox) -> tuple[Any, dict[str, str], str]:
    """A statement added to orders-api:live's policy: the client, the alias, the statement id."""
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    qualified = {"FunctionName": names.ORDERS_FUNCTION, "Qualifier": names.ORDERS_ALIAS}
    sid = f"alias-{uuid.uuid4().hex[:8]}"
    lambda_.add_permission(
        **qualified, StatementId=sid, Action="lambda:InvokeFunction", Principal="s3.amazonaws.com"
    )
    return lambda_, qualified, sid


def _sids(lambda_: Any, **params: str) -> set[str]:
    try:
        policy = json.loads(lambda_.get_policy(**params)["Policy"])
    except lambda_.exceptions.ResourceNotFoundException:  # no statement at all
        return set()
    return {s["Sid"] for s in policy["Statement"]}


def test_released_moto_still_shares_one_policy_between_a_function_and_its_alias(unpatched: Sandbox) -> None:
    """If this fails, re-check chaos/sandbox/extensions/lambda_policies.py."""
    lambda_, qualified, sid = _alias_statement(unpatched)
    lambda_.add_permission(**qualified, StatementId=sid, Action="lambda:InvokeFunction", Principal="*")
    _let_one_request_through(unpatched)
    statements = json.loads(lambda_.get_policy(FunctionName=names.ORDERS_FUNCTION)["Policy"])["Statement"]
    assert [s["Sid"] for s in statements].count(sid) == 2, "moto now keeps an alias's policy apart"


def test_fixed_sandbox_keeps_an_alias_s_policy_its_own_and_refuses_a_statement_id_twice(
    sandbox: Sandbox, undo: Undo
) -> None:
    lambda_, qualified, sid = _alias_statement(sandbox)
    undo(
        lambda: sid in _sids(lambda_, **qualified) and lambda_.remove_permission(**qualified, StatementId=sid)
    )
    assert sid in _sids(lambda_, **qualified)
    assert sid not in _sids(lambda_, FunctionName=names.ORDERS_FUNCTION)
    [statement] = [
        s for s in json.loads(lambda_.get_policy(**qualified)["Policy"])["Statement"] if s["Sid"] == sid
    ]
    assert statement["Resource"].endswith(f":function:{names.ORDERS_FUNCTION}:{names.ORDERS_ALIAS}")
    with pytest.raises(ClientError, match=f"The statement id \\({sid}\\) provided already exists"):
        lambda_.add_permission(**qualified, StatementId=sid, Action="lambda:InvokeFunction", Principal="*")
    with pytest.raises(lambda_.exceptions.ResourceNotFoundException):
        lambda_.remove_permission(FunctionName=names.ORDERS_FUNCTION, StatementId=sid)  # not the function's
    lambda_.remove_permission(**qualified, StatementId=sid)
    assert sid not in _sids(lambda_, **qualified)


def test_released_moto_still_lacks_what_the_lambda_and_cloudtrail_extensions_add(unpatched: Sandbox) -> None:
    """If this fails, re-check chaos/sandbox/extensions/cloudtrail.py and code_location.py."""
    operator = unpatched.session(names.OPERATOR)
    cloudtrail = operator.client("cloudtrail", config=Config(retries={"total_max_attempts": 1}))
    with pytest.raises(ClientError) as unimplemented:
        cloudtrail.lookup_events()
    assert unimplemented.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500, (
        "moto now implements LookupEvents"
    )
    _let_one_request_through(unpatched)  # GetFunction is a signed GET, which released moto refuses (fix 1)
    location = operator.client("lambda").get_function(FunctionName=names.FUNCTION_NAME)["Code"]["Location"]
    assert not location.startswith(unpatched.endpoint_url), "moto now serves Code.Location itself"
    assert str(urlparse(location).hostname).endswith(".amazonaws.com")


def _client_as(sandbox: Sandbox, role: str, service: str, *, parameter_validation: bool = True) -> Any:
    """A client with the credentials of a function's role, assumed as the identity the role trusts."""
    lambda_service = sandbox.session(names.LAMBDA_SERVICE)
    role_arn = f"arn:aws:iam::{names.ACCOUNT_ID}:role/{role}"
    sts = lambda_service.client("sts")
    credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName="moto-fixes")["Credentials"]
    return lambda_service.client(
        service,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        config=Config(parameter_validation=parameter_validation),
    )


def _get_order_as_its_role(sandbox: Sandbox) -> str | None:
    """orders-api's role is granted dynamodb:GetItem on the orders table's ARN only."""
    dynamodb = _client_as(sandbox, names.ORDERS_ROLE, "dynamodb")
    try:
        dynamodb.get_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": "0001-000"}})
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def test_released_moto_still_authorizes_dynamodb_against_no_resource(unpatched: Sandbox) -> None:
    assert _get_order_as_its_role(unpatched) == "403", "moto now authorizes DynamoDB by table: remove fix 4"


def test_fixed_sandbox_honours_table_scoped_grants(sandbox: Sandbox) -> None:
    assert _get_order_as_its_role(sandbox) is None


def _list_click_shards_as_its_role(sandbox: Sandbox) -> str | None:
    """click-aggregator's role is granted the Kinesis reads on the clickstream's ARN only."""
    kinesis = _client_as(sandbox, names.CLICK_ROLE, "kinesis")
    try:
        kinesis.list_shards(StreamName=names.CLICK_STREAM)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def test_released_moto_still_authorizes_kinesis_against_no_resource(unpatched: Sandbox) -> None:
    assert _list_click_shards_as_its_role(unpatched) == "403", "moto authorizes by stream: drop fix 8"


def test_fixed_sandbox_honours_stream_scoped_grants(sandbox: Sandbox) -> None:
    assert _list_click_shards_as_its_role(sandbox) is None


def _describe_a_table_stream_as_a_role_scoped_to_it(sandbox: Sandbox, undo: Undo) -> str | None:
    """A role granted dynamodb:DescribeStream on one table stream's ARN only."""
    operator = sandbox.session(names.OPERATOR)
    iam, role = operator.client("iam"), f"fix-8-{uuid.uuid4().hex[:8]}"
    stream = table_with_stream(operator, undo, role)
    trust = {
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}"},
        "Action": "sts:AssumeRole",
    }
    iam.create_role(
        RoleName=role, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [trust]})
    )
    grant = {"Effect": "Allow", "Action": "dynamodb:DescribeStream", "Resource": stream}
    document = json.dumps({"Version": "2012-10-17", "Statement": [grant]})
    iam.put_role_policy(RoleName=role, PolicyName="stream", PolicyDocument=document)

    def remove() -> None:
        iam.delete_role_policy(RoleName=role, PolicyName="stream")
        iam.delete_role(RoleName=role)

    undo(remove)
    try:
        _client_as(sandbox, role, "dynamodbstreams").describe_stream(StreamArn=stream)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def test_released_moto_still_authorizes_dynamodb_streams_against_no_resource(
    unpatched: Sandbox, undo: Undo
) -> None:
    refused = _describe_a_table_stream_as_a_role_scoped_to_it(unpatched, undo)
    assert refused is not None, "moto authorizes DynamoDB Streams by stream: drop fix 8's second part"


def test_fixed_sandbox_honours_table_stream_scoped_grants(sandbox: Sandbox, undo: Undo) -> None:
    assert _describe_a_table_stream_as_a_role_scoped_to_it(sandbox, undo) is None


def _read_input_within_a_boundary(sandbox: Sandbox, undo: Undo) -> str | None:
    """data-processor's role (granted s3:GetObject on its input bucket), bounded by a boundary that allows
    everything but s3:GetObject."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    statements = [
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"},
    ]
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    arn = iam.create_policy(PolicyName="fix-5-boundary", PolicyDocument=document)["Policy"]["Arn"]
    undo(lambda: iam.delete_policy(PolicyArn=arn))
    iam.put_role_permissions_boundary(RoleName=names.ROLE_NAME, PermissionsBoundary=arn)
    undo(lambda: iam.delete_role_permissions_boundary(RoleName=names.ROLE_NAME))
    s3 = _client_as(sandbox, names.ROLE_NAME, "s3")
    try:
        s3.get_object(Bucket=names.INPUT_BUCKET, Key=names.INPUT_KEYS[0])
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def test_released_moto_still_ignores_permissions_boundaries(unpatched: Sandbox, undo: Undo) -> None:
    assert _read_input_within_a_boundary(unpatched, undo) is None, "moto now enforces boundaries: drop fix 5"


def test_fixed_sandbox_enforces_permissions_boundaries(sandbox: Sandbox, undo: Undo) -> None:
    assert _read_input_within_a_boundary(sandbox, undo) == "AccessDenied"


def test_released_moto_still_drops_lambda_logging_config(unpatched: Sandbox) -> None:
    """If this fails, re-check chaos/sandbox/extensions/lambda_logging.py."""
    lambda_ = unpatched.session(names.OPERATOR).client("lambda")
    answer = lambda_.update_function_configuration(
        FunctionName=names.FUNCTION_NAME, LoggingConfig={"LogGroup": "/custom/group"}
    )
    assert "LoggingConfig" not in answer, "moto now keeps LoggingConfig"


def test_fixed_sandbox_keeps_lambda_logging_config(sandbox: Sandbox, undo: Undo) -> None:
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    assert lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME)["LoggingConfig"] == {
        "LogFormat": "Text",
        "LogGroup": f"/aws/lambda/{names.FUNCTION_NAME}",
    }
    answer = lambda_.update_function_configuration(
        FunctionName=names.FUNCTION_NAME, LoggingConfig={"LogGroup": "/custom/group"}
    )
    undo(
        lambda: lambda_.update_function_configuration(
            FunctionName=names.FUNCTION_NAME,
            LoggingConfig={"LogGroup": f"/aws/lambda/{names.FUNCTION_NAME}"},
        )
    )
    assert answer["LoggingConfig"]["LogGroup"] == "/custom/group"


def test_fixed_sandbox_answers_a_dynamodb_request_without_its_table_name_as_dynamodb_does(
    sandbox: Sandbox,
) -> None:
    """An SDK that does not validate (JavaScript v3) sends no TableName; DynamoDB refuses the request as
    invalid, whoever sends it (wording as quoted in Netflix-Skunkworks/iep-apps#527)."""
    dynamodb = _client_as(sandbox, names.ORDER_INTAKE_ROLE, "dynamodb", parameter_validation=False)
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(Item={"order_id": {"S": "no-table"}})
    assert caught.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: "
        "Member must not be null",
    }


def test_released_moto_still_keeps_the_first_event_invoke_config(unpatched: Sandbox) -> None:
    """The fixed sandbox overwrites on put: tests/test_chaos_injectors_event_paths.py."""
    lambda_ = unpatched.session(names.OPERATOR).client("lambda")
    lambda_.put_function_event_invoke_config(FunctionName=names.REPORT_FUNCTION, MaximumRetryAttempts=2)
    lambda_.put_function_event_invoke_config(FunctionName=names.REPORT_FUNCTION, MaximumRetryAttempts=0)
    reset_auth = urllib.request.Request(  # noqa: S310 - a signed GET: let one through unchecked (fix 1)
        f"{unpatched.endpoint_url}/moto-api/reset-auth", data=b"1", headers={"Content-Type": "text/plain"}
    )
    with urllib.request.urlopen(reset_auth, timeout=5):  # noqa: S310
        pass
    shown = lambda_.get_function_event_invoke_config(FunctionName=names.REPORT_FUNCTION)
    assert shown["MaximumRetryAttempts"] == 2, "moto overwrites now: drop that part of lambda_async_config.py"


def _streams_in_answer_order(sandbox: Sandbox) -> list[str]:
    """Two streams written a millisecond apart in turn, read back with one FilterLogEvents call."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    streams = [f"interleave-{uuid.uuid4().hex[:8]}-{n}" for n in "ab"]
    now_ms = int(time.time() * 1000)
    for offset, stream in enumerate(streams):
        logs.create_log_stream(logGroupName=names.LOG_GROUP, logStreamName=stream)
        events = [{"timestamp": now_ms + offset + 2 * i, "message": f"{i}"} for i in range(2)]
        logs.put_log_events(logGroupName=names.LOG_GROUP, logStreamName=stream, logEvents=events)
    answer = (
        sandbox.session(names.MCP_SERVER)
        .client("logs")
        .filter_log_events(logGroupName=names.LOG_GROUP, logStreamNames=streams)
    )
    return ["ab"[streams.index(event["logStreamName"])] for event in answer["events"]]


def test_released_moto_still_answers_filter_log_events_one_stream_after_the_other(unpatched: Sandbox) -> None:
    assert _streams_in_answer_order(unpatched) == ["a", "a", "b", "b"], (
        "moto interleaves by default now: drop that part of extensions/log_filters.py"
    )


def test_fixed_sandbox_interleaves_the_streams_in_time_order_as_aws_does(sandbox: Sandbox) -> None:
    """AWS has ignored `interleaved` since June 17, 2019: every answer interleaves the streams."""
    assert _streams_in_answer_order(sandbox) == ["a", "b", "a", "b"]


def test_released_moto_still_keeps_url_permission_parameters_as_keys_and_no_final_slash(
    unpatched: Sandbox,
) -> None:
    """If this fails, re-check chaos/sandbox/extensions/lambda_urls.py (the fixed side:
    tests/test_function_urls.py). Read from the answers of the writes: released moto refuses signed GETs."""
    lambda_ = unpatched.session(names.OPERATOR).client("lambda")
    added = lambda_.add_permission(
        FunctionName=names.FUNCTION_NAME,
        StatementId=f"url-{uuid.uuid4().hex[:8]}",
        Action="lambda:InvokeFunctionUrl",
        Principal="*",
        FunctionUrlAuthType="NONE",
    )
    statement = json.loads(added["Statement"])
    assert statement.get("FunctionUrlAuthType") == "NONE", "moto now writes the URL auth type as a condition"
    assert "Condition" not in statement
    created = lambda_.create_function_url_config(FunctionName=names.FUNCTION_NAME, AuthType="NONE")
    assert not created["FunctionUrl"].endswith("/"), "moto's function URLs now end with a slash"


def test_released_moto_still_names_api_gateway_actions_by_operation(unpatched: Sandbox) -> None:
    """If this fails, remove moto_fixes fix 7."""
    client = unpatched.session(names.APIGATEWAY_SERVICE).client("apigateway")
    with pytest.raises(ClientError, match="not authorized to perform: apigateway:CreateRestApi"):
        client.create_rest_api(name="released-moto")


def test_fixed_sandbox_names_api_gateway_actions_by_http_method(sandbox: Sandbox) -> None:
    client = sandbox.session(names.APIGATEWAY_SERVICE).client("apigateway")
    assert names.ORDERS_REST_API in {api["name"] for api in client.get_rest_apis()["items"]}  # apigateway:GET
    with pytest.raises(ClientError, match="not authorized to perform: apigateway:POST"):
        client.create_rest_api(name="fixed-sandbox")


def test_fixed_sandbox_deletes_an_alias_s_policy_with_the_alias(sandbox: Sandbox, undo: Undo) -> None:
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    function, alias = names.ORDERS_FUNCTION, f"tmp-{uuid.uuid4().hex[:6]}"
    version = lambda_.get_alias(FunctionName=function, Name=names.ORDERS_ALIAS)["FunctionVersion"]
    lambda_.create_alias(FunctionName=function, Name=alias, FunctionVersion=version)
    undo(lambda: lambda_.delete_alias(FunctionName=function, Name=alias))
    qualified = {"FunctionName": function, "Qualifier": alias}
    lambda_.add_permission(**qualified, StatementId="s", Action="lambda:InvokeFunction", Principal="*")
    assert _sids(lambda_, **qualified) == {"s"}
    lambda_.delete_alias(FunctionName=function, Name=alias)
    lambda_.create_alias(FunctionName=function, Name=alias, FunctionVersion=version)
    assert _sids(lambda_, **qualified) == set()  # a new alias of the same name starts with no policy
