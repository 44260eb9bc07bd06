"""Everyday traffic in a function's log group: the log events of many successful invocations, spread over a
time window across many execution environments, as the Lambda service writes them, so that the log tools
meet the volume a busy function has and a real failure written later is only in the newest minutes.

Each environment is one log stream named as Lambda names them (``YYYY/MM/DD/[$LATEST]<32 hex>``); its
invocations run one after the other: ``INIT_START`` before the first, then per invocation ``START``, two
lines of the function's own output, ``END`` and ``REPORT`` (init duration on the first), in the function's
``LoggingConfig`` format and levels (the records come from :mod:`chaos.workload.platform_log`, as the
sandbox runtime's do). Streams take turns, so the window is covered evenly across all of them.

The events are written with ``PutLogEvents`` in batches within its limits: at most 10,000 events and
1,048,576 bytes (each message's UTF-8 bytes plus 26), in time order, within 24 hours. Only logs: no
metrics are published and CloudTrail records nothing (``CreateLogStream`` and ``PutLogEvents`` are data
events), so nothing but the log group says this traffic happened.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from chaos.workload.environment import Spec
from chaos.workload.platform_log import PlatformLog, Report

BATCH_EVENTS = 10_000  # PutLogEvents: the most events in one batch
BATCH_BYTES = 1_048_576  # PutLogEvents: the most bytes in one batch, counted as below
EVENT_OVERHEAD = 26  # PutLogEvents counts each event's message in UTF-8 plus 26 bytes
BATCH_SPAN_MS = 24 * 3_600_000  # PutLogEvents: one batch may not span more than 24 hours
MAX_DURATION_MS = 90  # the longest an invocation of this traffic lasts
# What an invocation that retried a call prints: error-like text in an invocation that succeeds.
RETRIED = "retrying batch {number:07d} after ReadTimeoutError: Read timeout on endpoint URL\n"


@dataclass(frozen=True)
class Traffic:
    """What was written: the streams, how many events and invocations, and the newest invocation (started
    last, of all streams)."""

    group: str
    streams: tuple[str, ...]
    events: int
    invocations: int
    batches: int
    first_ms: int
    last_ms: int
    newest_request_id: str
    newest_started_ms: int


def batches(events: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``events`` (in time order) cut into ``PutLogEvents`` batches within its limits."""
    batch: list[dict[str, Any]] = []
    size = 0
    for event in events:
        cost = len(event["message"].encode()) + EVENT_OVERHEAD
        full = len(batch) == BATCH_EVENTS or size + cost > BATCH_BYTES
        if batch and (full or event["timestamp"] - batch[0]["timestamp"] > BATCH_SPAN_MS):
            yield batch
            batch, size = [], 0
        batch.append(event)
        size += cost
    if batch:
        yield batch


def put_events(logs: Any, group: str, stream: str, events: list[dict[str, Any]]) -> int:
    """Create ``stream`` if needed and write ``events`` (sorted here, as a batch must be); the calls made."""
    try:
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
            raise
    calls = 0
    for batch in batches(sorted(events, key=lambda event: event["timestamp"])):
        logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=batch)
        calls += 1
    return calls


