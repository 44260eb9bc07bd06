"""An invocation's metrics go in the minute its log lines were taken in: the log-silence alarm reads
Invocations beside IncomingLogEvents, and a minute torn between them reads as silence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.environment import Spec
from chaos.workload.runtime import _last_ingestion, _Platform, metric_time

BOUNDARY = datetime(2026, 11, 25, 19, 24, tzinfo=UTC)
INGESTED = BOUNDARY - timedelta(milliseconds=3)


def _never() -> datetime:
    raise AssertionError("the ingestion time was read back although the write kept within one minute")


def test_a_write_within_one_minute_needs_no_read_back() -> None:
    writing, written = BOUNDARY - timedelta(seconds=2), BOUNDARY - timedelta(seconds=1)
    assert metric_time(writing, written, _never, logged=True) == written


@pytest.mark.parametrize("logged", [True, False])
def test_a_write_across_a_minute_boundary_takes_the_ingestion_time(logged: bool) -> None:
    writing, written = BOUNDARY - timedelta(milliseconds=5), BOUNDARY + timedelta(milliseconds=5)
    chosen = metric_time(writing, written, lambda: INGESTED, logged=logged)
    # nothing written counts no log event, so any time will do; lines written count in their own minute
    assert chosen == (INGESTED if logged else written)


def test_the_lambda_service_reads_when_a_stream_last_took_lines_in(sandbox: Sandbox) -> None:
    group, stream = f"/aws/lambda/{names.REPORT_FUNCTION}", "2026/11/25/[$LATEST]metric-time"
    logs = sandbox.session(names.OPERATOR).client("logs")
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        logs.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[{"timestamp": int(before.timestamp() * 1000), "message": "a line"}],
        )
        after = datetime.now(UTC)
        region = names.DEFAULT_REGION
        spec = Spec(names.REPORT_FUNCTION, "$LATEST", "h.h", 128, 3.0, {}, group, stream, region)
        ingested = _last_ingestion(_Platform.of(sandbox.session(names.LAMBDA_SERVICE)), spec)
        assert before <= ingested <= after
    finally:
        logs.delete_log_stream(logGroupName=group, logStreamName=stream)
