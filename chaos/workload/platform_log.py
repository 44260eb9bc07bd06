"""What the Lambda service writes around a function's own output, in the function's ``LoggingConfig``.

Runtime-independent: any worker speaking the frame protocol of :mod:`chaos.workload.environment` gets
the same platform records. ``Text`` gives the plain lines (``INIT_START``, ``INIT_REPORT``, ``START``,
``END``, ``REPORT``, ``Task timed out``, ``RequestId: ... Error: ...``); ``JSON`` gives the Telemetry API
events as Lambda writes them to CloudWatch Logs (``{"time","type","record"}``), each kept only when its
level passes ``SystemLogLevel``, and the function's own lines kept only when theirs passes
``ApplicationLogLevel``. Formats, levels and sources: docs/sandbox.md, "Log formats".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from chaos.workload.environment import Spec

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
Status = Literal["success", "error", "timeout"]
# Lambda keeps an error type a runtime reports only in these shapes (aws-lambda-runtime-interface-emulator,
# internal/lambda/fatalerror/fatalerror.go, GetValidRuntimeOrFunctionErrorType).
_VALID_ERROR_TYPE = re.compile(r"(Runtime|Function)\.[A-Z][a-zA-Z]+")


def rank(level: str | None) -> int:
    """A level's place from TRACE (0) to FATAL (5); what Lambda does not recognise counts as INFO."""
    name = (level or "").upper()
    return LEVELS.index(name) if name in LEVELS else LEVELS.index("INFO")


def platform_error_type(error_type: str) -> str:
    """The error type as the platform states it in INIT_REPORT and REPORT."""
    if _VALID_ERROR_TYPE.search(error_type):
        return error_type
    return "Function.Unknown" if error_type.startswith("Function.") else "Runtime.Unknown"


def line_level(line: str, frame_level: str | None) -> str:
    """The level Lambda gives one line of function output: the runtime's own (its log frame's level), else
    the ``level`` key of a JSON object, else INFO ("Log-level filtering")."""
    if frame_level:
        return frame_level
    text = line.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return "INFO"
        level = value.get("level") if isinstance(value, dict) else None
        if isinstance(level, str) and level.upper() in LEVELS:
            return level.upper()
    return "INFO"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _runtime_version(runtime: str) -> str:
    """``python3.12`` → ``python:3.12.sandbox``: AWS's ``<family>:<version>.<build>`` shape, with a build
    name that says whose runtime it is."""
    family = runtime.rstrip("0123456789.x")
    return f"{family}:{runtime[len(family) :].removesuffix('.x')}.sandbox"


@dataclass(frozen=True)
class Report:
    """An invocation's measured figures and outcome, as its report states them."""

    request_id: str
    duration_ms: float
    max_memory_mb: int
    status: Status
    error_type: str | None = None
    init_duration_ms: float | None = None


