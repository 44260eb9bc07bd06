"""An alarm's data from the metrics moto stores: one metric with a statistic, or metric math (``Metrics``,
see :mod:`.metric_math`, at the longest period of its metrics), aggregated per ``Period``, aligned to the
period."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chaos.sandbox.extensions import metric_math
from chaos.sandbox.extensions.metric_math import Series

# The statistics evaluated, and how a notification's Trigger spells each.
STATISTICS = {
    "SampleCount": "SAMPLE_COUNT",
    "Average": "AVERAGE",
    "Sum": "SUM",
    "Minimum": "MINIMUM",
    "Maximum": "MAXIMUM",
}


class UnsupportedAlarm(ValueError):
    """An alarm definition this evaluator does not handle; the alarm keeps its state."""


@dataclass(frozen=True)
class Datapoints:
    """One alarm's data: its value per period start, and the sample count for a single metric."""

    period: int
    current: int  # start of the open period
    values: Series
    sample_counts: Series


@dataclass(frozen=True)
class _Metric:
    namespace: str
    name: str
    dimensions: frozenset[tuple[str, str]]
    stat: str
    unit: str | None

    @classmethod
    def of(cls, namespace: str, name: str, dimensions: Iterable[Any], stat: str, unit: str | None) -> _Metric:
        if stat not in STATISTICS:
            raise UnsupportedAlarm(f"statistic {stat}")
        return cls(namespace, name, frozenset((d.name, d.value) for d in dimensions), stat, unit)


def epoch(moment: datetime) -> float:
    """moto keeps naive UTC datetimes."""
    return moment.replace(tzinfo=UTC).timestamp() if moment.tzinfo is None else moment.timestamp()


def _aggregate(data: Iterable[Any], metric: _Metric, period: int, since: int) -> tuple[Series, Series]:
    """The statistic and the sample count of one metric (exact dimension set) per period from ``since``."""
    rows: dict[int, list[tuple[float, float, float, float]]] = {}  # sum, count, min, max
    for datum in data:
        if datum.namespace != metric.namespace or datum.name != metric.name:
            continue
        if (metric.unit and datum.unit != metric.unit) or {
            (d.name, d.value) for d in datum.dimensions
        } != metric.dimensions:
            continue
        start = int(epoch(datum.timestamp) // period * period)
        if start >= since:
            single = hasattr(datum, "value")
            rows.setdefault(start, []).append(
                (datum.value, 1.0, datum.value, datum.value)
                if single
                else (datum.sum, datum.sample_count, datum.min, datum.max)
            )
    values, counts = {}, {}
    for start, bucket in rows.items():
        total, count = sum(r[0] for r in bucket), sum(r[1] for r in bucket)
        counts[start] = count
        values[start] = {
            "Sum": total,
            "SampleCount": count,
            "Average": total / count if count else 0.0,
            "Minimum": min(r[2] for r in bucket),
            "Maximum": max(r[3] for r in bucket),
        }[metric.stat]
    return values, counts


def math_period(alarm: Any) -> int:
    periods = [int(q.metric_stat.period) for q in alarm.metric_data_queries if q.metric_stat]
    if not periods:
        raise UnsupportedAlarm("Metrics has no MetricStat")
    return max(periods)


def target_id(alarm: Any) -> str:
    """The id of the entry of ``Metrics`` the alarm watches."""
    queries = alarm.metric_data_queries
    if len(queries) == 1:
        return str(queries[0].id)
    returned = [q.id for q in queries if q.return_data in (True, "true")]
    if len(returned) != 1:
        raise UnsupportedAlarm("exactly one entry of Metrics must have ReturnData true")
    return str(returned[0])


def alarm_datapoints(alarm: Any, data: list[Any], now: float) -> Datapoints:
    """The alarm's values per period over its evaluation periods, the current one, and the one before."""
    queries = alarm.metric_data_queries
    period = math_period(alarm) if queries else int(alarm.period)
    current = int(now // period * period)
    periods = [current - i * period for i in range(alarm.evaluation_periods, -1, -1)]
    if not queries:
        if alarm.extended_statistic:
            raise UnsupportedAlarm(f"extended statistic {alarm.extended_statistic}")
        metric = _Metric.of(alarm.namespace, alarm.metric_name, alarm.dimensions, alarm.statistic, alarm.unit)
        values, counts = _aggregate(data, metric, period, periods[0])
        return Datapoints(period, current, values, counts)

    def series(stat: Any) -> Series:
        metric = _Metric.of(
            stat.metric.namespace, stat.metric.metric_name, stat.metric.dimensions, stat.stat, stat.unit
        )
        return _aggregate(data, metric, period, periods[0])[0]

    metrics = {q.id: series(q.metric_stat) for q in queries if q.metric_stat}
    expressions = {q.id: q.expression for q in queries if q.expression}
    values = metric_math.evaluate_queries(expressions, metrics, target_id(alarm), periods)
    return Datapoints(period, current, values, {})
