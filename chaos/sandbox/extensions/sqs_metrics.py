"""``AWS/SQS`` metrics, which moto never publishes, for every queue of every account and region
(sqs-available-cloudwatch-metrics.html), dimension ``QueueName``.

Gauges: ``ApproximateNumberOfMessagesVisible``, ``ApproximateNumberOfMessagesNotVisible`` (in flight), and
``ApproximateAgeOfOldestMessage`` (seconds since the oldest message still in the queue was sent; published
only while the queue holds a message, as AWS reports it). Counts: ``NumberOfMessagesSent`` (``SendMessage``
and each entry of ``SendMessageBatch``, SNS deliveries included; a message moved by the redrive policy is not
counted in the dead-letter queue), ``NumberOfMessagesReceived`` (messages returned by ``ReceiveMessage``),
``NumberOfMessagesDeleted`` (each successful ``DeleteMessage`` or batch entry).

A daemon thread samples every queue each ``INTERVAL_SECONDS`` (1 s). Like AWS's, these are standard-
resolution (one-minute) metrics: each queue and metric has one datapoint per minute, a statistic set whose
sample count, sum, minimum and maximum grow in place with every sample. ``Maximum`` of a gauge is the
largest value sampled in the minute, ``Sum`` of a count the number of messages in the minute, counted once.
A CloudWatch reset (``cloudwatch_reset``) drops the open datapoints and the counts not yet published.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import MetricAggregatedDatum, cloudwatch_backends
from moto.sqs.models import SQSBackend, sqs_backends

from chaos.sandbox.extensions import cloudwatch_reset

NAMESPACE = "AWS/SQS"
INTERVAL_SECONDS = 1.0
PERIOD_SECONDS = 60
SENT, RECEIVED, DELETED = "NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted"
AGE = "ApproximateAgeOfOldestMessage"
VISIBLE, NOT_VISIBLE = "ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"
_UNITS = {AGE: "Seconds"}

_log = logging.getLogger(__name__)
_QueueKey = tuple[str, str, str]  # account, region, queue name
_lock = threading.Lock()
_counts: Counter[tuple[_QueueKey, str]] = Counter()
_open: dict[tuple[_QueueKey, str], tuple[int, MetricAggregatedDatum]] = {}  # minute start, its datum


def _count(backend: SQSBackend, queue_name: str, metric: str, amount: int) -> None:
    if amount:
        with _lock:
            _counts[((backend.account_id, backend.region_name, queue_name), metric)] += amount


def _hook_counts() -> None:
    send, receive, delete = SQSBackend.send_message, SQSBackend.receive_message, SQSBackend.delete_message

    def send_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        message = send(self, queue_name, *args, **kwargs)
        _count(self, queue_name, SENT, 1)
        return message

    def receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        messages = receive(self, queue_name, *args, **kwargs)
        _count(self, queue_name, RECEIVED, len(messages))
        return messages

    def delete_message(self: SQSBackend, queue_name: str, receipt_handle: str) -> None:
        delete(self, queue_name, receipt_handle)
        _count(self, queue_name, DELETED, 1)

    setattr(SQSBackend, "send_message", send_message)  # noqa: B010
    setattr(SQSBackend, "receive_message", receive_message)  # noqa: B010
    setattr(SQSBackend, "delete_message", delete_message)  # noqa: B010


def _gauges(queue: Any, now: float) -> dict[str, float]:
    messages = list(queue._messages)
    values = {
        VISIBLE: float(sum(1 for m in messages if m.visible and not m.delayed)),
        NOT_VISIBLE: float(sum(1 for m in messages if not m.visible)),
    }
    sent = [m.sent_timestamp for m in messages if m.sent_timestamp]
    if sent:
        values[AGE] = float(max(0, int(now - min(sent) / 1000)))
    return values


def _record(key: _QueueKey, metric: str, value: float, now: float) -> None:
    """Add one sample to the queue's datum of this minute (a new datum when the minute is new)."""
    minute = int(now // PERIOD_SECONDS * PERIOD_SECONDS)
    current = _open.get((key, metric))
    if current is not None and current[0] == minute:
        datum = current[1]
        datum.sample_count += 1
        datum.sum += value
        datum.min, datum.max = min(datum.min, value), max(datum.max, value)
        return
    account, region, queue_name = key
    datum = MetricAggregatedDatum(
        NAMESPACE,
        metric,
        min_stat=value,
        max_stat=value,
        sample_count=1,
        sum_stat=value,
        dimensions=[{"Name": "QueueName", "Value": queue_name}],
        timestamp=datetime.fromtimestamp(minute, UTC).replace(tzinfo=None),  # moto keeps naive UTC
        unit=_UNITS.get(metric, "Count"),
    )
    cloudwatch_backends[account][region].metric_data.append(datum)
    _open[(key, metric)] = (minute, datum)


def publish(now: float) -> None:
    """Sample every queue once: its gauges, and the counts since the last sample."""
    with cloudwatch_reset.LOCK, _lock:
        counts = _counts.copy()
        _counts.clear()
        for account, regions in list(sqs_backends.items()):
            for region, backend in list(regions.items()):
                for queue in list(backend.queues.values()):
                    key = (account, region, queue.name)
                    values = _gauges(queue, now) | {
                        m: float(counts[(key, m)]) for m in (SENT, RECEIVED, DELETED)
                    }
                    for metric, value in values.items():
                        _record(key, metric, value, now)


def _forget() -> None:
    with _lock:
        _counts.clear()
        _open.clear()


def _publish_forever() -> None:
    while True:
        time.sleep(INTERVAL_SECONDS)
        try:
            publish(time.time())
        except Exception:
            _log.exception("publishing AWS/SQS metrics failed; next attempt in %ss", INTERVAL_SECONDS)


def install() -> None:
    _hook_counts()
    cloudwatch_reset.on_reset(_forget)
    threading.Thread(target=_publish_forever, name="sqs-metrics", daemon=True).start()
