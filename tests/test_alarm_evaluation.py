"""The sandbox evaluates CloudWatch alarms from their own definitions and notifies SNS as CloudWatch does;
PutLogEvents publishes AWS/Logs metrics; the metric math subset is parsed without eval."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chaos.sandbox import names
from chaos.sandbox.extensions import cloudwatch_alarms, cloudwatch_reset
from chaos.sandbox.extensions.metric_math import MetricMathError, Series, evaluate_queries
from chaos.sandbox.sandbox import Sandbox

PERIOD = 10  # seconds: a high-resolution alarm keeps the test short
SETTLE = 2.5  # seconds: a few evaluation intervals
REGION_NAME = "Canada (Central)"

Message = tuple[str, dict[str, Any]]  # (Subject, Message)


@dataclass(frozen=True)
class Alerting:
    topic_arn: str
    queue_url: str
    cloudwatch: Any
    sqs: Any

    def messages(self, alarm_name: str, wait_seconds: int = 0) -> list[Message]:
        """Notifications about ``alarm_name`` waiting on the queue (deleted once read)."""
        found: list[Message] = []
        while True:
            received = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0 if found else wait_seconds
            ).get("Messages", [])
            if not received:
                return found
            for message in received:
                envelope = json.loads(message["Body"])
                body = json.loads(envelope["Message"])
                if body["AlarmName"] == alarm_name:
                    found.append((envelope["Subject"], body))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def describe(self, alarm_name: str) -> dict[str, Any]:
        alarm: dict[str, Any] = self.cloudwatch.describe_alarms(AlarmNames=[alarm_name])["MetricAlarms"][0]
        return alarm

    def wait_for_state(self, alarm_name: str, state: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (alarm := self.describe(alarm_name))["StateValue"] != state:
            assert time.monotonic() < deadline, f"{alarm_name} stayed {alarm['StateValue']}, not {state}"
            time.sleep(0.2)
        return alarm


@pytest.fixture(scope="module")
def alerting(sandbox: Sandbox) -> Iterator[Alerting]:
    """A topic of our own with an SQS subscription, so the world's queue and alarms are left alone."""
    operator = sandbox.session(names.OPERATOR)
    sns, sqs = operator.client("sns"), operator.client("sqs")
    suffix = uuid.uuid4().hex[:8]
    topic_arn = sns.create_topic(Name=f"alarm-evaluation-{suffix}")["TopicArn"]
    queue_url = sqs.create_queue(QueueName=f"alarm-evaluation-{suffix}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    yield Alerting(topic_arn, queue_url, operator.client("cloudwatch"), sqs)
    sns.delete_topic(TopicArn=topic_arn)
    sqs.delete_queue(QueueUrl=queue_url)


@pytest.fixture
def alarm_name(alerting: Alerting) -> Iterator[str]:
    name = f"alarm-evaluation-{uuid.uuid4().hex[:8]}"
    yield name
    alerting.cloudwatch.delete_alarms(AlarmNames=[name])


def _fresh_period(margin: float = 5.0) -> int:
    """Wait until at least ``margin`` seconds of the current period remain; return its start."""
    now = time.time()
    start = int(now // PERIOD * PERIOD)
    if start + PERIOD - now < margin:
        time.sleep(start + PERIOD - now + 0.2)
        start += PERIOD
    return start


def _short(start: int) -> str:
    return f"{datetime.fromtimestamp(start, UTC):%d/%m/%y %H:%M:%S}"


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def _dimensions(dimensions: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"value": d["Value"], "name": d["Name"]} for d in dimensions]


def _put(alerting: Alerting, metric: str, function: str, value: float) -> None:
    alerting.cloudwatch.put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": "FunctionName", "Value": function}],
                "Value": value,
                "Unit": "Count",
                "StorageResolution": 1,
            }
        ],
    )


def _assert_matches_definition(subject: str, message: dict[str, Any], alarm: dict[str, Any]) -> None:
    """Everything but the state change comes from the stored alarm, in CloudWatch's key order."""
    assert subject == f'{alarm["StateValue"]}: "{alarm["AlarmName"]}" in {REGION_NAME}'
    expected = {
        "AlarmName": alarm["AlarmName"],
        "AlarmDescription": alarm.get("AlarmDescription"),
        "AWSAccountId": names.ACCOUNT_ID,
        "AlarmConfigurationUpdatedTimestamp": _stamp(alarm["AlarmConfigurationUpdatedTimestamp"]),
        "NewStateValue": alarm["StateValue"],
        "NewStateReason": alarm["StateReason"],
        "StateChangeTime": _stamp(alarm["StateUpdatedTimestamp"]),
        "Region": REGION_NAME,
        "AlarmArn": alarm["AlarmArn"],
        "OldStateValue": message["OldStateValue"],
        "OKActions": alarm["OKActions"],
        "AlarmActions": alarm["AlarmActions"],
        "InsufficientDataActions": alarm["InsufficientDataActions"],
        "Trigger": message["Trigger"],
    }
    assert message == expected
    assert list(message) == list(expected)


