"""CloudTrail event history for the emulator: every management call recorded, answered by ``LookupEvents``.

moto 5.2.5 does not implement ``LookupEvents`` (``NotImplementedError``). Recording happens in a WSGI
middleware (:mod:`.server_app`), the one place every service's requests pass, S3's included, with the
status moto answered: a call is recorded when moto answers it below 400, which under IAM enforcement means
it was authorized and done (what is recorded: :mod:`.cloudtrail_record`). ``LookupEvents`` is added to
moto's ``CloudTrailResponse``, so moto's own IAM enforcement authorizes ``cloudtrail:LookupEvents``; a
denial is answered in JSON (``AccessDeniedException``), as for the other JSON-protocol services.

Events are kept in memory per account and region, the newest 50,000 of each. Each reaches ``LookupEvents``
after a delivery delay of its own, as AWS documents event history: "CloudTrail typically delivers logs
within an average of about 5 minutes of an API call. This time is not guaranteed"
(https://docs.aws.amazon.com/awscloudtrail/latest/userguide/how-cloudtrail-works.html). The sandbox draws
each event's delay uniformly between 1 and 9 minutes (mean 5), divided by the time scale. A fixed delay
replaces the draw: ``INCIDENT_SANDBOX_CLOUDTRAIL_DELAY_SECONDS`` at start, or at run time
``POST /_sandbox/cloudtrail/delivery-delay`` with the seconds as the body (``aws``: the draw again).

``LookupEvents`` is throttled as AWS throttles it: "limited to two per second, per account, per Region. If
this limit is exceeded, a throttling error occurs"
(https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html) — a
``ThrottlingException`` (botocore's CloudTrail model names it), answered with HTTP 400. The allowance is a
token bucket of two requests refilled at two per second, times the sandbox's time scale
(``INCIDENT_SANDBOX_TIME_SCALE``, default 1: AWS's own pace).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import os
import random
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from moto.cloudtrail.responses import CloudTrailResponse
from moto.core.exceptions import AccessDeniedError, JsonRESTError
from werkzeug.wrappers import Request, Response

from chaos.sandbox.emulator_env import (
    AWS_DELAYS,
    CLOUDTRAIL_DELAY_ENV,
    DELIVERY_DELAY_SECONDS,
    LOOKUPS_PER_SECOND,
    TIME_SCALE_ENV,
)
from chaos.sandbox.extensions import server_app
from chaos.sandbox.extensions.cloudtrail_record import Event, identify

DELAY_PATH = "/_sandbox/cloudtrail/delivery-delay"
EVENTS_KEPT = 50_000
# The attributes LookupEvents filters on, and the values of each that an event has.
_LOOKUP_ATTRIBUTES: dict[str, Callable[[Event], set[str | None]]] = {
    "EventId": lambda event: {event.event_id},
    "EventName": lambda event: {event.event_name},
    "ReadOnly": lambda event: {str(event.read_only).lower()},
    "Username": lambda event: {event.username},
    "ResourceType": lambda event: {r.type for r in event.resources},
    "ResourceName": lambda event: {r.name for r in event.resources} | {r.arn for r in event.resources},
    "EventSource": lambda event: {event.event_source},
    "AccessKeyId": lambda event: {event.access_key_id},
}
_log = logging.getLogger(__name__)


class LookupEventsError(JsonRESTError):
    code = 400


class _AccessDenied(JsonRESTError):
    code = 403


@dataclass(frozen=True)
class _Query:
    attribute: tuple[str, str] | None
    start: float
    end: float
    insight: bool

    def matches(self, event: Event) -> bool:
        if self.insight or not self.start <= event.time <= self.end:
            return False
        if self.attribute is None:
            return True
        key, value = self.attribute
        return value in _LOOKUP_ATTRIBUTES[key](event)


@dataclass
class Allowance:
    """A token bucket: ``rate`` requests a second, at most ``rate`` at once (one second's worth)."""

    rate: float
    tokens: float
    clock: Callable[[], float] = time.monotonic
    refilled: float = field(init=False)

    def __post_init__(self) -> None:
        self.refilled = self.clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.rate, self.tokens + (now - self.refilled) * self.rate)
        self.refilled = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class EventHistory:
    """Thread-safe: moto's server answers each request in its own thread."""

    delay: float | None = None  # a fixed delivery delay; None: each event's drawn as AWS's
    time_scale: float = 1.0
    lookups_per_second: float = LOOKUPS_PER_SECOND
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.time
    _allowances: dict[tuple[str, str], Allowance] = field(default_factory=dict)
    _events: dict[tuple[str, str], deque[tuple[int, Event, float]]] = field(default_factory=dict)
    _sequence: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def add(self, event: Event) -> None:
        with self._lock:
            self._sequence += 1
            delivered_at = event.time + self.rng.uniform(*DELIVERY_DELAY_SECONDS) / self.time_scale
            events = self._events.setdefault((event.account, event.region), deque(maxlen=EVENTS_KEPT))
            events.append((self._sequence, event, delivered_at))

    def _delivered(self, event: Event, delivered_at: float, now: float) -> bool:
        return event.time <= now - self.delay if self.delay is not None else delivered_at <= now

    def lookup(self, account: str, region: str, params: dict[str, Any]) -> dict[str, Any]:
        """A ``LookupEvents`` answer, newest first; raises the API's errors for invalid ``params`` and for a
        request over the account's and Region's allowance."""
        self._admit(account, region)
        query = _query(params)
        limit = params.get("MaxResults", 50)
        if not isinstance(limit, int) or not 1 <= limit <= 50:
            raise LookupEventsError("InvalidMaxResultsException", "MaxResults must be between 1 and 50.")
        fingerprint = hashlib.sha256(repr(query).encode()).hexdigest()[:16]
        before = self._cursor(params.get("NextToken"), fingerprint)
        now = self.clock()
        with self._lock:
            events = list(self._events.get((account, region), ()))
        page: list[tuple[int, Event]] = []
        for sequence, event, delivered_at in _newest_first(events, before):
            if self._delivered(event, delivered_at, now) and query.matches(event):
                if len(page) == limit:
                    return {
                        "Events": [_summary(e) for _, e in page],
                        "NextToken": self._token(page[-1][0], fingerprint),
                    }
                page.append((sequence, event))
        return {"Events": [_summary(e) for _, e in page]}

    def _admit(self, account: str, region: str) -> None:
        with self._lock:
            rate = self.lookups_per_second
            allowance = self._allowances.setdefault((account, region), Allowance(rate, tokens=rate))
            admitted = allowance.take()
        if not admitted:
            raise LookupEventsError("ThrottlingException", "Rate exceeded")

    def _token(self, sequence: int, fingerprint: str) -> str:
        payload = f"{sequence}.{fingerprint}"
        signature = hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()[:32]
        return base64.urlsafe_b64encode(f"{payload}.{signature}".encode()).decode()

    def _cursor(self, token: object, fingerprint: str) -> int | None:
        if token is None:
            return None
        try:
            sequence, token_fingerprint, _ = base64.urlsafe_b64decode(str(token)).decode().split(".")
            valid = token_fingerprint == fingerprint and hmac.compare_digest(
                str(token), self._token(int(sequence), fingerprint)
            )
        except ValueError:
            valid = False
        if not valid:
            raise LookupEventsError(
                "InvalidNextTokenException", "Invalid token or token used with different parameters."
            )
        return int(sequence)


