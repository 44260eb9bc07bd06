"""SNS records to incident signals: a CloudWatch alarm on a Lambda metric, an alarm on a queue or a topic
(an ``AWS/SQS`` metric of one ``QueueName``, an ``AWS/SNS`` metric of one ``TopicName``), or a direct
incident JSON.

An alarm on a queue or topic names no function: its signal carries the alarmed resource (its ARN built
from the alarm ARN's region and account) and an empty ``function_name``, and the pipeline asks the MCP
server which functions it is tied to (``supervisor.incident.consumers``), one signal per function.

On the orchestrator's cold path, so plain Python only (no pydantic): a record that is not one of the
two shapes is rejected with a reason that names what was wrong.

Times are checked against the handler's clock: an alarm's ``StateChangeTime`` outside the window
[now - ``MAX_AGE``, now + ``MAX_AHEAD``] (or beyond what UTC can hold) is replaced by the SNS
``Timestamp``, and an SNS ``Timestamp`` outside it by now; the signal says why (``time_note``). A time
that far off is a broken clock or a forged message, and dating an incident by it would open it in the
far future, where every later alarm of the function would join it as a duplicate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from mcp_server.lambda_names import function_name_of
from mcp_server.source_names import parse_source

MAX_DETAIL_CHARS = 4_000
MAX_AGE: Final[timedelta] = timedelta(days=30)  # beyond SNS's longest delivery retries (23 days)
MAX_AHEAD: Final[timedelta] = timedelta(minutes=5)  # clock skew
# Namespaces of resources an alarm may name instead of a function: (dimension, the ARN's service).
RESOURCE_NAMESPACES: Final[dict[str, tuple[str, Literal["sqs", "sns"]]]] = {
    "AWS/SQS": ("QueueName", "sqs"),
    "AWS/SNS": ("TopicName", "sns"),
}


class MalformedMessage(ValueError):
    """An SNS record that is not an incident signal; nothing is written for it."""

    def __init__(self, message_id: str | None, reason: str) -> None:
        super().__init__(reason)
        self.message_id = message_id
        self.reason = reason


@dataclass(frozen=True)
class AlarmedResource:
    """The queue or topic an alarm watches: its metric's namespace and dimension, and its ARN."""

    namespace: str
    dimension: str
    value: str
    arn: str

    def as_dict(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "dimension": self.dimension,
            "value": self.value,
            "arn": self.arn,
        }


@dataclass(frozen=True)
class Signal:
    """One failure report about one Lambda function (or, until resolved, about a queue or topic)."""

    message_id: str
    source: Literal["cloudwatch_alarm", "direct"]
    function_name: str  # "" for an alarmed resource whose functions are not resolved yet
    error_type: str
    detail: str
    observed_at: datetime  # the alarm's state change, or when SNS accepted a direct message
    account: str | None = None  # where the function runs: from the alarm's ARN, else the topic's
    region: str | None = None
    time_note: str | None = None  # why observed_at is not the time the message gave
    alarmed_resource: AlarmedResource | None = None  # the queue or topic the alarm watches

    def incident(self) -> dict[str, Any]:
        """What the agent is told about the incident."""
        told: dict[str, Any] = {
            "source": self.source,
            "function_name": self.function_name,
            "error_type": self.error_type,
            "detail": self.detail,
            "observed_at": stamp(self.observed_at),
        }
        if self.alarmed_resource is not None:
            told["alarmed_resource"] = self.alarmed_resource.as_dict()
        return told


