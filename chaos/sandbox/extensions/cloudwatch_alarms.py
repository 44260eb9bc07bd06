"""CloudWatch alarm evaluation, which moto stores but never runs, inside the emulator process.

A daemon thread evaluates every metric alarm of every account and region each
``INCIDENT_SANDBOX_ALARM_INTERVAL_SECONDS`` (default 1.0) from the alarm's own stored definition: one
metric with a statistic (SampleCount, Average, Sum, Minimum, Maximum), or metric math (``Metrics``, see
:mod:`.metric_math`, evaluated at the longest period of its metrics). Datapoints are aggregated per
``Period``, aligned to the period (:mod:`.alarm_data`).

**Evaluated early.** AWS evaluates a period once it is complete, about a minute later. Here the newest
``EvaluationPeriods`` periods end with the current, still-open period as soon as its datapoints breach the
threshold, so a drill sees its alarm within about a second; otherwise they end with the last complete one,
as in AWS: a period only partly seen shows a breach early but never its absence, so an alarm neither flaps
at a period boundary nor clears on the first success of a period whose failures are still to come.

Missing data follows ``TreatMissingData``: ``breaching``/``notBreaching`` count a missing period as such;
``missing`` (the default) goes to INSUFFICIENT_DATA when every period is missing and, with fewer
datapoints than ``DatapointsToAlarm``, alarms only if all present ones breach; ``ignore`` keeps the state
in both cases. A changed state is stored with moto's ``Alarm.update_state`` (which records history) and,
if ``ActionsEnabled``, published through moto's SNS backend to the new state's actions that are SNS topics
of the alarm's account, in CloudWatch's notification format.

New alarms start in INSUFFICIENT_DATA and updating an alarm keeps its state, as in AWS (moto starts
every put in OK). Not evaluated: composite alarms, percentiles, anomaly detection thresholds.

``POST /_sandbox/cloudwatch/evaluate-alarms`` runs a pass at once and answers when it is done (its
notifications published): the harness's way to know that every datapoint put before the request has been
judged, instead of waiting on the thread's clock. Only the sandbox's harness calls it.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any
from wsgiref.types import StartResponse, WSGIEnvironment

import botocore.loaders
from moto.cloudwatch.models import CloudWatchBackend, cloudwatch_backends
from moto.sns.models import sns_backends
from werkzeug.wrappers import Request, Response

from chaos.sandbox.emulator_env import ALARM_INTERVAL_ENV
from chaos.sandbox.extensions import cloudwatch_reset, log_metrics, server_app
from chaos.sandbox.extensions.alarm_data import (
    STATISTICS,
    Datapoints,
    UnsupportedAlarm,
    alarm_datapoints,
    epoch,
    math_period,
    target_id,
)

ALARM, OK, INSUFFICIENT_DATA = "ALARM", "OK", "INSUFFICIENT_DATA"
EVALUATE_PATH = "/_sandbox/cloudwatch/evaluate-alarms"
# One pass at a time: two at once could both see an alarm change state and both notify.
_PASS = threading.Lock()

_log = logging.getLogger(__name__)
_COMPARISONS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "GreaterThanOrEqualToThreshold": ("greater than or equal to", operator.ge),
    "GreaterThanThreshold": ("greater than", operator.gt),
    "LessThanThreshold": ("less than", operator.lt),
    "LessThanOrEqualToThreshold": ("less than or equal to", operator.le),
}
_reported: set[tuple[str, datetime]] = set()  # alarm configurations whose failure is already logged


@dataclass(frozen=True)
class Verdict:
    state: str
    reason: str
    reason_data: Callable[[], dict[str, Any]]  # built only for a change of state: most passes keep it


def install() -> None:
    """Publish AWS/Logs metrics, give alarms AWS's initial state, and start evaluating them."""
    log_metrics.install()
    _keep_state_on_update()
    interval = float(os.environ.get(ALARM_INTERVAL_ENV, "1.0"))
    server_app.mount(EVALUATE_PATH, _evaluate_now)
    threading.Thread(target=_evaluate_forever, args=(interval,), name="alarm-evaluation", daemon=True).start()