def _newest_first(
    events: list[tuple[int, Event, float]], before: int | None
) -> Iterator[tuple[int, Event, float]]:
    for sequence, event, delivered_at in reversed(events):
        if before is None or sequence < before:
            yield sequence, event, delivered_at


def _query(params: dict[str, Any]) -> _Query:
    attributes = params.get("LookupAttributes") or []
    if len(attributes) > 1:
        raise LookupEventsError(
            "InvalidLookupAttributesException", "You can specify only one lookup attribute."
        )
    attribute = None
    if attributes:
        key, value = attributes[0].get("AttributeKey"), attributes[0].get("AttributeValue")
        if key not in _LOOKUP_ATTRIBUTES or not isinstance(value, str) or not value:
            raise LookupEventsError("InvalidLookupAttributesException", f"Invalid lookup attribute: {key}.")
        if key == "ReadOnly" and value not in ("true", "false"):
            raise LookupEventsError("InvalidLookupAttributesException", "ReadOnly must be true or false.")
        attribute = (key, value)
    start, end = params.get("StartTime", 0.0), params.get("EndTime", math.inf)
    if not isinstance(start, int | float) or not isinstance(end, int | float) or start > end:
        raise LookupEventsError("InvalidTimeRangeException", "The start time must not be after the end time.")
    return _Query(attribute, float(start), float(end), params.get("EventCategory") == "insight")


