"""CloudWatch Logs filter patterns matched as CloudWatch matches them (:mod:`filter_patterns`), where
moto 5.2.5 understands plain words or one quoted phrase and lets most other patterns match every event.

Moto builds its ``EventMessageFilter`` for each event of ``FilterLogEvents`` and once per
``StartLiveTail``; ours compiles each pattern once (cached) and refuses a malformed or unimplemented
one with ``InvalidParameterException``. ``FilterLogEvents`` checks its pattern before reading any
stream, so a group with no events refuses a bad pattern too. Metric and subscription filters keep
moto's behaviour: nothing in the sandbox uses them.

``FilterLogEvents`` also interleaves the group's streams in time order whatever ``interleaved`` says:
AWS has ignored that parameter since June 17, 2019 and always interleaves, where moto 5.2.5 defaults it
to false and returns one stream after the other (docs/sandbox.md).
"""

from __future__ import annotations

import functools
from typing import Any

from moto.logs import models
from moto.logs.exceptions import InvalidParameterException

from chaos.sandbox.extensions.filter_patterns import compile_pattern
from chaos.sandbox.extensions.filter_syntax import Matcher, PatternRefused

MAX_PATTERN_LENGTH = 1024  # FilterLogEvents' documented length constraint on filterPattern


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Matcher | PatternRefused:
    try:
        return compile_pattern(pattern)
    except PatternRefused as refused:
        return refused


def matcher(pattern: str | None) -> Matcher:
    """The matcher of ``pattern`` (``None`` matches every event), or the refusal AWS would answer."""
    text = pattern or ""
    if len(text) > MAX_PATTERN_LENGTH:
        raise InvalidParameterException(
            constraint=f"Member must have length less than or equal to {MAX_PATTERN_LENGTH}",
            parameter="filterPattern",
            value=text,
        )
    compiled = _compiled(text)
    if isinstance(compiled, PatternRefused):
        raise InvalidParameterException(msg=str(compiled))
    return compiled


class EventMessageFilter:
    """Drop-in for moto's class of the same name: ``EventMessageFilter(pattern).matches(message)``."""

    def __init__(self, pattern: str | None) -> None:
        self._matches = matcher(pattern)

    def matches(self, message: str) -> bool:
        return self._matches(message)


def install() -> None:
    original_filter = models.LogsBackend.filter_log_events

    def filter_log_events(
        self: Any,
        log_group_name: str,
        log_stream_names: list[str],
        start_time: int,
        end_time: int,
        limit: int | None,
        next_token: str | None,
        filter_pattern: Any,  # moto passes None when the request has none, despite its annotation
        interleaved: bool,
    ) -> Any:
        del interleaved  # ignored, as AWS ignores it: always interleaved
        matcher(filter_pattern)
        return original_filter(
            self,
            log_group_name,
            log_stream_names,
            start_time,
            end_time,
            limit,
            next_token,
            filter_pattern,
            True,
        )

    setattr(models, "EventMessageFilter", EventMessageFilter)  # noqa: B010
    setattr(models.LogsBackend, "filter_log_events", filter_log_events)  # noqa: B010