def test_single_metric_alarm_fires_once_on_a_breach_and_recovers_when_the_data_does(
    alerting: Alerting, alarm_name: str
) -> None:
    function = f"errors-{uuid.uuid4().hex[:8]}"
    alerting.cloudwatch.put_metric_alarm(
        AlarmName=alarm_name,
        AlarmDescription=f"Errors of Lambda function {function}",
        AlarmActions=[alerting.topic_arn],
        OKActions=[alerting.topic_arn],
        Namespace="AWS/Lambda",
        MetricName="Errors",
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        Statistic="Sum",
        Period=PERIOD,
        EvaluationPeriods=1,
        DatapointsToAlarm=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        TreatMissingData="notBreaching",
    )
    # A new alarm starts in INSUFFICIENT_DATA; with no data treated as not breaching it goes to OK.
    [(_, created)] = alerting.messages(alarm_name, wait_seconds=5)
    assert (created["OldStateValue"], created["NewStateValue"]) == ("INSUFFICIENT_DATA", "OK")
    assert created["NewStateReason"] == (
        "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated "
        "as [NonBreaching]."
    )

    start = _fresh_period(margin=SETTLE + 5)
    _put(alerting, "Errors", function, 0.0)
    time.sleep(SETTLE)
    assert alerting.messages(alarm_name) == []
    assert alerting.describe(alarm_name)["StateValue"] == "OK"

    _put(alerting, "Errors", function, 1.0)
    [(subject, fired)] = alerting.messages(alarm_name, wait_seconds=5)
    alarm = alerting.describe(alarm_name)
    _assert_matches_definition(subject, fired, alarm)
    assert (fired["OldStateValue"], fired["NewStateValue"]) == ("OK", "ALARM")
    assert fired["NewStateReason"] == (
        f"Threshold Crossed: 1 out of the last 1 datapoints [1.0 ({_short(start)})] was greater than or "
        "equal to the threshold (1.0) (minimum 1 datapoint for OK -> ALARM transition)."
    )
    assert fired["Trigger"] == {
        "MetricName": "Errors",
        "Namespace": "AWS/Lambda",
        "StatisticType": "Statistic",
        "Statistic": "SUM",
        "Unit": None,
        "Dimensions": _dimensions(alarm["Dimensions"]),
        "Period": alarm["Period"],
        "EvaluationPeriods": alarm["EvaluationPeriods"],
        "DatapointsToAlarm": alarm["DatapointsToAlarm"],
        "ComparisonOperator": alarm["ComparisonOperator"],
        "Threshold": alarm["Threshold"],
        "TreatMissingData": alarm["TreatMissingData"],
        "EvaluateLowSampleCountPercentile": "",
    }
    assert list(fired["Trigger"])[:4] == ["MetricName", "Namespace", "StatisticType", "Statistic"]
    reason_data = json.loads(alarm["StateReasonData"])
    assert reason_data["recentDatapoints"] == [1.0]
    assert reason_data["evaluatedDatapoints"] == [
        {"timestamp": _stamp(datetime.fromtimestamp(start, UTC)), "sampleCount": 2.0, "value": 1.0}
    ]

    # A new, still empty period does not clear the alarm: the last complete one still breaches.
    time.sleep(max(0.0, start + PERIOD - time.time()) + SETTLE)
    assert alerting.messages(alarm_name) == []
    assert alerting.describe(alarm_name)["StateValue"] == "ALARM"

    # Nor does a period that has so far seen only a success: its failures may be still to come.
    _put(alerting, "Errors", function, 0.0)
    time.sleep(SETTLE)
    assert time.time() < start + 2 * PERIOD, "the machine was too slow to see the period before it ended"
    assert alerting.messages(alarm_name) == []
    assert alerting.describe(alarm_name)["StateValue"] == "ALARM"

    # Once it is complete, it is judged.
    time.sleep(max(0.0, start + 2 * PERIOD - time.time()))
    [(subject, recovered)] = alerting.messages(alarm_name, wait_seconds=5)
    _assert_matches_definition(subject, recovered, alerting.describe(alarm_name))
    assert (recovered["OldStateValue"], recovered["NewStateValue"]) == ("ALARM", "OK")
    assert recovered["NewStateReason"] == (
        f"Threshold Crossed: 1 out of the last 1 datapoints [0.0 ({_short(start + PERIOD)})] was not greater "
        "than or equal to the threshold (1.0) (minimum 1 datapoint for ALARM -> OK transition)."
    )