def _summary(event: Event) -> dict[str, Any]:
    summary = {
        "EventId": event.event_id,
        "EventName": event.event_name,
        "ReadOnly": str(event.read_only).lower(),
        "AccessKeyId": event.access_key_id,
        "EventTime": event.time,
        "EventSource": event.event_source,
        "Resources": [{"ResourceType": r.type, "ResourceName": r.name} for r in event.resources],
        "CloudTrailEvent": event.record,
    }
    return summary | ({"Username": event.username} if event.username else {})


HISTORY = EventHistory()


def install() -> None:
    fixed = os.environ.get(CLOUDTRAIL_DELAY_ENV)
    HISTORY.delay = float(fixed) if fixed else None
    HISTORY.time_scale = float(os.environ.get(TIME_SCALE_ENV, "1"))
    HISTORY.lookups_per_second = LOOKUPS_PER_SECOND * HISTORY.time_scale
    original_authorize = CloudTrailResponse._authenticate_and_authorize_normal_action

    def authorize(self: CloudTrailResponse, resource: str = "*") -> None:
        try:
            original_authorize(self, resource)
        except AccessDeniedError as denied:
            raise _AccessDenied("AccessDeniedException", denied.message) from None

    def lookup_events(self: CloudTrailResponse) -> str:
        return json.dumps(HISTORY.lookup(self.current_account, self.region, json.loads(self.body or "{}")))

    setattr(CloudTrailResponse, "_authenticate_and_authorize_normal_action", authorize)  # noqa: B010
    setattr(CloudTrailResponse, "lookup_events", lookup_events)  # noqa: B010
    server_app.wrap(_recorder)
    server_app.mount(DELAY_PATH, _set_delay)


def _recorder(app: WSGIApplication) -> WSGIApplication:
    def record(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            call = identify(environ)
        except Exception:  # never fail a call because of the recorder; the emulator's log says why
            _log.exception(
                "could not tell whether to record %s %s", environ["REQUEST_METHOD"], environ["PATH_INFO"]
            )
            call = None
        if call is None:
            return app(environ, start_response)
        answered: list[tuple[str, list[tuple[str, str]]]] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answered.append((status, headers))
            return start_response(status, headers, exc_info)

        chunks = app(environ, capture)
        try:
            body = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        status, headers = answered[-1]
        code = int(status.split()[0])
        if code < 400:
            try:
                HISTORY.add(call.event(code, headers, body))
            except Exception:  # as above
                _log.exception(
                    "could not record %s:%s as a CloudTrail event", call.service, call.operation.name
                )
        return [body]

    return record


def _set_delay(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    request = Request(environ)
    body = request.get_data(as_text=True).strip()
    try:
        seconds = None if body == AWS_DELAYS else float(body)
    except ValueError:
        seconds = math.nan
    if request.method != "POST":
        response = Response(f"POST the delay in seconds, or {AWS_DELAYS!r} for AWS's\n", status=405)
    elif seconds is not None and not 0 <= seconds < math.inf:
        response = Response(
            f"the body must be a number of seconds, 0 or more, or {AWS_DELAYS!r}\n", status=400
        )
    else:
        HISTORY.delay = seconds
        response = Response(status=204)
    return response(environ, start_response)
