"""The watched workload's event-path alarms in the main stack: each driven by an optional parameter (empty:
no alarm, through a CloudFormation Condition), each built by deploy/alarms.py as the sandbox builds its own.

- ``SourceQueueName``: a queue the function consumes; its oldest message reaching
  ``QueueAgeThresholdSeconds`` alarms.
- ``SourceDeadLetterQueueName`` and ``FunctionDeadLetterQueueName``: the source queue's redrive target and
  the function's own dead-letter queue (or on-failure destination queue); any message in them alarms.
- ``AsyncFunctionName``: a function invoked asynchronously; events dropped, dead-letter and destination
  delivery failures alarm.
- ``CallerTopicName``: an SNS topic that invokes the function; notifications it failed to deliver alarm.
- ``UrlFunctionName``: a function called through its function URL; requests answered 4XX or 5XX alarm.
- ``RestApiName`` with ``RestApiFunctionName``: a REST API (API Gateway) whose routes invoke that function;
  requests it answered 5XX alarm, on the function.
- ``StreamFunctionName``: a function reading a Kinesis or DynamoDB stream; records sent to it
  ``IteratorAgeThresholdMs`` old or more alarm.
"""

from __future__ import annotations

from typing import Any

from deploy.alarms import (
    QUEUE_AGE_THRESHOLD_SECONDS,
    Alarm,
    api_alarms,
    async_alarms,
    caller_topic_alarms,
    dead_letter_queue_alarms,
    source_queue_alarms,
    stream_alarms,
    url_alarms,
)
from deploy.cfn import ref, substituted

Template = dict[str, Any]
AGE_THRESHOLD = "QueueAgeThresholdSeconds"
ITERATOR_AGE_THRESHOLD = "IteratorAgeThresholdMs"
ITERATOR_AGE_DEFAULT_MS = (
    60_000  # a minute behind: what a team reading a stream in near real time would page on
)
# An SQS queue's name: up to 80 alphanumerics, hyphens and underscores, a FIFO queue's ending in ``.fifo``.
_QUEUE_PATTERN = r"^([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)?$"
# parameter -> (its condition, its pattern, what it names)
_OPTIONAL: dict[str, tuple[str, str, str]] = {
    "SourceQueueName": (
        "HasSourceQueue",
        _QUEUE_PATTERN,
        f"An SQS queue the function consumes: its oldest message {AGE_THRESHOLD} old or more alarms.",
    ),
    "SourceDeadLetterQueueName": (
        "HasSourceDeadLetterQueue",
        _QUEUE_PATTERN,
        "The source queue's dead-letter queue (its redrive policy's target): any message in it alarms.",
    ),
    "FunctionDeadLetterQueueName": (
        "HasFunctionDeadLetterQueue",
        _QUEUE_PATTERN,
        "The dead-letter queue (or on-failure destination queue) of an asynchronously invoked function: "
        "any message in it alarms.",
    ),
    "AsyncFunctionName": (
        "HasAsyncFunction",
        "^[A-Za-z0-9_-]{0,64}$",
        "A function invoked asynchronously: dropped events and dead-letter or destination delivery "
        "failures alarm.",
    ),
    "CallerTopicName": (
        "HasCallerTopic",
        "^[A-Za-z0-9_-]{0,256}$",
        "An SNS topic that invokes a function: notifications it failed to deliver alarm.",
    ),
    "UrlFunctionName": (
        "HasUrlFunction",
        "^[A-Za-z0-9_-]{0,64}$",
        "A function called through its function URL: requests answered 4XX or 5XX alarm.",
    ),
    "RestApiName": (
        "HasRestApi",
        "^[A-Za-z0-9 ._-]{0,128}$",
        "A REST API (API Gateway) whose routes invoke RestApiFunctionName: requests it answered 5XX alarm.",
    ),
    "StreamFunctionName": (
        "HasStreamFunction",
        "^[A-Za-z0-9_-]{0,64}$",
        f"A function reading a Kinesis or DynamoDB stream: records sent to it {ITERATOR_AGE_THRESHOLD} old "
        "or more (its IteratorAge) alarm.",
    ),
}
API_FUNCTION = "RestApiFunctionName"  # the function behind RestApiName, which its alarm names