def _log_silence_alarm(alerting: Alerting, alarm_name: str, function: str) -> None:
    """ALARM when the function was invoked in a period that brought its log group no log events."""

    def stat(namespace: str, metric: str, dimension: str, value: str) -> dict[str, Any]:
        return {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": dimension, "Value": value}],
            },
            "Period": PERIOD,
            "Stat": "Sum",
        }

    alerting.cloudwatch.put_metric_alarm(
        AlarmName=alarm_name,
        AlarmDescription=f"{function} ran but wrote no logs",
        AlarmActions=[alerting.topic_arn],
        EvaluationPeriods=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        TreatMissingData="notBreaching",
        Metrics=[
            {
                "Id": "silent",
                "Expression": "IF(inv > 0 AND FILL(logs, 0) == 0, 1, 0)",
                "Label": "Invoked without logs",
                "ReturnData": True,
            },
            {
                "Id": "inv",
                "MetricStat": stat("AWS/Lambda", "Invocations", "FunctionName", function),
                "ReturnData": False,
            },
            {
                "Id": "logs",
                "MetricStat": stat(
                    "AWS/Logs", "IncomingLogEvents", "LogGroupName", f"/aws/lambda/{function}"
                ),
                "ReturnData": False,
            },
        ],
    )


def test_an_evaluation_on_request_has_notified_when_it_returns(
    sandbox: Sandbox, alerting: Alerting, alarm_name: str
) -> None:
    """The drill asks for a pass once its traffic is done: when the request returns, the breach the
    traffic put has been judged and its one notification is queued, without waiting on the thread."""
    function = f"throttles-{uuid.uuid4().hex[:8]}"
    alerting.cloudwatch.put_metric_alarm(
        AlarmName=alarm_name,
        AlarmActions=[alerting.topic_arn],
        Namespace="AWS/Lambda",
        MetricName="Throttles",
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        Statistic="Sum",
        Period=PERIOD,
        EvaluationPeriods=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )
    _fresh_period(margin=5)
    _put(alerting, "Throttles", function, 1.0)
    sandbox.evaluate_alarms()
    [(_, fired)] = alerting.messages(alarm_name)  # no wait: it is already on the queue
    assert fired["NewStateValue"] == "ALARM"
    sandbox.evaluate_alarms()  # an alarm already in ALARM notifies no one again
    assert alerting.messages(alarm_name) == []


def test_a_pass_waits_for_a_reset_in_progress_and_judges_what_it_left() -> None:
    """In the emulator's own process (moto in-process): a pass that starts while CloudWatch is being reset
    waits for it, so it cannot judge the datapoints the reset drops and put the alarm back in ALARM."""
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        cloudwatch.put_metric_alarm(
            AlarmName="errors",
            Namespace="AWS/Lambda",
            MetricName="Errors",
            Dimensions=[{"Name": "FunctionName", "Value": "f"}],
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1.0,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
            TreatMissingData="notBreaching",
        )
        cloudwatch.put_metric_data(
            Namespace="AWS/Lambda",
            MetricData=[
                {"MetricName": "Errors", "Dimensions": [{"Name": "FunctionName", "Value": "f"}], "Value": 1}
            ],
        )
        with cloudwatch_reset.LOCK:  # a reset under way
            judging = threading.Thread(target=cloudwatch_alarms._evaluate_all, args=(time.time(),))
            judging.start()
            judging.join(timeout=1.0)
            assert judging.is_alive(), "the pass ran during the reset"
            cloudwatch_reset.reset()
        judging.join()
        [alarm] = cloudwatch.describe_alarms(AlarmNames=["errors"])["MetricAlarms"]
        assert alarm["StateValue"] == "OK"  # no datapoint left, treated as not breaching


