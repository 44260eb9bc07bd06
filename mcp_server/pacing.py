"""Requests paced to an API's documented rate: CloudTrail ``LookupEvents`` is "limited to two per second,
per account, per Region" (https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html).

A :class:`Pacer` hands out start times one ``1 / rate`` seconds apart to every thread of the process that
reads the same account and Region, so the server's own lookups never throttle each other; a throttling
error that still comes (another caller in the account spends the same allowance) is retried by botocore's
standard retry mode, with its exponential backoff and jitter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

LOOKUP_EVENTS_PER_SECOND = 2.0  # CloudTrail LookupEvents, per account and Region


class Pacer:
    """Start times at most ``rate`` a second; ``clock`` and ``sleep`` are monotonic seconds."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be above 0")
        self._interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next = clock()
        self._lock = threading.Lock()

    def wait(self, within: float) -> bool:
        """Waits for this caller's turn and returns True; False at once (the turn is not taken) when the turn
        would come more than ``within`` seconds from now."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            if start - now > within:
                return False
            self._next = start + self._interval
        if start > now:
            self._sleep(start - now)
        return True
