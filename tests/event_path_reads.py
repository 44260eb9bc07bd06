"""What the injector tests read back of one function's event paths (mappings, resource policy,
asynchronous invocation configuration), to assert the one thing a fault changed.

Per function: its event source mappings, the statements of its resource-based policy and its asynchronous
invocation configuration. In the account: every queue's attributes (not its message counts or
timestamps) and every SNS subscription as topic → protocol → endpoint with its policies. Ids AWS assigns
anew when a deleted thing is created again (a mapping's UUID, a subscription's ARN) are left out, so a
restore that recreates one compares equal.
"""

from __future__ import annotations

import json
from typing import Any

_MAPPING_KEYS = (
    "EventSourceArn",
    "FunctionArn",
    "BatchSize",
    "MaximumBatchingWindowInSeconds",
    "FunctionResponseTypes",
    "FilterCriteria",
    "ScalingConfig",
    "State",
)
_INVOKE_CONFIG_KEYS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")
_SUBSCRIPTION_KEYS = (
    "FilterPolicy",
    "FilterPolicyScope",
    "RedrivePolicy",
    "DeliveryPolicy",
    "RawMessageDelivery",
)
_VOLATILE_QUEUE_ATTRIBUTES = ("CreatedTimestamp", "LastModifiedTimestamp")


def _canonical(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def _pages(client: Any, operation: str, key: str, **params: Any) -> list[Any]:
    return [item for page in client.get_paginator(operation).paginate(**params) for item in page.get(key, [])]


def function_event_paths(lambda_: Any, name: str) -> dict[str, Any]:
    """The function's mappings, resource-policy statements and asynchronous invocation configuration."""
    mappings = [  # not filtered by FunctionName: moto matches it against the string the mapping was made with
        m
        for m in _pages(lambda_, "list_event_source_mappings", "EventSourceMappings")
        if str(m.get("FunctionArn", "")).split(":")[6:7] == [name]
    ]
    try:
        statements = json.loads(lambda_.get_policy(FunctionName=name)["Policy"]).get("Statement", [])
    except lambda_.exceptions.ResourceNotFoundException:
        statements = []
    try:
        found = lambda_.get_function_event_invoke_config(FunctionName=name)
        invoke_config = {k: found.get(k) for k in _INVOKE_CONFIG_KEYS}
    except lambda_.exceptions.ResourceNotFoundException:
        invoke_config = None
    return {
        "event_source_mappings": _canonical([{k: m.get(k) for k in _MAPPING_KEYS} for m in mappings]),
        "policy_statements": _canonical(statements if isinstance(statements, list) else [statements]),
        "event_invoke_config": invoke_config,
    }


def account_event_paths(sqs: Any, sns: Any) -> dict[str, Any]:
    """Every queue's attributes by name, and every subscription by topic, protocol and endpoint."""
    queues = {}
    for url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        queues[url.rsplit("/", 1)[-1]] = {
            k: v
            for k, v in attributes.items()
            if not k.startswith("Approximate") and k not in _VOLATILE_QUEUE_ATTRIBUTES
        }
    subscriptions = []
    for subscription in _pages(sns, "list_subscriptions", "Subscriptions"):
        attributes = sns.get_subscription_attributes(SubscriptionArn=subscription["SubscriptionArn"])
        subscriptions.append(
            {k: subscription[k] for k in ("TopicArn", "Protocol", "Endpoint")}
            | {k: v for k, v in attributes["Attributes"].items() if k in _SUBSCRIPTION_KEYS}
        )
    topics = sorted(t["TopicArn"] for t in _pages(sns, "list_topics", "Topics"))
    return {"queues": queues, "subscriptions": _canonical(subscriptions), "topics": topics}