def test_log_silence_alarm_fires_when_invocations_bring_no_log_events(
    alerting: Alerting, alarm_name: str
) -> None:
    function = f"silent-{uuid.uuid4().hex[:8]}"
    _log_silence_alarm(alerting, alarm_name, function)
    alerting.wait_for_state(alarm_name, "OK")

    start = _fresh_period()
    _put(alerting, "Invocations", function, 1.0)

    [(subject, fired)] = alerting.messages(alarm_name, wait_seconds=5)
    alarm = alerting.describe(alarm_name)
    _assert_matches_definition(subject, fired, alarm)
    assert fired["NewStateReason"] == (
        f"Threshold Crossed: 1 out of the last 1 datapoints [1.0 ({_short(start)})] was greater than or "
        "equal to the threshold (1.0) (minimum 1 datapoint for OK -> ALARM transition)."
    )
    metrics = [
        ({"Expression": m["Expression"]} if "Expression" in m else {})
        | {"Id": m["Id"]}
        | ({"Label": m["Label"]} if "Label" in m else {})
        | (
            {
                "MetricStat": {
                    "Metric": {
                        "Dimensions": _dimensions(m["MetricStat"]["Metric"]["Dimensions"]),
                        "MetricName": m["MetricStat"]["Metric"]["MetricName"],
                        "Namespace": m["MetricStat"]["Metric"]["Namespace"],
                    },
                    "Period": m["MetricStat"]["Period"],
                    "Stat": m["MetricStat"]["Stat"],
                }
            }
            if "MetricStat" in m
            else {}
        )
        | {"ReturnData": m["ReturnData"]}
        for m in alarm["Metrics"]
    ]
    assert fired["Trigger"] == {
        "Period": PERIOD,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": 1.0,
        "TreatMissingData": "notBreaching",
        "EvaluateLowSampleCountPercentile": "",
        "Metrics": metrics,
    }
    assert [list(m) for m in fired["Trigger"]["Metrics"]] == [list(m) for m in metrics]


def test_log_silence_alarm_stays_ok_when_put_log_events_wrote_in_the_period(
    sandbox: Sandbox, alerting: Alerting, alarm_name: str
) -> None:
    function = f"logging-{uuid.uuid4().hex[:8]}"
    group = f"/aws/lambda/{function}"
    logs = sandbox.session(names.OPERATOR).client("logs")
    logs.create_log_group(logGroupName=group)
    try:
        logs.create_log_stream(logGroupName=group, logStreamName="2026/11/22/[$LATEST]0")
        _log_silence_alarm(alerting, alarm_name, function)
        alerting.wait_for_state(alarm_name, "OK")

        _fresh_period()
        lines = ["START RequestId: 1", "processed 25 orders for café Zoë", "END RequestId: 1"]
        stamp = int(time.time() * 1000)
        logs.put_log_events(
            logGroupName=group,
            logStreamName="2026/11/22/[$LATEST]0",
            logEvents=[{"timestamp": stamp, "message": line} for line in lines],
        )
        _put(alerting, "Invocations", function, 1.0)
        time.sleep(SETTLE)

        assert alerting.messages(alarm_name) == []
        assert alerting.describe(alarm_name)["StateValue"] == "OK"
        incoming = _incoming(sandbox, group)
        assert incoming == {
            "IncomingLogEvents": [3.0],
            "IncomingBytes": [float(len("".join(lines).encode()))],
        }
    finally:
        logs.delete_log_group(logGroupName=group)


def _incoming(sandbox: Sandbox, group: str) -> dict[str, list[float]]:
    """AWS/Logs metrics of ``group`` over the last minutes, read by the MCP server's identity."""
    cloudwatch = sandbox.session(names.MCP_SERVER).client("cloudwatch")
    now = datetime.now(UTC)
    queries = [
        {
            "Id": metric[len("Incoming") :].lower(),
            "Label": metric,
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/Logs",
                    "MetricName": metric,
                    "Dimensions": [{"Name": "LogGroupName", "Value": group}],
                },
                "Period": 300,
                "Stat": "Sum",
            },
        }
        for metric in ("IncomingLogEvents", "IncomingBytes")
    ]
    results = cloudwatch.get_metric_data(
        MetricDataQueries=queries, StartTime=now - timedelta(minutes=5), EndTime=now + timedelta(minutes=1)
    )["MetricDataResults"]
    return {result["Label"]: result["Values"] for result in results}


