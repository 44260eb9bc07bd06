"""SNS deliveries to ``lambda`` subscriptions: refused or queued as an asynchronous invocation, as SNS and
Lambda do, instead of moto's Docker run.

On every publish to a topic, for each ``lambda`` subscription whose filter policy matches (moto's own
matcher), the function's resource-based policy (moto's, the one ``GetPolicy`` answers for the subscribed
function or qualifier) must let ``sns.amazonaws.com`` ``lambda:InvokeFunction``, with any
``AWS:SourceArn`` condition (``ArnLike``/``ArnEquals``) matching the topic and any ``AWS:SourceAccount``
condition its account; an explicit ``Deny`` that matches refuses
(https://docs.aws.amazon.com/lambda/latest/dg/permissions-function-services.html).

Allowed: the event Lambda hands the function (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html:
``Records[].EventVersion``, ``EventSubscriptionArn``, ``EventSource`` ``aws:sns``, ``Sns.{Type, MessageId,
TopicArn, Subject, Message, Timestamp, SignatureVersion, Signature, SigningCertUrl, UnsubscribeUrl,
MessageAttributes}``) is queued (``async_invoke.enqueue``, source the topic ARN) and the topic counts
``NumberOfNotificationsDelivered``; refused, or no such function: ``NumberOfNotificationsFailed``, which for
Lambda endpoints "increases by 1 when the message fails to deliver (regardless of the number of attempts)"
(https://docs.aws.amazon.com/sns/latest/dg/sns-monitoring-using-cloudwatch.html). Both go straight into
moto's CloudWatch backend (``AWS/SNS``, dimension ``TopicName``, now). The timestamp, signature and
signing certificate are moto's (``Subscription.get_post_data``), so the signature verifies against the
certificate moto serves; ``Subject`` is null when the publisher gave none (the docs show only a message with
one: our choice).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from moto.awslambda.exceptions import UnknownFunctionException
from moto.awslambda.models import LambdaFunction, lambda_backends
from moto.cloudwatch.models import cloudwatch_backends
from moto.sns.models import Subscription

from chaos.sandbox.extensions import async_invoke, lambda_policies

SNS_PRINCIPAL = "sns.amazonaws.com"
NAMESPACE = "AWS/SNS"


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _principal_matches(principal: Any) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, dict):
        return SNS_PRINCIPAL in _listed(principal.get("Service", [])) or "*" in _listed(
            principal.get("AWS", [])
        )
    return False


def _action_matches(action: Any) -> bool:
    return any(a in ("lambda:InvokeFunction", "lambda:*", "*") for a in _listed(action))


def _condition_holds(condition: dict[str, Any], topic_arn: str) -> bool:
    """Every condition must hold; a key the sandbox does not evaluate is taken as not holding."""
    context = {"aws:sourcearn": topic_arn, "aws:sourceaccount": topic_arn.split(":")[4]}
    for operator, tests in condition.items():
        for key, expected in tests.items():
            actual = context.get(key.lower())
            if actual is None:
                return False
            values = [str(v) for v in _listed(expected)]
            if operator in ("ArnLike", "StringLike"):
                holds = any(fnmatch.fnmatchcase(actual, value) for value in values)
            elif operator in ("ArnEquals", "StringEquals"):
                holds = actual in values
            else:
                holds = False
            if not holds:
                return False
    return True


def sns_may_invoke(statements: list[dict[str, Any]], topic_arn: str) -> bool:
    """Whether a resource policy with ``statements`` lets the topic invoke the function."""

    def applies(statement: dict[str, Any]) -> bool:
        return (
            _principal_matches(statement.get("Principal"))
            and _action_matches(statement.get("Action"))
            and _condition_holds(statement.get("Condition") or {}, topic_arn)
        )

    matching = [s for s in statements if applies(s)]
    return any(s.get("Effect") == "Allow" for s in matching) and not any(
        s.get("Effect") == "Deny" for s in matching
    )


def _function(endpoint: str) -> tuple[LambdaFunction, str | None] | None:
    parts = endpoint.split(":")
    if len(parts) not in (7, 8) or parts[5] != "function":
        return None
    account, region, name = parts[4], parts[3], parts[6]
    qualifier = parts[7] if len(parts) == 8 else None
    if account not in lambda_backends or region not in lambda_backends[account]:
        return None
    try:
        return lambda_backends[account][region].get_function(name, qualifier), qualifier
    except UnknownFunctionException:
        return None


def _count(subscription: Subscription, delivered: bool) -> None:
    topic = subscription.topic
    account, region = topic.arn.split(":")[4], topic.arn.split(":")[3]
    name = "NumberOfNotificationsDelivered" if delivered else "NumberOfNotificationsFailed"
    cloudwatch_backends[account][region].put_metric_data(
        NAMESPACE,
        [
            {
                "MetricName": name,
                "Value": 1.0,
                "Unit": "Count",
                "Dimensions": [{"Name": "TopicName", "Value": topic.name}],
            }
        ],
    )


def sns_event(
    subscription: Subscription,
    message: str,
    message_id: str,
    subject: str | None,
    message_attributes: dict[str, Any] | None,
) -> dict[str, Any]:
    """The event Lambda gives a function for one SNS notification."""
    signed = subscription.get_post_data(message, message_id, subject)
    region = subscription.topic.arn.split(":")[3]
    unsubscribe = f"https://sns.{region}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={subscription.arn}"
    attributes = {k: {"Type": v["Type"], "Value": v["Value"]} for k, v in (message_attributes or {}).items()}
    return {
        "Records": [
            {
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription.arn,
                "EventSource": "aws:sns",
                "Sns": {
                    "SignatureVersion": signed["SignatureVersion"],
                    "Timestamp": signed["Timestamp"],
                    "Signature": signed["Signature"],
                    "SigningCertUrl": signed["SigningCertURL"],
                    "MessageId": message_id,
                    "Message": message,
                    "MessageAttributes": attributes,
                    "Type": "Notification",
                    "UnsubscribeUrl": unsubscribe,
                    "TopicArn": subscription.topic.arn,
                    "Subject": subject,
                },
            }
        ]
    }


def deliver(
    subscription: Subscription,
    message: str,
    message_id: str,
    subject: str | None,
    message_attributes: dict[str, Any] | None,
) -> bool:
    """Queue the notification for the subscribed function if its resource policy allows the topic."""
    found = _function(subscription.endpoint)
    topic_arn = subscription.topic.arn
    allowed = found is not None and sns_may_invoke(lambda_policies.policy_statements(*found), topic_arn)
    if found is not None and allowed:
        function, qualifier = found
        event = sns_event(subscription, message, message_id, subject, message_attributes)
        account, region = subscription.endpoint.split(":")[4], subscription.endpoint.split(":")[3]
        async_invoke.enqueue(
            function, qualifier, json.dumps(event), topic_arn, account=account, region=region
        )
    _count(subscription, allowed)
    return allowed


def install() -> None:
    original_publish = Subscription.publish

    def publish(
        self: Subscription,
        message: str,
        message_id: str,
        subject: str | None = None,
        message_attributes: dict[str, Any] | None = None,
        group_id: str | None = None,
        deduplication_id: str | None = None,
        message_structure: str | None = None,
    ) -> None:
        if self.protocol != "lambda":
            original_publish(
                self,
                message,
                message_id,
                subject,
                message_attributes,
                group_id,
                deduplication_id,
                message_structure,
            )
            return
        matcher = self._filter_policy_matcher
        if matcher is not None and not matcher.matches(message_attributes, message):
            return
        if message_structure == "json":
            message = self._parse_message_structure(message, self.protocol)
        deliver(self, message, message_id, subject, message_attributes)

    setattr(Subscription, "publish", publish)  # noqa: B010
