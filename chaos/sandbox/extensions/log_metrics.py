"""``AWS/Logs`` ``IncomingLogEvents`` and ``IncomingBytes``, which moto's CloudWatch Logs never publishes.

Hooked at ``LogStream.put_log_events``: every accepted write reaches it (``PutLogEvents`` from any caller,
and moto's own internal writers), after too old or too new events were rejected, and it knows the
account, region and log group. Datapoints go to moto's CloudWatch backend of the same account and region,
dimension ``LogGroupName``, at the ingestion time, so ``GetMetricData`` and alarms see them. Bytes are
the UTF-8 size of the messages.
"""

from __future__ import annotations

from typing import Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.logs.models import LogStream

NAMESPACE = "AWS/Logs"


def install() -> None:
    original = LogStream.put_log_events

    def put_log_events(self: Any, log_events: list[dict[str, Any]]) -> str:
        token: str = original(self, log_events)
        if log_events:
            dimensions = [{"Name": "LogGroupName", "Value": self.log_group.name}]
            size = sum(len(str(event["message"]).encode()) for event in log_events)
            cloudwatch_backends[self.account_id][self.region].put_metric_data(
                NAMESPACE,
                [
                    {
                        "MetricName": name,
                        "Value": float(value),
                        "Unit": unit,
                        "Dimensions": dimensions,
                        "Timestamp": self.last_ingestion_time,
                    }
                    for name, value, unit in (
                        ("IncomingLogEvents", len(log_events), "None"),
                        ("IncomingBytes", size, "Bytes"),
                    )
                ],
            )
        return token

    setattr(LogStream, "put_log_events", put_log_events)  # noqa: B010