def test_actions_disabled_changes_state_but_publishes_nothing(alerting: Alerting, alarm_name: str) -> None:
    function = f"quiet-{uuid.uuid4().hex[:8]}"
    alerting.cloudwatch.put_metric_alarm(
        AlarmName=alarm_name,
        ActionsEnabled=False,
        AlarmActions=[alerting.topic_arn],
        OKActions=[alerting.topic_arn],
        Namespace="AWS/Lambda",
        MetricName="Errors",
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        Statistic="Maximum",
        Period=PERIOD,
        EvaluationPeriods=1,
        Threshold=0.0,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
    )
    alerting.wait_for_state(alarm_name, "OK")
    _put(alerting, "Errors", function, 1.0)
    alerting.wait_for_state(alarm_name, "ALARM")
    assert alerting.messages(alarm_name, wait_seconds=2) == []


# --- metric math, no sandbox ---------------------------------------------------------------------------

PERIODS = [0, 10, 20, 30]


def _run(expression: str, **metrics: Series) -> Series:
    return evaluate_queries({"e": expression}, metrics, "e", PERIODS)


@pytest.mark.parametrize(
    ("expression", "metrics", "expected"),
    [
        (
            "IF(inv > 0 AND FILL(logs, 0) == 0, 1, 0)",
            {"inv": {0: 1.0, 10: 2.0, 20: 0.0}, "logs": {10: 5.0}},
            {0: 1.0, 10: 0.0, 20: 0.0},
        ),
        ("m1 + m2", {"m1": {0: 1.0, 10: 2.0}, "m2": {10: 3.0, 20: 4.0}}, {10: 5.0}),
        ("m1 / m2", {"m1": {0: 1.0, 10: 2.0}, "m2": {0: 0.0, 10: 4.0}}, {10: 0.5}),
        ("(m1 + 1) * 2 >= 4 || NOT m1", {"m1": {0: 0.0, 10: 0.5, 20: 1.0}}, {0: 1.0, 10: 0.0, 20: 1.0}),
        ("-m1 < -1 OR m1 != m1", {"m1": {0: 1.0, 10: 2.0}}, {0: 0.0, 10: 1.0}),
        ("NOT m1 > 1 && m1", {"m1": {0: 1.0, 10: 2.0}}, {0: 1.0, 10: 0.0}),
        ("IF(m1 > 1, m1)", {"m1": {0: 1.0, 10: 2.0}}, {10: 2.0}),
        ("IF(m1 <= 1, m2, 7)", {"m1": {0: 1.0, 10: 2.0}, "m2": {10: 9.0}}, {10: 7.0}),
        ("FILL(m1, 0) * 100 / 4", {"m1": {20: 2.0}}, {0: 0.0, 10: 0.0, 20: 50.0, 30: 0.0}),
        ("2 * 3 - .5e1", {}, {0: 1.0, 10: 1.0, 20: 1.0, 30: 1.0}),
    ],
)
def test_metric_math_per_period(expression: str, metrics: dict[str, Series], expected: Series) -> None:
    assert _run(expression, **metrics) == expected


def test_metric_math_expressions_may_use_other_expressions() -> None:
    expressions = {"e1": "FILL(m1, 0)", "e2": "e1 * 100", "e3": "e2 + e1"}
    assert evaluate_queries(expressions, {"m1": {10: 1.0}}, "e3", PERIODS) == {
        0: 0.0,
        10: 101.0,
        20: 0.0,
        30: 0.0,
    }


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("SUM([m1, m2])", "unsupported syntax '[' at position 4 of 'SUM([m1, m2])'"),
        ("METRICS()", "unsupported function METRICS (supported: IF, FILL) at position 0"),
        ("__import__('os').system('true')", 'unsupported syntax "\'" at position 11'),
        ("m1 ^ 2", "unsupported syntax '^' at position 3"),
        ("m1 +", "unexpected end at position 4"),
        ("(m1", "expected ')' at position 3"),
        ("m1 m1", "unexpected 'm1' at position 3"),
        ("IF(m1)", "IF takes 2 to 3 arguments, got 1"),
        ("m9", "unknown id 'm9'"),
        ("1 / 0", "division by zero between constants"),
    ],
)
def test_metric_math_rejects_what_it_does_not_support(expression: str, error: str) -> None:
    with pytest.raises(MetricMathError, match="^" + re.escape(error)):
        _run(expression, m1={0: 1.0})


def test_metric_math_rejects_expressions_that_refer_to_each_other() -> None:
    with pytest.raises(MetricMathError, match="cycle: a -> b"):
        evaluate_queries({"a": "b + 1", "b": "a"}, {}, "a", PERIODS)
