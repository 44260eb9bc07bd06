"""The incident tables as ``CreateTable`` and CloudFormation take them (the deploy template and the
sandbox both build them from here), and how long their items are kept: every incident-state and
incident-context item carries ``expires_at`` (``EXPIRES_AT``, epoch seconds: the incident's alarm,
or the context's first write, plus the retention), which DynamoDB's time to live deletes some days after it
passes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html)."""

from __future__ import annotations

from typing import Any

from mcp_server.contract.history import EXPIRES_AT
from supervisor.incident.store import INDEXES


def state_table_schema() -> dict[str, Any]:
    """incident-state's keys and indexes, as ``CreateTable`` (and CloudFormation) take them."""
    attributes = sorted({"incident_id", *(name for keys in INDEXES.values() for name in keys)})
    return {
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in attributes],
        "KeySchema": [{"AttributeName": "incident_id", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": partition, "KeyType": "HASH"},
                    {"AttributeName": sort, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index, (partition, sort) in INDEXES.items()
        ],
    }


def context_table_schema() -> dict[str, Any]:
    """incident-context's key, as ``CreateTable`` (and CloudFormation) take it."""
    return {
        "AttributeDefinitions": [{"AttributeName": "incident_id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "incident_id", "KeyType": "HASH"}],
    }


def time_to_live() -> dict[str, Any]:
    """Both tables' time to live, as ``UpdateTimeToLive`` and CloudFormation take it."""
    return {"AttributeName": EXPIRES_AT, "Enabled": True}