def _spec(config: dict[str, Any], stream: str, region: str) -> Spec:
    logging = config.get("LoggingConfig") or {}
    return Spec(
        function_name=config["FunctionName"],
        version="$LATEST",
        handler=config.get("Handler", ""),
        memory_mb=int(config.get("MemorySize", 128)),
        timeout_seconds=float(config.get("Timeout", 3)),
        variables={},
        log_group=logging.get("LogGroup") or f"/aws/lambda/{config['FunctionName']}",
        log_stream=stream,
        region=region,
        runtime=config.get("Runtime") or "python3.12",
        log_format=logging.get("LogFormat") or "Text",
        application_log_level=logging.get("ApplicationLogLevel"),
        system_log_level=logging.get("SystemLogLevel"),
    )


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@dataclass
class _Environment:
    """One execution environment's stream and the events written to it so far."""

    log: PlatformLog
    events: list[dict[str, Any]]
    warm: bool = False

    def add(self, ms: int, lines: list[str]) -> None:
        self.events += [{"timestamp": ms, "message": line} for line in lines]

    def invocation(
        self, rng: random.Random, started_ms: int, most_ms: float, number: int, *, retried: bool = False
    ) -> str:
        """One successful invocation starting at ``started_ms`` and lasting at most ``most_ms`` (``retried``:
        its output also tells of a call it retried); its request id."""
        log = self.log
        request_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        duration = round(min(most_ms, rng.uniform(15.0, MAX_DURATION_MS)), 2)
        init = None if self.warm else round(rng.uniform(150.0, 400.0), 2)
        if init is not None:
            self.add(started_ms, log.init_start(_at(started_ms)))
            self.warm = True
        ended_ms = started_ms + int(duration)
        said = [f"processing batch {number:07d} of 25 records\n"]
        said += [RETRIED.format(number=number)] if retried else []
        done = [f"processed batch {number:07d}: 25 records in {duration:.2f} ms\n"]
        self.add(started_ms, log.start(_at(started_ms), request_id) + log.application(said, [None]))
        memory = min(log.spec.memory_mb, rng.randint(48, 72))
        report = Report(request_id, duration, memory, "success", init_duration_ms=init)
        ended = log.end(_at(ended_ms), report, produced_bytes=64) + log.report(_at(ended_ms), report)
        self.add(ended_ms, log.application(done, [None]) + ended)
        return request_id


def _stream_name(rng: random.Random, at_ms: int) -> str:
    return f"{_at(at_ms):%Y/%m/%d}/[$LATEST]{rng.getrandbits(128):032x}"


def _per_invocation(log: PlatformLog) -> int:
    """How many events one warm invocation writes in ``log``'s format and levels."""
    probe = _Environment(log, [], warm=True)
    probe.invocation(random.Random(0), 0, 1.0, 0)
    return len(probe.events)


def write_traffic(
    session: boto3.Session,
    function_name: str,
    *,
    events: int,
    streams: int,
    start_ms: int,
    end_ms: int,
    retried: int = 0,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> Traffic:
    """At least ``events`` log events of successful invocations of ``function_name`` between ``start_ms``
    and ``end_ms`` (epoch milliseconds, inside the last 14 days as PutLogEvents requires), across
    ``streams`` log streams, written as ``session``'s identity (it needs ``lambda:GetFunctionConfiguration``
    and the log writes). ``retried`` of the invocations, spread evenly, also print a line about a call
    they retried (:data:`RETRIED`). The same ``seed`` writes the same request ids and stream names."""
    config = session.client("lambda").get_function_configuration(FunctionName=function_name)
    rng = random.Random(seed)
    environments = [
        _Environment(PlatformLog(_spec(config, _stream_name(rng, start_ms), session.region_name or "")), [])
        for _ in range(streams)
    ]
    per = _per_invocation(environments[0].log) if environments else 0
    count = -(-events // per) if per else 0  # ceiling: with the INIT_START records, at least ``events``
    last_start_ms = end_ms - MAX_DURATION_MS
    if events < 1 or streams < 1 or count < max(1, retried) or last_start_ms - start_ms < count - 1:
        raise ValueError(f"cannot write {events} events in {streams} streams between {start_ms} and {end_ms}")
    gap_ms = (last_start_ms - start_ms) / max(1, count - 1)
    every = count // retried if retried else 0
    newest = ""
    for number in range(count):
        environment = environments[number % streams]
        noisy = bool(every) and number % every == every // 2 and number // every < retried
        started = start_ms + int(number * gap_ms)
        newest = environment.invocation(rng, started, gap_ms * streams / 2, number, retried=noisy)
    logs, group, calls = session.client("logs"), environments[0].log.spec.log_group, 0
    for index, environment in enumerate(environments):
        calls += put_events(logs, group, environment.log.spec.log_stream, environment.events)
        progress(f"wrote stream {index + 1}/{streams}")
    stamps = [event["timestamp"] for environment in environments for event in environment.events]
    return Traffic(
        group=group,
        streams=tuple(environment.log.spec.log_stream for environment in environments),
        events=len(stamps),
        invocations=count,
        batches=calls,
        first_ms=min(stamps),
        last_ms=max(stamps),
        newest_request_id=newest,
        newest_started_ms=start_ms + int((count - 1) * gap_ms),
    )
