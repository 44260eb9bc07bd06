"""What the injector tests read back of one function's event paths (mappings, resource policy,
asynchronous invocation configuration), to assert the one thing a fault changed.

Per function: its event source mappings, the statements of its resource-based policy and its asynchronous
invocation configuration. A mapping's UUID, which AWS assigns anew when a deleted mapping is created
again, is left out, so a restore that recreates one compares equal.
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