def stamp(moment: datetime) -> str:
    """UTC, millisecond precision, fixed width: sorts as text in DynamoDB."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class OutOfWindow(ValueError):
    """A well-formed time too far from now to date an incident by."""


def _time(value: object, what: str, now: datetime) -> datetime:
    """``value`` in UTC. ValueError when it is not an ISO 8601 time with a zone; OutOfWindow when it lies
    outside [now - MAX_AGE, now + MAX_AHEAD] (a time at the calendar's edge included)."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is missing")
    text = value.replace("Z", "+00:00")
    if len(text) > 5 and text[-5] in "+-" and text[-3] != ":":  # CloudWatch writes +0000
        text = f"{text[:-2]}:{text[-2:]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise ValueError(f"{what} {value!r} has no time zone")
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:00:00-05:00: past the last year UTC can hold
        raise OutOfWindow(f"{what} {value[:40]!r} lies beyond the calendar in UTC") from None
    if moment > now + MAX_AHEAD:
        raise OutOfWindow(f"{what} {value[:40]!r} lies {_span(moment - now)} in the future")
    if moment < now - MAX_AGE:
        raise OutOfWindow(f"{what} {value[:40]!r} lies {_span(now - moment)} in the past")
    return moment


def _span(delta: timedelta) -> str:
    days = delta.days
    if days >= 365:
        return f"{days // 365} years"
    return f"{days} days" if days else f"{int(delta.total_seconds())} s"


def _received(value: object, now: datetime) -> tuple[datetime, str | None]:
    """When SNS accepted the message, or now (and why) when its Timestamp is out of the window."""
    try:
        return _time(value, "SNS Timestamp", now), None
    except OutOfWindow as far:
        return now, f"{far}: the incident is dated when the supervisor received it"


def _observed(value: object, published: datetime, now: datetime) -> tuple[datetime, str | None]:
    """The alarm's state change, or when SNS accepted it (and why) when that is out of the window."""
    try:
        return _time(value, "StateChangeTime", now), None
    except OutOfWindow as far:
        return published, f"{far}: the incident is dated when SNS accepted the alarm"


def _function(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a Lambda function name")
    try:
        return function_name_of(value)
    except ValueError as error:
        raise ValueError(f"{where} {value[:100]!r}: {error}") from None


def _place(*arns: object) -> tuple[str | None, str | None]:
    """(account, region) of the first well-formed ARN given, or (None, None)."""
    for arn in arns:
        parts = arn.split(":", 5) if isinstance(arn, str) else []
        if len(parts) == 6 and parts[0] == "arn" and parts[3] and parts[4].isdigit() and len(parts[4]) == 12:
            return parts[4], parts[3]
    return None, None


def _alarm(
    message: dict[str, Any], place: tuple[str, str, str] | None
) -> tuple[str, str, str, AlarmedResource | None]:
    """(function, metric, detail, alarmed resource): a resource alarm has no function yet ("")."""
    state = message.get("NewStateValue")
    if state != "ALARM":
        name = message.get("AlarmName")
        raise ValueError(f"alarm {name!r} went to {state!r}; only ALARM opens an incident")
    trigger = message.get("Trigger")
    if not isinstance(trigger, dict):
        raise ValueError("alarm message has no Trigger (composite alarms are not supported)")
    reason = message.get("NewStateReason")
    detail = f"{message.get('AlarmName')}: {reason if isinstance(reason, str) else ''}".strip()
    if "Metrics" not in trigger and trigger.get("Namespace") in RESOURCE_NAMESPACES:
        metric = trigger.get("MetricName")
        if not isinstance(metric, str) or not metric:
            raise ValueError("alarm Trigger has no MetricName")
        return "", metric, detail, _resource(trigger, place)
    function, metric = _watched(trigger)
    return function, metric, detail, None


def _resource(trigger: dict[str, Any], place: tuple[str, str, str] | None) -> AlarmedResource:
    """The queue or topic of an alarm on an AWS/SQS or AWS/SNS metric, placed by the alarm's ARN."""
    namespace = str(trigger["Namespace"])
    dimension, service = RESOURCE_NAMESPACES[namespace]
    values = [
        d.get("value")
        for d in trigger.get("Dimensions") or []
        if isinstance(d, dict) and str(d.get("name", "")).lower() == dimension.lower()
    ]
    if len(values) != 1 or not isinstance(values[0], str):
        raise ValueError(f"alarm on {namespace} has no {dimension} dimension: it names no one resource")
    if place is None:
        raise ValueError(f"alarm on {namespace} has no AlarmArn: the {dimension} cannot be placed")
    partition, region, account = place
    arn = f"arn:{partition}:{service}:{region}:{account}:{values[0]}"
    try:
        parse_source(arn)
    except ValueError:
        raise ValueError(f"{dimension} dimension {values[0][:100]!r} is not a valid name") from None
    return AlarmedResource(namespace=namespace, dimension=dimension, value=values[0], arn=arn)


def _lambda_function(metric: dict[str, Any], where: str) -> str:
    if metric.get("Namespace") != "AWS/Lambda":
        raise ValueError(f"{where} watches namespace {metric.get('Namespace')!r}, not AWS/Lambda")
    names = [
        d.get("value")
        for d in metric.get("Dimensions") or []
        if isinstance(d, dict) and str(d.get("name", "")).lower() == "functionname"
    ]
    if len(names) != 1:
        raise ValueError(f"{where} has no FunctionName dimension: it does not name one Lambda function")
    return _function(names[0], "FunctionName dimension")


def _watched(trigger: dict[str, Any]) -> tuple[str, str]:
    """(function, what is alarming): from the metric, or for a metric-math alarm from the one Lambda
    function its AWS/Lambda metrics watch and the label of the expression it alarms on."""
    queries = trigger.get("Metrics")
    if not isinstance(queries, list):
        metric = trigger.get("MetricName")
        if not isinstance(metric, str) or not metric:
            raise ValueError("alarm Trigger has no MetricName")
        return _lambda_function(trigger, "alarm"), metric
    stats = [q["MetricStat"]["Metric"] for q in queries if isinstance(q, dict) and _has_metric(q)]
    functions = {
        _lambda_function(m, "metric-math alarm") for m in stats if m.get("Namespace") == "AWS/Lambda"
    }
    if len(functions) != 1:
        raise ValueError("metric-math alarm does not watch the AWS/Lambda metrics of exactly one function")
    returned = [q for q in queries if isinstance(q, dict) and q.get("ReturnData") is not False]
    label = next((q.get("Label") or q.get("Id") for q in returned if q.get("Expression")), None)
    return functions.pop(), str(label or "MetricMath")[:100]


def _has_metric(query: dict[str, Any]) -> bool:
    stat = query.get("MetricStat")
    return isinstance(stat, dict) and isinstance(stat.get("Metric"), dict)


def _direct(message: dict[str, Any]) -> tuple[str, str, str]:
    function = _function(message.get("lambda_name"), "lambda_name")
    error_type = message.get("error_type")
    if not isinstance(error_type, str) or not error_type.strip():
        raise ValueError("error_type must be a non-empty string, e.g. 'Errors' or 'AccessDenied'")
    detail = message.get("detail", "")
    if not isinstance(detail, str):
        detail = json.dumps(detail, sort_keys=True)
    return function, error_type.strip()[:100], detail


def parse_record(record: object, *, now: datetime) -> Signal:
    """The signal in one record of an SNS Lambda event, its times checked against ``now``;
    MalformedMessage says why there is none."""
    sns = record.get("Sns") if isinstance(record, dict) else None
    if not isinstance(sns, dict):
        raise MalformedMessage(None, "record has no Sns object: not an SNS event record")
    message_id = sns.get("MessageId")
    if not isinstance(message_id, str) or not message_id:
        raise MalformedMessage(None, "SNS record has no MessageId")
    try:
        published, note = _received(sns.get("Timestamp"), now)
        message = _message(sns.get("Message"))
        resource = None
        if "AlarmName" in message:
            function, error_type, detail, resource = _alarm(message, _alarm_place(message.get("AlarmArn")))
            observed, alarm_note = _observed(message.get("StateChangeTime"), published, now)
            note = f"{alarm_note}; {note}" if alarm_note and note else alarm_note
            source: Literal["cloudwatch_alarm", "direct"] = "cloudwatch_alarm"
        elif "lambda_name" in message:
            function, error_type, detail = _direct(message)
            observed, source = published, "direct"
        else:
            raise ValueError(
                "SNS Message is neither a CloudWatch alarm (AlarmName, Trigger, ...) nor an incident "
                '{"lambda_name": ..., "error_type": ..., "detail": ...}'
            )
    except ValueError as error:
        raise MalformedMessage(message_id, str(error)) from None
    account, region = _place(message.get("AlarmArn"), message.get("lambda_name"), sns.get("TopicArn"))
    return Signal(
        message_id=message_id,
        source=source,
        function_name=function,
        error_type=error_type,
        detail=detail[:MAX_DETAIL_CHARS],
        observed_at=observed,
        account=account,
        region=region,
        time_note=note,
        alarmed_resource=resource,
    )


def _alarm_place(arn: object) -> tuple[str, str, str] | None:
    """(partition, region, account) of a well-formed alarm ARN."""
    parts = arn.split(":", 5) if isinstance(arn, str) else []
    if (
        len(parts) == 6
        and parts[0] == "arn"
        and parts[1]
        and parts[3]
        and parts[4].isdigit()
        and len(parts[4]) == 12
    ):
        return parts[1], parts[3], parts[4]
    return None


def _message(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str):
        raise ValueError("SNS Message is missing")
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"SNS Message is not JSON ({error.msg} at character {error.pos})") from None
    except RecursionError:
        raise ValueError("SNS Message is JSON nested too deeply to read") from None
    if not isinstance(message, dict):
        raise ValueError(f"SNS Message is JSON {type(message).__name__}, not an object")
    return message


def parse_event(event: object, *, now: datetime) -> list[Signal | MalformedMessage]:
    """One entry per record, in order: its signal (times checked against ``now``), or why it is not one.
    A record that breaks the parser is rejected on its own: it never costs the others their turn."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list) or not records:
        return [MalformedMessage(None, "event has no Records: not an SNS Lambda event")]
    parsed: list[Signal | MalformedMessage] = []
    for record in records:
        try:
            parsed.append(parse_record(record, now=now))
        except MalformedMessage as rejected:
            parsed.append(rejected)
        except Exception as error:  # a parser bug must not make one record a poison message for all
            parsed.append(MalformedMessage(_message_id(record), f"unreadable record: {type(error).__name__}"))
    return parsed


def _message_id(record: object) -> str | None:
    sns = record.get("Sns") if isinstance(record, dict) else None
    message_id = sns.get("MessageId") if isinstance(sns, dict) else None
    return message_id if isinstance(message_id, str) else None