def parameters() -> Template:
    optional = {
        name: {
            "Type": "String",
            "Default": "",
            "AllowedPattern": pattern,
            "Description": f"{description} Empty (default): no alarm.",
        }
        for name, (_, pattern, description) in _OPTIONAL.items()
    }
    api_function = {
        API_FUNCTION: {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^[A-Za-z0-9_-]{0,64}$",
            "Description": "The function RestApiName's routes invoke (needed with RestApiName): the incident "
            "its 5XX alarm opens is this function's.",
        }
    }
    threshold = {
        AGE_THRESHOLD: {
            "Type": "Number",
            "Default": QUEUE_AGE_THRESHOLD_SECONDS,
            "MinValue": 1,
            "Description": "Seconds the source queue's oldest message may wait before its alarm.",
        },
        ITERATOR_AGE_THRESHOLD: {
            "Type": "Number",
            "Default": ITERATOR_AGE_DEFAULT_MS,
            "MinValue": 1,
            "Description": "Milliseconds a stream's records may wait before they reach the function.",
        },
    }
    return optional | api_function | threshold


def _given(name: str) -> Template:
    return {"Fn::Not": [{"Fn::Equals": [ref(name), ""]}]}


def conditions() -> Template:
    found = {condition: _given(name) for name, (condition, _, _) in _OPTIONAL.items()}
    found["HasRestApi"] = {"Fn::And": [_given("RestApiName"), _given(API_FUNCTION)]}  # the alarm needs both
    return found


def _resources(parameter: str, logical_ids: tuple[str, ...], alarms: list[Alarm]) -> Template:
    condition = _OPTIONAL[parameter][0]
    return {
        logical_id: {
            "Type": "AWS::CloudWatch::Alarm",
            "Condition": condition,
            "Properties": substituted(alarm),
        }
        for logical_id, alarm in zip(logical_ids, alarms, strict=True)
    }


def resources(topic_arn: Any) -> Template:
    """The alarms, each under the condition of the parameter that names what it watches."""
    queue_age = source_queue_alarms("${SourceQueueName}", topic_arn, f"${{{AGE_THRESHOLD}}}")
    iterator_age = stream_alarms("${StreamFunctionName}", topic_arn, f"${{{ITERATOR_AGE_THRESHOLD}}}")
    for alarm in queue_age:
        alarm["Threshold"] = ref(AGE_THRESHOLD)  # a number, not the text the description quotes
    for alarm in iterator_age:
        alarm["Threshold"] = ref(ITERATOR_AGE_THRESHOLD)
    return (
        _resources("SourceQueueName", ("SourceQueueAgeAlarm",), queue_age)
        | _resources(
            "SourceDeadLetterQueueName",
            ("SourceDeadLetterQueueDepthAlarm",),
            dead_letter_queue_alarms("${SourceDeadLetterQueueName}", topic_arn),
        )
        | _resources(
            "FunctionDeadLetterQueueName",
            ("FunctionDeadLetterQueueDepthAlarm",),
            dead_letter_queue_alarms("${FunctionDeadLetterQueueName}", topic_arn),
        )
        | _resources(
            "AsyncFunctionName",
            ("AsyncEventsDroppedAlarm", "DeadLetterErrorsAlarm", "DestinationDeliveryFailuresAlarm"),
            async_alarms("${AsyncFunctionName}", topic_arn),
        )
        | _resources(
            "CallerTopicName",
            ("CallerTopicNotificationsFailedAlarm",),
            caller_topic_alarms("${CallerTopicName}", topic_arn),
        )
        | _resources(
            "UrlFunctionName",
            ("Url4xxCountAlarm", "Url5xxCountAlarm"),
            url_alarms("${UrlFunctionName}", topic_arn),
        )
        | _resources(
            "RestApiName",
            ("RestApi5xxErrorAlarm",),
            api_alarms("${RestApiName}", f"${{{API_FUNCTION}}}", topic_arn),
        )
        | _resources("StreamFunctionName", ("StreamIteratorAgeAlarm",), iterator_age)
    )