def _keep_state_on_update() -> None:
    original = CloudWatchBackend.put_metric_alarm

    def put_metric_alarm(self: Any, *args: Any, **kwargs: Any) -> Any:
        previous = self.alarms.get(kwargs["name"] if "name" in kwargs else args[0])
        alarm = original(self, *args, **kwargs)
        if previous is None:
            alarm.state_value = INSUFFICIENT_DATA
        else:
            for field in ("state_value", "state_reason", "state_reason_data", "state_updated_timestamp"):
                setattr(alarm, field, getattr(previous, field))
            alarm.history = previous.history
        return alarm

    setattr(CloudWatchBackend, "put_metric_alarm", put_metric_alarm)  # noqa: B010


def _evaluate_forever(interval: float) -> None:
    while True:
        time.sleep(interval)
        try:
            _evaluate_all(time.time())
        except Exception:
            _log.exception("alarm evaluation failed; next attempt in %ss", interval)


def _evaluate_now(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if Request(environ).method != "POST":
        return Response("POST to evaluate every alarm now\n", status=405)(environ, start_response)
    _evaluate_all(time.time())
    return Response(status=204)(environ, start_response)


def _evaluate_all(now: float) -> None:
    # A pass never straddles a CloudWatch reset: one that read the datapoints before it would put an alarm
    # the reset had cleared back in ALARM, and notify again, into the next scenario.
    with _PASS, cloudwatch_reset.LOCK:
        _evaluate_pass(now)


def _evaluate_pass(now: float) -> None:
    for account_id, regions in list(cloudwatch_backends.items()):
        for region, backend in list(regions.items()):
            if not backend.alarms:
                continue
            data = backend.get_all_metrics()
            for alarm in list(backend.alarms.values()):
                if alarm.rule is not None:  # composite
                    continue
                try:
                    _evaluate(backend, alarm, data, now, account_id, region)
                except Exception as error:
                    key = (alarm.alarm_arn, alarm.configuration_updated_timestamp)
                    if key not in _reported:
                        _reported.add(key)
                        _log.warning("alarm %s is not evaluated: %s", alarm.alarm_arn, error)


def _evaluate(backend: Any, alarm: Any, data: list[Any], now: float, account_id: str, region: str) -> None:
    if alarm.comparison_operator not in _COMPARISONS:
        raise UnsupportedAlarm(f"comparison operator {alarm.comparison_operator}")
    datapoints = alarm_datapoints(alarm, data, now)
    verdict = _verdict(alarm, datapoints, now)
    if verdict is None or verdict.state == alarm.state_value or backend.alarms.get(alarm.name) is not alarm:
        return
    old_state = alarm.state_value
    reason_data = json.dumps(verdict.reason_data(), separators=(",", ":"))
    alarm.update_state(verdict.reason, reason_data, verdict.state)
    if alarm.actions_enabled:
        _notify(alarm, old_state, account_id, region)


# --- state --------------------------------------------------------------------------------------------


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _was(count: int) -> str:
    return "was" if count == 1 else "were"


def _stamp(moment: datetime | float) -> str:
    """CloudWatch's timestamps: 2022-09-25T18:50:37.811+0000."""
    when = datetime.fromtimestamp(epoch(moment) if isinstance(moment, datetime) else moment, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def _datapoint(start: int, value: float) -> str:
    """A datapoint as a state reason lists it: 1.0 (22/11/26 23:10:00)."""
    return f"{value!r} ({datetime.fromtimestamp(start, UTC):%d/%m/%y %H:%M:%S})"


def _window(datapoints: Datapoints, count: int, breaches: Callable[[float], bool]) -> list[int]:
    """The periods evaluated, oldest first: ending with the current one once its datapoints breach."""
    last = datapoints.current
    if last not in datapoints.values or not breaches(datapoints.values[last]):
        last -= datapoints.period
    return [last - i * datapoints.period for i in range(count - 1, -1, -1)]


def _verdict(alarm: Any, datapoints: Datapoints, now: float) -> Verdict | None:
    """The state the data calls for, with CloudWatch's reason; None to keep the current state."""
    relation, breaches = _COMPARISONS[alarm.comparison_operator]
    threshold = float(alarm.threshold)
    window = _window(datapoints, alarm.evaluation_periods, lambda value: breaches(value, threshold))
    count, needed = len(window), alarm.datapoints_to_alarm or len(window)
    treat = alarm.treat_missing_data or "missing"
    present = [(t, datapoints.values[t]) for t in reversed(window) if t in datapoints.values]  # newest first
    missing = count - len(present)
    breaching = [(t, v) for t, v in present if breaches(v, threshold)]
    within = [(t, v) for t, v in present if not breaches(v, threshold)]
    data = partial(_reason_data, alarm, datapoints, window, present, threshold, now)
    if not present:
        if treat == "ignore":
            return None
        if treat == "missing":
            return Verdict(
                INSUFFICIENT_DATA,
                f"Insufficient Data: {_plural(count, 'datapoint')} {_was(count)} unknown.",
                data,
            )
        treated = "Breaching" if treat == "breaching" else "NonBreaching"
        reason = (
            f"Threshold Crossed: no datapoints were received for {_plural(count, 'period')} and "
            f"{_plural(count, 'missing datapoint')} {_was(count)} treated as [{treated}]."
        )
        return Verdict(ALARM if treat == "breaching" else OK, reason, data)
    if treat in ("missing", "ignore") and len(present) < needed:
        if treat == "ignore":
            return None
        alarmed = not within
    else:
        alarmed = len(breaching) + (missing if treat == "breaching" else 0) >= needed
    if alarmed:
        state, shown, extra = ALARM, breaching, missing if treat == "breaching" else 0
        transition = f"minimum {_plural(needed, 'datapoint')} for OK -> ALARM transition"
    else:
        state, shown, extra = OK, within, missing if treat == "notBreaching" else 0
        relation = f"not {relation}"
        transition = f"minimum {_plural(count - needed + 1, 'datapoint')} for ALARM -> OK transition"
    listed = f" [{', '.join(_datapoint(t, v) for t, v in shown)}]" if shown else ""
    crossed = len(shown) + extra
    reason = (
        f"Threshold Crossed: {crossed} out of the last {count} datapoints{listed} {_was(crossed)} {relation} "
        f"the threshold ({threshold!r}) ({transition})."
    )
    return Verdict(state, reason, data)


def _reason_data(
    alarm: Any,
    datapoints: Datapoints,
    window: list[int],
    present: list[tuple[int, float]],
    threshold: float,
    now: float,
) -> dict[str, Any]:
    """StateReasonData as CloudWatch writes it."""
    data: dict[str, Any] = {"version": "1.0", "queryDate": _stamp(now)}
    if present:
        data["startDate"] = _stamp(float(window[0]))
    if alarm.unit:
        data["unit"] = alarm.unit
    if not alarm.metric_data_queries:
        data["statistic"] = alarm.statistic
    data["period"] = datapoints.period
    data["recentDatapoints"] = [v for _, v in reversed(present)]
    data["threshold"] = threshold
    if present:
        data["evaluatedDatapoints"] = [
            {"timestamp": _stamp(float(t))}
            | ({"sampleCount": datapoints.sample_counts[t]} if t in datapoints.sample_counts else {})
            | {"value": v}
            for t, v in present
        ]
    return data


# --- notification -------------------------------------------------------------------------------------


@cache
def _region_name(region: str) -> str:
    """The name CloudWatch gives a region in notifications, from botocore's endpoint data."""
    for partition in botocore.loaders.create_loader().load_data("endpoints")["partitions"]:
        description = partition["regions"].get(region, {}).get("description")
        if description:
            # CloudWatch notifications still say "EU (Ireland)" where botocore says "Europe (Ireland)".
            return str(description).replace("Europe (", "EU (", 1)
    return region


def _dimensions(dimensions: Iterable[Any]) -> list[dict[str, str]]:
    return [{"value": d.value, "name": d.name} for d in dimensions]


def _trigger(alarm: Any) -> dict[str, Any]:
    queries = alarm.metric_data_queries
    rule = {
        "Period": math_period(alarm) if queries else int(alarm.period),
        "EvaluationPeriods": alarm.evaluation_periods,
        "DatapointsToAlarm": alarm.datapoints_to_alarm or alarm.evaluation_periods,
        "ComparisonOperator": alarm.comparison_operator,
        "Threshold": float(alarm.threshold),
        "TreatMissingData": alarm.treat_missing_data or "",
        "EvaluateLowSampleCountPercentile": alarm.evaluate_low_sample_count_percentile or "",
    }
    if not queries:
        return {
            "MetricName": alarm.metric_name,
            "Namespace": alarm.namespace,
            "StatisticType": "Statistic",
            "Statistic": STATISTICS[alarm.statistic],
            "Unit": alarm.unit,
            "Dimensions": _dimensions(alarm.dimensions),
        } | rule
    target = target_id(alarm)
    metrics = []
    for query in queries:
        entry: dict[str, Any] = {"Expression": query.expression} if query.expression else {}
        entry["Id"] = query.id
        if query.label:
            entry["Label"] = query.label
        if query.metric_stat:
            stat = query.metric_stat
            entry["MetricStat"] = {
                "Metric": {
                    "Dimensions": _dimensions(stat.metric.dimensions),
                    "MetricName": stat.metric.metric_name,
                    "Namespace": stat.metric.namespace,
                },
                "Period": int(stat.period),
                "Stat": stat.stat,
            } | ({"Unit": stat.unit} if stat.unit else {})
        entry["ReturnData"] = query.id == target
        metrics.append(entry)
    return rule | {"Metrics": metrics}


def _notification(alarm: Any, old_state: str, account_id: str, region: str) -> dict[str, Any]:
    """The Message CloudWatch publishes to SNS for the alarm's latest state change."""
    return {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": account_id,
        "AlarmConfigurationUpdatedTimestamp": _stamp(alarm.configuration_updated_timestamp),
        "NewStateValue": alarm.state_value,
        "NewStateReason": alarm.state_reason,
        "StateChangeTime": _stamp(alarm.state_updated_timestamp),
        "Region": _region_name(region),
        "AlarmArn": alarm.alarm_arn,
        "OldStateValue": old_state,
        "OKActions": list(alarm.ok_actions),
        "AlarmActions": list(alarm.alarm_actions),
        "InsufficientDataActions": list(alarm.insufficient_data_actions),
        "Trigger": _trigger(alarm),
    }


def _notify(alarm: Any, old_state: str, account_id: str, region: str) -> None:
    actions = {
        ALARM: alarm.alarm_actions,
        OK: alarm.ok_actions,
        INSUFFICIENT_DATA: alarm.insufficient_data_actions,
    }
    topics = [arn for arn in actions[alarm.state_value] if arn.split(":")[2:3] == ["sns"]]
    if not topics:
        return
    subject = f'{alarm.state_value}: "{alarm.name}" in {_region_name(region)}'[:100]
    message = json.dumps(
        _notification(alarm, old_state, account_id, region), ensure_ascii=False, separators=(",", ":")
    )
    for arn in topics:
        topic_region, topic_account = arn.split(":")[3:5]
        if topic_account != account_id:
            _log.warning("alarm %s: %s is another account's topic; not published", alarm.alarm_arn, arn)
            continue
        try:
            sns_backends[account_id][topic_region].publish(message, arn=arn, subject=subject)
        except Exception as error:
            _log.warning("alarm %s: publishing to %s failed: %s", alarm.alarm_arn, arn, error)
