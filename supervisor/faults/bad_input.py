"""Failures that follow from the invocation's own input, while the same code and configuration succeed."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ASYNC_LOSSES, BACKLOG, ERRORS, STREAM_LAG, SUCCEEDED_BESIDE

# The log text (the error record, the successes the logs show) is written by the function, so by whoever
# writes its input: the metrics corroborate, with failed and successful invocations in the same minutes;
# on an SQS mapping, the messages its dead-letter queue holds beside those the mapping deleted; on a stream
# mapping, records that waited behind a batch longer than an invocation can run (then the successes may all
# come before the failures: the stream resends the one batch that fails).
BAD_INPUT = FaultClass(
    name="bad_input",
    description=(
        "invocations fail on their own input while others of the same version and configuration succeed "
        "between them, or one asks S3 for an object no success named, or a stalled stream resends one "
        "failing batch, nothing changed since; not when all fail since the latest change. No command fixes "
        "input: name the gap (source 'remediation'), but for a stalled stream"
    ),
    corroboration=((ERRORS, ASYNC_LOSSES), (SUCCEEDED_BESIDE, BACKLOG, STREAM_LAG)),
    check="supervisor.diagnosis.rules.bad_input:check",
    order=90,
    precedence=90,  # last: an explanation only when no change or setting explains the failures
    # Every class whose failures are failed invocations (throttled requests never run, so they cannot be
    # mistaken for an input's failures and may stand beside them).
    unless=(
        "configuration_error",
        "permission_loss",
        "network_block",
        "dependency_failure",
        "out_of_memory",
        "timeout",
        "code_error",
    ),
)
