"""The AWS reads of one tool call: run on worker threads, concurrently where independent, all within the
tool's deadline; a read that fails or is not answered in time becomes a :class:`Gap`, not a failed call.

A tool answers with what it could read and lists the rest. Only a failure that leaves nothing to answer
(the function itself cannot be found or read) is raised as a tool error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from mcp_server.contract.common import Gap
from mcp_server.errors import DiagnosticToolError, describe_aws_failure

T = TypeVar("T")

TIMEOUT_CODE = "Timeout"


@dataclass(frozen=True)
class Read:
    """One AWS read: ``operation`` ("iam:GetPolicyVersion") of ``target`` ("policy arn:...")."""

    operation: str
    target: str
    call: Callable[[], Any]
    meaning: str  # what is missing for the investigation when it cannot be read


class Reads:
    """The reads of one tool call; ``gaps`` collects what could not be read, in order."""

    def __init__(self, executor: ThreadPoolExecutor, deadline_seconds: float, region: str | None) -> None:
        self._executor = executor
        self._deadline = time.monotonic() + deadline_seconds
        self.deadline_seconds = deadline_seconds
        self.region = region
        self.gaps: list[Gap] = []

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def one(self, read: Read) -> Any:
        """The read's result, or None with a gap recorded."""
        return self.many([read])[0]

    def many(self, reads: Sequence[Read]) -> list[Any]:
        """Results of independent reads made concurrently, in order; None (and a gap) for each that failed
        or was not answered before the deadline."""
        futures: list[Future[Any]] = [self._executor.submit(read.call) for read in reads]
        wait(futures, timeout=self.remaining())
        return [self._result(read, future) for read, future in zip(reads, futures, strict=True)]

    def bounded(self, read: Read) -> Any:
        """The read's result, or None with a gap when it is not answered before the deadline; its AWS
        failures are raised (the caller knows which of them still leave an answer)."""
        future = self._executor.submit(read.call)
        try:
            return future.result(timeout=self.remaining())
        except TimeoutError:
            future.cancel()
            self.gaps.append(self._timeout_gap(read))
            return None

    def required(self, read: Read) -> Any:
        """A read the answer cannot do without: its failure is raised as the tool's error."""
        future = self._executor.submit(read.call)
        try:
            return future.result(timeout=self.remaining())
        except TimeoutError:
            raise describe_timeout(read, self.deadline_seconds, self.region) from None
        except (ClientError, BotoCoreError) as error:
            raise describe_aws_failure(error, queried=read.target, region=self.region) from error

    def _result(self, read: Read, future: Future[Any]) -> Any:
        if not future.done():
            future.cancel()
            self.gaps.append(self._timeout_gap(read))
            return None
        error = future.exception()
        if error is None:
            return future.result()
        if not isinstance(error, ClientError | BotoCoreError):
            raise error
        code = str(error.response.get("Error", {}).get("Code")) if isinstance(error, ClientError) else None
        self.gaps.append(
            Gap(
                source=f"{read.operation} of {read.target}",
                error_code=code or type(error).__name__,
                meaning=f"{_why(code)}: {read.meaning}",
            )
        )
        return None

    def _timeout_gap(self, read: Read) -> Gap:
        return Gap(
            source=f"{read.operation} of {read.target}",
            error_code=TIMEOUT_CODE,
            meaning=f"not answered within the tool's {self.deadline_seconds:g} s deadline: {read.meaning}",
        )

    def gap(self, source: str, meaning: str, error_code: str | None = None) -> None:
        """A gap that is not an AWS failure (events not delivered yet, say)."""
        self.gaps.append(Gap(source=source, error_code=error_code, meaning=meaning))


def _why(code: str | None) -> str:
    if code in {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}:
        return "the MCP server's identity is not allowed to read it"
    if code and ("NotFound" in code or code in {"NoSuchEntity", "ResourceNotFoundException"}):
        return "it no longer exists"
    if code and "Throttl" in code:
        return "AWS throttled the request after retries"
    return "it could not be read"


def describe_timeout(read: Read, deadline_seconds: float, region: str | None) -> DiagnosticToolError:
    return DiagnosticToolError(
        f"{read.operation} of {read.target} in region {region or '(unset)'} was not answered within the "
        f"tool's {deadline_seconds:g} s deadline: AWS is slow or unreachable from the MCP server; try again"
    )
