"""The sandbox's Lambda service for asynchronous invocations: the event queue behind ``InvocationType=Event``
and SNS deliveries, retries, maximum event age, destinations and dead-letter queues.

As Lambda documents it (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html):
- the function's event invoke configuration (``GetFunctionEventInvokeConfig`` as ``lambda-service``) gives
  ``MaximumRetryAttempts`` (2 when none) and ``MaximumEventAgeInSeconds`` (21600 when none);
- after a function error (its code's or its runtime's, timeouts included) the event runs again one minute
  later, then two minutes after that, up to ``MaximumRetryAttempts``;
- a throttled event returns to the queue, retried from 1 s after the attempt, the interval doubling up to
  5 minutes, until its maximum age; with reserved concurrency 0 it goes to the dead-letter queue or
  on-failure destination at once, without retries; a system error (HTTP 5xx: an environment-variable key
  Lambda cannot decrypt with) is retried in the same way (up to six hours by default, "with exponential
  backoff", as the error-handling page says of throttles and system errors);
- an event older than ``MaximumEventAgeInSeconds`` when its turn comes is not run;
- an event whose retries are exhausted or whose age is exceeded is discarded: its invocation record goes to
  the ``OnFailure`` destination and the event itself to the function's ``DeadLetterConfig`` target (both
  when both are configured: "You can configure destinations in addition to or instead of a dead-letter
  queue", https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html); a success
  sends its record to the ``OnSuccess`` destination. Deliveries use the function's role
  (``async_delivery``).

Metrics, ``AWS/Lambda``, dimension ``FunctionName``
(https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics):
``AsyncEventsReceived`` when an event is queued; ``AsyncEventAge`` (ms, from its receipt) each time the
function is invoked with it (a throttled attempt invokes nothing); ``AsyncEventsDropped`` for every
discarded event, also when it was sent to a dead-letter queue or on-failure destination ("events are sent
there before being dropped"); ``DeadLetterErrors`` for a failed dead-letter delivery;
``DestinationDeliveryFailures`` for a failed destination delivery. Every invocation runs through the
runtime's ``invoke`` (concurrency, logs and the per-invocation metrics).

Time comes from a clock (``now()``, epoch seconds): ``pump()`` runs only the events whose time has come,
so tests move a fake clock through the documented delays instead of sleeping.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import ClientError

from chaos.workload import metrics
from chaos.workload.async_delivery import (
    Condition,
    Delivery,
    Kind,
    dead_letter_attributes,
    invocation_record,
    send,
)
from chaos.workload.runtime import Invocation, InvokeError, LocalLambdaRuntime, assumed_role_session

EVENTS_PATH = "/_sandbox/lambda/async-events"
RETRY_DELAYS_SECONDS = (60.0, 120.0)
THROTTLE_FIRST_DELAY_SECONDS = 1.0
THROTTLE_MAX_DELAY_SECONDS = 300.0
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_MAX_AGE_SECONDS = 21600
Status = Literal["succeeded", "retry_scheduled", "throttled", "refused", "failed", "expired"]


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass
class AsyncEvent:
    """One queued event. ``function`` is a name or an unqualified ARN; ``payload`` the event as sent;
    ``request_id`` the id every attempt runs with."""

    request_id: str
    function: str
    qualifier: str | None
    payload: str
    received_at: float
    source: str
    due: float
    invoke_count: int = 0  # attempts that ran the function
    throttle_delay: float = 0.0
    last: Invocation | None = field(default=None, repr=False)

    @property
    def event(self) -> Any:
        return json.loads(self.payload) if self.payload.strip() else {}

    @property
    def function_name(self) -> str:
        return self.function.split(":")[6] if self.function.startswith("arn:") else self.function


@dataclass(frozen=True)
class AsyncOutcome:
    """What one turn of an event came to. ``request_id`` is the event's, the one every attempt's logs show."""

    function: str
    qualifier: str | None
    status: Status
    request_id: str
    invoke_count: int
    invocation: Invocation | None
    next_attempt_at: float | None = None
    deliveries: tuple[Delivery, ...] = ()
    error: str | None = None


def _split(function_arn: str) -> tuple[str, str | None]:
    parts = function_arn.split(":")
    return (":".join(parts[:7]), parts[7]) if len(parts) > 7 else (function_arn, None)


class AsyncInvoker:
    """``runtime`` runs the invocations; ``platform`` is the Lambda service's own session
    (``lambda-service``): it reads configurations, publishes metrics and assumes functions' roles."""

    def __init__(
        self, runtime: LocalLambdaRuntime, platform: boto3.Session, clock: Clock | None = None
    ) -> None:
        self._runtime = runtime
        self._clock: Clock = clock or SystemClock()
        self._clients: dict[int, tuple[Any, Any]] = {}  # per account's Lambda service: lambda, cloudwatch
        endpoint = urlsplit(platform.client("lambda").meta.endpoint_url)
        self._events_url = f"{endpoint.scheme}://{endpoint.netloc}{EVENTS_PATH}"
        self._lock = threading.Lock()
        self._queue: list[AsyncEvent] = []
        self._turning = 0  # events taken from the queue whose turn has not ended yet

    def collect(self) -> list[AsyncEvent]:
        """Take the events the emulator accepted (``Invoke`` with ``Event``, SNS deliveries) into the queue;
        each is first due now."""
        request = urllib.request.Request(self._events_url, data=b"", method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the emulator's URL
            accepted: list[dict[str, Any]] = json.loads(response.read())
        now = self._clock.now()
        events = []
        for item in accepted:
            function, qualifier = _split(item["function_arn"])
            received = item["received_ms"] / 1000
            events.append(
                AsyncEvent(item["id"], function, qualifier, item["payload"], received, item["source"], now)
            )
        for event in events:
            self._received(event)
        return events

    def submit(self, function: str, event: Any, qualifier: str | None = None) -> AsyncEvent:
        """Queue ``event`` for ``function`` directly, as if Lambda had just accepted it."""
        now = self._clock.now()
        queued = AsyncEvent(str(uuid.uuid4()), function, qualifier, json.dumps(event), now, "submit", now)
        self._received(queued)
        return queued

    def pending(self) -> int:
        """Events queued or taking their turn now: an invocation still running publishes its metrics later."""
        with self._lock:
            return len(self._queue) + self._turning

    def next_due(self) -> float | None:
        """When the earliest queued event is due (epoch seconds), if any."""
        with self._lock:
            return min((e.due for e in self._queue), default=None)

    def pump(self) -> list[AsyncOutcome]:
        """Give every event whose time has come its turn, oldest due first."""
        now = self._clock.now()
        with self._lock:
            due = sorted((e for e in self._queue if e.due <= now), key=lambda e: e.due)
            self._queue = [e for e in self._queue if e.due > now]
            self._turning += len(due)
        outcomes = []
        for event in due:
            try:
                outcomes.append(self._turn(event))
            finally:
                with self._lock:
                    self._turning -= 1
        return outcomes

    def _received(self, event: AsyncEvent) -> None:
        self._metric(event, "AsyncEventsReceived", 1, event.received_at)
        with self._lock:
            self._queue.append(event)

    def _requeue(self, event: AsyncEvent, delay: float) -> float:
        event.due = self._clock.now() + delay
        with self._lock:
            self._queue.append(event)
        return event.due

    def _service(self, event: AsyncEvent) -> tuple[Any, Any]:
        """Lambda and CloudWatch clients of the function's own account's Lambda service."""
        session = self._runtime.session_for(event.function)
        with self._lock:
            if id(session) not in self._clients:
                self._clients[id(session)] = (session.client("lambda"), session.client("cloudwatch"))
            return self._clients[id(session)]

    def _metric(self, event: AsyncEvent, name: str, value: float, at: float) -> None:
        moment = datetime.fromtimestamp(at, UTC)
        cloudwatch = self._service(event)[1]
        metrics.publish_async(
            cloudwatch, function_name=event.function_name, name=name, value=value, at=moment
        )

    def _event_config(self, event: AsyncEvent) -> dict[str, Any]:
        params = {"FunctionName": event.function} | (
            {"Qualifier": event.qualifier} if event.qualifier else {}
        )
        try:
            config: dict[str, Any] = self._service(event)[0].get_function_event_invoke_config(**params)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            config = {}
        return {
            "MaximumRetryAttempts": DEFAULT_RETRY_ATTEMPTS,
            "MaximumEventAgeInSeconds": DEFAULT_MAX_AGE_SECONDS,
        } | config

    def _turn(self, event: AsyncEvent) -> AsyncOutcome:
        config = self._event_config(event)
        if self._clock.now() - event.received_at > config["MaximumEventAgeInSeconds"]:
            return self._discard(event, "EventAgeExceeded", config, "expired")
        started = self._clock.now()
        try:
            invocation = self._runtime.invoke(event.function, event.event, event.qualifier, event.request_id)
        except InvokeError as error:  # the function or qualifier is gone: nothing to run it with
            self._metric(event, "AsyncEventsDropped", 1, started)
            return AsyncOutcome(
                event.function,
                event.qualifier,
                "failed",
                event.request_id,
                event.invoke_count,
                None,
                error=str(error),
            )
        event.last = invocation
        if invocation.status in ("throttled", "refused"):
            return self._returned(event, config, invocation)
        event.invoke_count += 1
        self._metric(event, "AsyncEventAge", (started - event.received_at) * 1000, started)
        if invocation.status == "succeeded":
            deliveries = self._to_destination(event, config, "OnSuccess", "Success")
            return self._outcome(event, "succeeded", deliveries)
        if event.invoke_count <= config["MaximumRetryAttempts"]:
            due = self._requeue(event, RETRY_DELAYS_SECONDS[event.invoke_count - 1])
            return self._outcome(event, "retry_scheduled", next_attempt_at=due)
        return self._discard(event, "RetriesExhausted", config, "failed")

    def _returned(self, event: AsyncEvent, config: dict[str, Any], invocation: Invocation) -> AsyncOutcome:
        """A throttled or refused attempt: the event goes back to the queue, to be tried again later."""
        reserved = (
            self._service(event)[0]
            .get_function_concurrency(FunctionName=event.function)
            .get("ReservedConcurrentExecutions")
        )
        if reserved == 0:  # documented: straight to the DLQ or on-failure destination, without retries
            return self._discard(event, "RetriesExhausted", config, "failed")
        previous = event.throttle_delay
        event.throttle_delay = min(
            max(THROTTLE_FIRST_DELAY_SECONDS, 2 * previous), THROTTLE_MAX_DELAY_SECONDS
        )
        due = self._requeue(event, event.throttle_delay)
        status: Status = "refused" if invocation.status == "refused" else "throttled"
        return self._outcome(event, status, next_attempt_at=due)

    def _outcome(
        self,
        event: AsyncEvent,
        status: Status,
        deliveries: list[Delivery] | None = None,
        next_attempt_at: float | None = None,
    ) -> AsyncOutcome:
        last = event.last
        return AsyncOutcome(
            event.function,
            event.qualifier,
            status,
            event.request_id,
            event.invoke_count,
            last,
            next_attempt_at,
            tuple(deliveries or ()),
        )

    def _discard(
        self, event: AsyncEvent, condition: Condition, config: dict[str, Any], status: Status
    ) -> AsyncOutcome:
        self._metric(event, "AsyncEventsDropped", 1, self._clock.now())
        deliveries = self._to_destination(event, config, "OnFailure", condition)
        function = self._function_config(event)
        target = (function.get("DeadLetterConfig") or {}).get("TargetArn")
        if target:
            last = event.last
            request_id = last.request_id if last is not None else ""
            role = self._role(function)
            delivery = send(
                role, "dead_letter", target, event.payload, dead_letter_attributes(request_id, last)
            )
            if not delivery.delivered and delivery.emulated:
                self._metric(event, "DeadLetterErrors", 1, self._clock.now())
            deliveries.append(delivery)
        return self._outcome(event, status, deliveries)

    def _to_destination(
        self, event: AsyncEvent, config: dict[str, Any], which: str, condition: Condition
    ) -> list[Delivery]:
        target = ((config.get("DestinationConfig") or {}).get(which) or {}).get("Destination")
        if not target:
            return []
        function = self._function_config(event)
        unqualified = ":".join(function["FunctionArn"].split(":")[:7])
        record = invocation_record(
            request_id=event.request_id,
            function_arn=f"{unqualified}:{event.qualifier or '$LATEST'}",
            condition=condition,
            invoke_count=event.invoke_count,
            payload=event.event,
            last=event.last,
            at=self._clock.now(),
        )
        kind: Kind = "on_success" if which == "OnSuccess" else "on_failure"
        delivery = send(self._role(function), kind, target, json.dumps(record))
        if not delivery.delivered and delivery.emulated:
            self._metric(event, "DestinationDeliveryFailures", 1, self._clock.now())
        return [delivery]

    def _function_config(self, event: AsyncEvent) -> dict[str, Any]:
        params = {"FunctionName": event.function} | (
            {"Qualifier": event.qualifier} if event.qualifier else {}
        )
        config: dict[str, Any] = self._service(event)[0].get_function(**params)["Configuration"]
        return config

    def _role(self, function: dict[str, Any]) -> boto3.Session:
        """The function's role, assumed by its own account's Lambda service."""
        platform = self._runtime.session_for(function["FunctionArn"])
        return assumed_role_session(platform, function["Role"], function["FunctionName"])