class PlatformLog:
    """The platform records of one execution environment, in its function's log format and levels."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.json = spec.log_format.upper() == "JSON"
        self.system_level = rank(spec.system_log_level or "INFO")
        self.application_level = rank(spec.application_log_level or "INFO")
        self.runtime_version = _runtime_version(spec.runtime)
        digest = hashlib.sha256(self.runtime_version.encode()).hexdigest()
        self.runtime_version_arn = f"arn:aws:lambda:{spec.region}::runtime:{digest}"

    def application(self, lines: list[str], levels: list[str | None]) -> list[str]:
        """The function's lines Lambda keeps: all in Text, those at ApplicationLogLevel or above in JSON."""
        if not self.json:
            return list(lines)
        padded = [*levels, *[None] * (len(lines) - len(levels))]
        return [line for line, level in zip(lines, padded, strict=True) if self._keeps_app(line, level)]

    def _keeps_app(self, line: str, level: str | None) -> bool:
        return rank(line_level(line, level)) >= self.application_level

    def _event(self, at: datetime, kind: str, level: str, record: dict[str, Any]) -> list[str]:
        if rank(level) < self.system_level:
            return []
        event = {"time": _stamp(at), "type": f"platform.{kind}", "record": record}
        return [json.dumps(event, separators=(",", ":"))]

    def init_start(self, at: datetime) -> list[str]:
        if not self.json:
            return [
                f"INIT_START Runtime Version: {self.runtime_version}\t"
                f"Runtime Version ARN: {self.runtime_version_arn}\n"
            ]
        record = {
            "initializationType": "on-demand",
            "phase": "init",
            "runtimeVersion": self.runtime_version,
            "runtimeVersionArn": self.runtime_version_arn,
            "functionName": self.spec.function_name,
            "functionVersion": self.spec.version,
            "instanceId": self.spec.log_stream,
            "instanceMaxMemory": self.spec.memory_mb * 1024 * 1024,
        }
        return self._event(at, "initStart", "INFO", record)  # INFO: the record names its runtime version

    def init_done(
        self, at: datetime, phase: str, ms: float, status: Status, error_type: str | None
    ) -> list[str]:
        """The end of an init phase: ``INIT_REPORT`` in Text when it failed; ``platform.initRuntimeDone``
        and ``platform.initReport`` in JSON (DEBUG when it succeeded on demand, WARN when it failed)."""
        failed = status != "success"
        shown = platform_error_type(error_type) if failed and error_type and status == "error" else None
        if not self.json:
            if not failed:
                return []
            tail = f"\tError Type: {shown}" if shown else ""
            return [f"INIT_REPORT Init Duration: {ms:.2f} ms\tPhase: {phase}\tStatus: {status}{tail}\n"]
        head: dict[str, Any] = {"initializationType": "on-demand", "phase": phase, "status": status}
        head |= {"errorType": shown} if shown else {}
        level = "WARN" if failed else "DEBUG"
        report = head | {"metrics": {"durationMs": round(ms, 3)}}
        return self._event(at, "initRuntimeDone", level, head) + self._event(at, "initReport", level, report)

    def start(self, at: datetime, request_id: str) -> list[str]:
        if not self.json:
            return [f"START RequestId: {request_id} Version: {self.spec.version}\n"]
        return self._event(at, "start", "INFO", {"requestId": request_id, "version": self.spec.version})

    def timed_out(self, at: datetime, request_id: str) -> list[str]:
        """Text only: in JSON the timeout is the status of ``runtimeDone`` and ``report``."""
        if self.json:
            return []
        return [f"{_stamp(at)} {request_id} Task timed out after {self.spec.timeout_seconds:.2f} seconds\n"]

    def fault(self, request_id: str, message: str, error_type: str) -> list[str]:
        """Text only: the platform's line when the runtime process exits under an invocation."""
        if self.json:
            return []
        return [f"RequestId: {request_id} Error: {message}\n{error_type}\n"]

    def end(self, at: datetime, report: Report, produced_bytes: int) -> list[str]:
        """``END`` in Text; ``platform.runtimeDone`` in JSON (DEBUG on success, WARN otherwise)."""
        if not self.json:
            return [f"END RequestId: {report.request_id}\n"]
        record: dict[str, Any] = {"requestId": report.request_id, "status": report.status}
        record["metrics"] = {"durationMs": round(report.duration_ms, 3), "producedBytes": produced_bytes}
        record |= {"errorType": report.error_type} if report.error_type else {}
        return self._event(at, "runtimeDone", "DEBUG" if report.status == "success" else "WARN", record)

    def report(self, at: datetime, report: Report) -> list[str]:
        """``REPORT`` in Text; ``platform.report`` in JSON (INFO on success, WARN otherwise)."""
        billed = max(1, int(report.duration_ms + 0.999))
        if not self.json:
            line = (
                f"REPORT RequestId: {report.request_id}\tDuration: {report.duration_ms:.2f} ms\t"
                f"Billed Duration: {billed} ms\tMemory Size: {self.spec.memory_mb} MB\t"
                f"Max Memory Used: {report.max_memory_mb} MB\t"
            )
            if report.init_duration_ms is not None:
                line += f"Init Duration: {report.init_duration_ms:.2f} ms\t"
            if report.status != "success":
                line += f"Status: {report.status}\t"
            if report.error_type:
                line += f"Error Type: {report.error_type}"
            return [line.rstrip("\t") + "\n"]
        metrics: dict[str, Any] = {
            "durationMs": round(report.duration_ms, 3),
            "billedDurationMs": billed,
            "memorySizeMB": self.spec.memory_mb,
            "maxMemoryUsedMB": report.max_memory_mb,
        }
        if report.init_duration_ms is not None:
            metrics["initDurationMs"] = round(report.init_duration_ms, 3)
        record: dict[str, Any] = {"requestId": report.request_id, "metrics": metrics, "status": report.status}
        record |= {"errorType": report.error_type} if report.error_type else {}
        return self._event(at, "report", "INFO" if report.status == "success" else "WARN", record)
