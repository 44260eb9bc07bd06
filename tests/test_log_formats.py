"""LoggingConfig honoured by the sandbox's Lambda service: real invocations of throwaway Python functions in
Text and JSON at several levels, read back with FilterLogEvents record by record.

What each record must be, and why, is in docs/sandbox.md ("Log formats"), with its sources: the Python
runtime interface client for the application records, the Telemetry API schema, the log-level filtering
page's event mapping and captured CloudWatch output for the platform records.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.extensions.lambda_logging import TEXT_WITH_LEVEL
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.conftest import Undo
from tests.packages import zip_files

PROBE = """\
import json, logging, os, time

logger = logging.getLogger("probe")


def handler(event, context):
    action = event.get("action", "")
    logger.debug("debug line")
    logger.info("info line %d", 1)
    logger.warning("warning line")
    logger.error("error line")
    print("printed line")
    print(json.dumps({"level": "debug", "msg": "printed debug"}))
    if action == "raise":
        raise ValueError("boom")
    if action == "exception":
        try:
            1 / 0
        except ZeroDivisionError:
            logger.exception("caught")
    if action == "extra":
        logger.info("with extra", extra={"order": 7})
    if action == "sleep":
        time.sleep(5)
    if action == "exit":
        os._exit(3)
    if action == "hog":
        hog = b"x" * (300 << 20)
    if action == "forge":
        print(event["forged"])
    return {"ok": True, "group": context.log_group_name}
"""
RAISE_LINE = PROBE.splitlines().index('        raise ValueError("boom")') + 1
EXCEPTION_LINE = PROBE.splitlines().index('            logger.exception("caught")') + 1
APP_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
PLATFORM_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ARN = f"arn:aws:lambda:{names.DEFAULT_REGION}::runtime:{hashlib.sha256(b'python:3.12.sandbox').hexdigest()}"
INIT_START = f"INIT_START Runtime Version: python:3.12.sandbox\tRuntime Version ARN: {ARN}\n"
Make = Callable[..., str]


@pytest.fixture
def make_function(sandbox: Sandbox, undo: Undo) -> Make:
    """A throwaway Python function (and its log group), deleted after the test."""
    operator = sandbox.session(names.OPERATOR)
    lambda_, logs = operator.client("lambda"), operator.client("logs")

    def make(logging_config: dict[str, str] | None = None, **settings: Any) -> str:
        name = f"log-formats-{uuid.uuid4().hex[:8]}"
        group = (logging_config or {}).get("LogGroup", f"/aws/lambda/{name}")
        logs.create_log_group(logGroupName=group)
        undo(lambda: logs.delete_log_group(logGroupName=group))
        files = settings.pop("files", {"probe.py": PROBE})
        lambda_.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=sandbox.world.role_arn,
            Handler=settings.pop("handler", "probe.handler"),
            Code={"ZipFile": zip_files(files)},
            **{"Timeout": 3, "MemorySize": 128} | settings,
            **({"LoggingConfig": logging_config} if logging_config else {}),
        )
        undo(lambda: lambda_.delete_function(FunctionName=name))
        return name

    return make


def _messages(sandbox: Sandbox, group: str) -> list[str]:
    logs = sandbox.session(names.OPERATOR).client("logs")
    pages = logs.get_paginator("filter_log_events").paginate(logGroupName=group)
    return [event["message"] for page in pages for event in page["events"]]


def _stream(sandbox: Sandbox, group: str) -> str:
    streams = sandbox.session(names.OPERATOR).client("logs").describe_log_streams(logGroupName=group)
    (stream,) = streams["logStreams"]
    return str(stream["logStreamName"])


def _read(sandbox: Sandbox, function: str, *invocations: Invocation) -> list[str]:
    """The group's messages, which must be exactly what the invocations wrote, in order."""
    messages = _messages(sandbox, f"/aws/lambda/{function}")
    assert messages == [line for invocation in invocations for line in invocation.log_lines]
    return messages


def _platform(message: str) -> tuple[str, dict[str, Any]]:
    """A platform event's type and record, after checking its envelope: exactly time, type, record."""
    event = json.loads(message)
    assert list(event) == ["time", "type", "record"]
    assert PLATFORM_STAMP.fullmatch(event["time"])
    assert not message.endswith("\n")
    return event["type"], event["record"]


def _app(message: str, keys: list[str]) -> dict[str, Any]:
    """An application record as the Python runtime writes it: these keys, in this order, ', '/': '."""
    document: dict[str, Any] = json.loads(message)
    assert list(document) == keys
    assert message == json.dumps(document, ensure_ascii=False) + ("\n" if "level" in document else "")
    assert APP_STAMP.fullmatch(document["timestamp"])
    return document


LOG_KEYS = ["timestamp", "level", "message", "logger", "requestId"]


def _log(message: str, level: str, text: str, request_id: str) -> None:
    document = _app(message, LOG_KEYS)
    assert {k: document[k] for k in LOG_KEYS[1:]} == {
        "level": level,
        "message": text,
        "logger": "probe",
        "requestId": request_id,
    }


def _metrics(record: dict[str, Any], invocation: Invocation, cold: bool) -> None:
    """The report's figures are the invocation's measured ones."""
    expected = {
        "durationMs": round(invocation.duration_ms, 3),
        "billedDurationMs": max(1, int(invocation.duration_ms + 0.999)),
        "memorySizeMB": 128,
        "maxMemoryUsedMB": invocation.max_memory_mb,
    }
    if cold:
        assert invocation.init_duration_ms is not None
        expected["initDurationMs"] = round(invocation.init_duration_ms, 3)
    assert record["metrics"] == expected
    assert 0 < invocation.duration_ms < 3000
    assert 5 < invocation.max_memory_mb < 128


def _init_start(record: dict[str, Any], function: str, stream: str) -> None:
    assert record == {
        "initializationType": "on-demand",
        "phase": "init",
        "runtimeVersion": "python:3.12.sandbox",
        "runtimeVersionArn": ARN,
        "functionName": function,
        "functionVersion": "$LATEST",
        "instanceId": stream,
        "instanceMaxMemory": 128 * 1024 * 1024,
    }


def test_json_at_info_writes_init_start_start_the_records_at_info_and_above_and_the_report(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function({"LogFormat": "JSON"})

    invocation = runtime.invoke(function, {})

    assert invocation.status == "succeeded", invocation.error
    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    assert len(lines) == 7
    assert _platform(lines[0])[0] == "platform.initStart"
    _init_start(_platform(lines[0])[1], function, _stream(sandbox, f"/aws/lambda/{function}"))
    assert _platform(lines[1]) == ("platform.start", {"requestId": rid, "version": "$LATEST"})
    _log(lines[2], "INFO", "info line 1", rid)
    _log(lines[3], "WARNING", "warning line", rid)
    _log(lines[4], "ERROR", "error line", rid)
    assert lines[5] == "printed line\n"  # print stays plain text; the JSON one at debug is dropped
    kind, report = _platform(lines[6])
    assert kind == "platform.report"
    assert list(report) == ["requestId", "metrics", "status"]
    assert (report["requestId"], report["status"]) == (rid, "success")
    _metrics(report, invocation, cold=True)


def test_json_at_debug_adds_the_runtime_done_and_init_records_and_every_application_line(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function({"LogFormat": "JSON", "ApplicationLogLevel": "DEBUG", "SystemLogLevel": "DEBUG"})

    invocation = runtime.invoke(function, {})

    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    kinds = [_platform(line)[0] if line.startswith('{"time"') else None for line in lines]
    assert kinds == [
        "platform.initStart",
        "platform.initRuntimeDone",
        "platform.initReport",
        "platform.start",
        None,
        None,
        None,
        None,
        None,
        None,
        "platform.runtimeDone",
        "platform.report",
    ]
    success = {"initializationType": "on-demand", "phase": "init", "status": "success"}
    assert _platform(lines[1])[1] == success
    assert invocation.init_duration_ms is not None
    init_metrics = {"durationMs": round(invocation.init_duration_ms, 3)}
    assert _platform(lines[2])[1] == success | {"metrics": init_metrics}
    _log(lines[4], "DEBUG", "debug line", rid)
    _log(lines[5], "INFO", "info line 1", rid)
    assert lines[8:10] == ["printed line\n", '{"level": "debug", "msg": "printed debug"}\n']
    done = _platform(lines[10])[1]
    assert done == {
        "requestId": rid,
        "status": "success",
        "metrics": {
            "durationMs": round(invocation.duration_ms, 3),
            "producedBytes": done["metrics"]["producedBytes"],
        },
    }
    assert done["metrics"]["producedBytes"] == len(json.dumps(invocation.result).encode())


@pytest.mark.parametrize(
    ("application", "system", "expected"),
    [
        ("WARN", "WARN", ["warning line", "error line"]),
        ("ERROR", "INFO", ["platform.initStart", "platform.start", "error line", "platform.report"]),
        ("FATAL", "WARN", []),
    ],
)
def test_levels_drop_exactly_the_records_below_them(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    make_function: Make,
    application: str,
    system: str,
    expected: list[str],
) -> None:
    config = {"LogFormat": "JSON", "ApplicationLogLevel": application, "SystemLogLevel": system}
    function = make_function(config)

    invocation = runtime.invoke(function, {})

    assert invocation.status == "succeeded", invocation.error
    lines = _read(sandbox, function, invocation)
    seen = [
        _platform(line)[0] if line.startswith('{"time"') else json.loads(line)["message"] for line in lines
    ]
    assert seen == expected


def test_text_is_unchanged_by_levels_and_starts_with_init_start(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function()

    invocation = runtime.invoke(function, {})

    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    assert lines[0] == INIT_START
    assert lines[1] == f"START RequestId: {rid} Version: $LATEST\n"
    warning, error = (re.fullmatch(rf"\[(\w+)\]\t(\S+)\t{rid}\t(.*)\n", line) for line in lines[2:4])
    assert warning is not None
    assert error is not None
    assert (warning[1], warning[3], error[1], error[3]) == ("WARNING", "warning line", "ERROR", "error line")
    assert lines[4:7] == [
        "printed line\n",
        '{"level": "debug", "msg": "printed debug"}\n',
        f"END RequestId: {rid}\n",
    ]
    assert invocation.init_duration_ms is not None
    assert lines[7] == (
        f"REPORT RequestId: {rid}\tDuration: {invocation.duration_ms:.2f} ms\t"
        f"Billed Duration: {max(1, int(invocation.duration_ms + 0.999))} ms\tMemory Size: 128 MB\t"
        f"Max Memory Used: {invocation.max_memory_mb} MB\t"
        f"Init Duration: {invocation.init_duration_ms:.2f} ms\n"
    )
    assert len(lines) == 8


def test_json_error_records_are_the_python_runtimes(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function({"LogFormat": "JSON", "ApplicationLogLevel": "ERROR", "SystemLogLevel": "WARN"})

    caught = runtime.invoke(function, {"action": "exception"})
    raised = runtime.invoke(function, {"action": "raise"})

    assert (caught.status, raised.status) == ("succeeded", "failed")
    lines = _read(sandbox, function, caught, raised)
    assert len(lines) == 4  # error line and caught; error line and the unhandled error's record
    exception = _app(
        lines[1],
        [
            "timestamp",
            "level",
            "message",
            "logger",
            "stackTrace",
            "errorType",
            "errorMessage",
            "requestId",
            "location",
        ],
    )
    assert {k: v for k, v in exception.items() if k not in ("timestamp", "stackTrace", "location")} == {
        "level": "ERROR",
        "message": "caught",
        "logger": "probe",
        "errorType": "ZeroDivisionError",
        "errorMessage": "division by zero",
        "requestId": caught.request_id,
    }
    frame = rf'  File "/\S+/task/probe\.py", line {EXCEPTION_LINE - 2}, in handler\n    1 / 0\n(    [~^]+\n)?'
    assert re.fullmatch(frame, "".join(exception["stackTrace"]))
    assert re.fullmatch(rf"/\S+/task/probe\.py:handler:{EXCEPTION_LINE}", exception["location"])
    _log(lines[2], "ERROR", "error line", raised.request_id)
    record = _app(
        lines[3], ["timestamp", "log_level", "errorMessage", "errorType", "requestId", "stackTrace"]
    )
    assert not lines[3].endswith("\n")
    assert {k: record[k] for k in ("log_level", "errorMessage", "errorType", "requestId")} == {
        "log_level": "ERROR",
        "errorMessage": "boom",
        "errorType": "ValueError",
        "requestId": raised.request_id,
    }
    (raised_at,) = record["stackTrace"]
    frame = rf'  File "/\S+/task/probe\.py", line {RAISE_LINE}, in handler\n    raise ValueError\("boom"\)\n'
    assert re.fullmatch(frame, raised_at)


def test_extra_fields_join_the_json_record(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function({"LogFormat": "JSON", "SystemLogLevel": "WARN"})

    invocation = runtime.invoke(function, {"action": "extra"})

    lines = _read(sandbox, function, invocation)
    document = _app(lines[4], [*LOG_KEYS, "order"])
    assert (document["message"], document["order"]) == ("with extra", 7)


@pytest.mark.parametrize("log_format", ["Text", "JSON"])
def test_a_timeout_in_either_format(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make, log_format: str
) -> None:
    config = {"LogFormat": log_format} | (
        {"ApplicationLogLevel": "FATAL", "SystemLogLevel": "WARN"} if log_format == "JSON" else {}
    )
    function = make_function(config, Timeout=1)

    invocation = runtime.invoke(function, {"action": "sleep"})

    assert invocation.status == "timed_out"
    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    if log_format == "Text":
        assert re.fullmatch(
            rf"{PLATFORM_STAMP.pattern} {rid} Task timed out after 1\.00 seconds\n", lines[-3]
        )
        assert lines[-2] == f"END RequestId: {rid}\n"
        assert lines[-1].startswith(f"REPORT RequestId: {rid}\tDuration: {invocation.duration_ms:.2f} ms\t")
        assert lines[-1].endswith("\tStatus: timeout\n")
        return
    # SystemLogLevel WARN keeps the records of an invocation that did not succeed, and only those.
    assert len(lines) == 2
    done, report = (_platform(line) for line in lines)
    assert done == (
        "platform.runtimeDone",
        {
            "requestId": rid,
            "status": "timeout",
            "metrics": {"durationMs": round(invocation.duration_ms, 3), "producedBytes": 0},
        },
    )
    assert report[0] == "platform.report"
    assert list(report[1]) == ["requestId", "metrics", "status"]
    assert report[1]["status"] == "timeout"
    assert 1000 <= invocation.duration_ms < 1500


@pytest.mark.parametrize(
    ("action", "status", "error_type", "exited"),
    [
        ("exit", "failed", "Runtime.ExitError", "exit status 3"),
        ("hog", "out_of_memory", "Runtime.OutOfMemory", "signal: killed"),
    ],
)
@pytest.mark.parametrize("log_format", ["Text", "JSON"])
def test_a_runtime_exit_in_either_format(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    make_function: Make,
    log_format: str,
    action: str,
    status: str,
    error_type: str,
    exited: str,
) -> None:
    function = make_function({"LogFormat": log_format})

    invocation = runtime.invoke(function, {"action": action})

    assert invocation.status == status
    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    if log_format == "Text":
        assert lines[-3] == f"END RequestId: {rid}\n"
        assert lines[-2].endswith(f"\tStatus: error\tError Type: {error_type}\n")
        assert (
            lines[-1] == f"RequestId: {rid} Error: Runtime exited with error: {exited}\nRuntime.ExitError\n"
        )
        return
    done, report = (_platform(line) for line in lines[-2:])
    assert done[0] == "platform.runtimeDone"
    assert done[1] == {
        "requestId": rid,
        "status": "error",
        "metrics": {"durationMs": round(invocation.duration_ms, 3), "producedBytes": 0},
        "errorType": error_type,
    }
    assert report[0] == "platform.report"
    assert list(report[1]) == ["requestId", "metrics", "status", "errorType"]
    assert (report[1]["status"], report[1]["errorType"]) == ("error", error_type)


BROKEN = {"broken.py": "import not_there\n\ndef handler(event, context):\n    return 1\n"}
IMPORT_ERROR = "Unable to import module 'broken': No module named 'not_there'"


def test_a_failed_init_in_text_is_reported_then_retried_in_the_invoke_phase(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    function = make_function(files=BROKEN, handler="broken.handler")

    first, second = runtime.invoke(function, {}), runtime.invoke(function, {})

    assert (first.status, first.error) == ("failed", f"Runtime.ImportModuleError: {IMPORT_ERROR}")
    lines = _read(sandbox, function, first, second)
    record = f"[ERROR] Runtime.ImportModuleError: {IMPORT_ERROR}\nTraceback (most recent call last):\n"
    init_report = (
        r"INIT_REPORT Init Duration: (\d+\.\d\d) ms\tPhase: {}\tStatus: error\t"
        r"Error Type: Runtime.ImportModuleError\n"
    )
    retried = [
        record,
        init_report.format("invoke"),
    ]
    assert lines[0] == INIT_START
    assert lines[1] == record
    assert re.fullmatch(init_report.format("init"), lines[2])
    for invocation, at in ((first, 3), (second, 8)):
        rid = invocation.request_id
        assert lines[at] == retried[0]
        phase = re.fullmatch(retried[1], lines[at + 1])
        assert phase is not None
        assert phase[1] == f"{invocation.duration_ms:.2f}"  # the retried init's measured time
        assert lines[at + 2 : at + 5] == [
            f"START RequestId: {rid} Version: $LATEST\n",
            f"END RequestId: {rid}\n",
            f"REPORT RequestId: {rid}\tDuration: {invocation.duration_ms:.2f} ms\t"
            f"Billed Duration: {max(1, int(invocation.duration_ms + 0.999))} ms\tMemory Size: 128 MB\t"
            f"Max Memory Used: {invocation.max_memory_mb} MB\tStatus: error\t"
            "Error Type: Runtime.ImportModuleError\n",
        ]
    assert len(lines) == 8 + 5  # the second invocation has no INIT_START: its environment was not new


def test_a_failed_init_in_json(sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make) -> None:
    function = make_function({"LogFormat": "JSON"}, files=BROKEN, handler="broken.handler")

    invocation = runtime.invoke(function, {})

    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    kinds = [_platform(line)[0] if line.startswith('{"time"') else "record" for line in lines]
    assert kinds == [
        "platform.initStart",
        "record",
        "platform.initRuntimeDone",
        "platform.initReport",
        "record",
        "platform.initRuntimeDone",
        "platform.initReport",
        "platform.start",
        "platform.runtimeDone",
        "platform.report",
    ]
    for at in (1, 4):
        record = _app(
            lines[at], ["timestamp", "log_level", "errorMessage", "errorType", "requestId", "stackTrace"]
        )
        assert {k: v for k, v in record.items() if k != "timestamp"} == {
            "log_level": "ERROR",
            "errorMessage": IMPORT_ERROR,
            "errorType": "Runtime.ImportModuleError",
            "requestId": "",
            "stackTrace": [],
        }
    for at, phase in ((2, "init"), (5, "invoke")):
        head = {
            "initializationType": "on-demand",
            "phase": phase,
            "status": "error",
            "errorType": "Runtime.ImportModuleError",
        }
        assert _platform(lines[at])[1] == head
        report = _platform(lines[at + 1])[1]
        assert report == head | {"metrics": {"durationMs": report["metrics"]["durationMs"]}}
        assert 0 < report["metrics"]["durationMs"] < 10_000
    assert _platform(lines[6])[1]["metrics"]["durationMs"] == round(invocation.duration_ms, 3)
    assert _platform(lines[9])[1] == {
        "requestId": rid,
        "metrics": {
            "durationMs": round(invocation.duration_ms, 3),
            "billedDurationMs": max(1, int(invocation.duration_ms + 0.999)),
            "memorySizeMB": 128,
            "maxMemoryUsedMB": invocation.max_memory_mb,
        },
        "status": "error",
        "errorType": "Runtime.ImportModuleError",
    }


def test_an_init_error_the_platform_does_not_recognise_is_runtime_unknown(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    files = {
        "settings.py": "import os\nBUCKET = os.environ['BUCKET']\n\n"
        "def handler(event, context):\n    return 1\n"
    }
    function = make_function(files=files, handler="settings.handler")

    invocation = runtime.invoke(function, {})

    assert (invocation.error_type, invocation.error) == ("KeyError", "KeyError: 'BUCKET'")
    lines = _read(sandbox, function, invocation)
    assert lines[1].startswith("[ERROR] KeyError: 'BUCKET'\nTraceback (most recent call last):\n")
    assert lines[2].endswith("\tPhase: init\tStatus: error\tError Type: Runtime.Unknown\n")
    assert lines[-1].endswith("\tStatus: error\tError Type: Runtime.Unknown\n")


def test_a_custom_log_group_gets_every_record_and_the_default_group_none(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    group = f"/custom/log-formats/{uuid.uuid4().hex[:8]}"
    function = make_function({"LogFormat": "JSON", "LogGroup": group})

    invocation = runtime.invoke(function, {})

    assert invocation.result == {"ok": True, "group": group}
    assert _messages(sandbox, group) == invocation.log_lines
    assert [_platform(m)[0] for m in invocation.log_lines if m.startswith('{"time"')] == [
        "platform.initStart",
        "platform.start",
        "platform.report",
    ]
    logs = sandbox.session(names.OPERATOR).client("logs")
    assert logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{function}")["logGroups"] == []


def test_a_printed_platform_record_stays_where_the_functions_output_goes(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    """A function can print a line shaped like a platform record; the real ones are told apart by their
    position: platform.start before anything of the invocation, platform.report the last record of it."""
    function = make_function({"LogFormat": "JSON", "SystemLogLevel": "INFO"})
    forged = json.dumps(
        {
            "time": "2024-01-01T00:00:00.000Z",
            "type": "platform.report",
            "record": {
                "requestId": "forged",
                "metrics": {"durationMs": 1, "maxMemoryUsedMB": 1},
                "status": "success",
            },
        },
        separators=(",", ":"),
    )

    invocation = runtime.invoke(function, {"action": "forge", "forged": forged})

    lines = _read(sandbox, function, invocation)
    start = lines.index(
        next(m for m in lines if m.startswith('{"time"') and _platform(m)[0] == "platform.start")
    )
    assert lines[start + 1 : -1].count(forged + "\n") == 1  # printed: plain text, where the output goes
    assert _platform(lines[-1])[1]["requestId"] == invocation.request_id  # the real report comes last


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        (
            {"LogFormat": "Text", "ApplicationLogLevel": "INFO"},
            "InvalidParameterValueException",
            TEXT_WITH_LEVEL,
        ),
        ({"SystemLogLevel": "WARN"}, "InvalidParameterValueException", TEXT_WITH_LEVEL),
        (
            {"LogFormat": "YAML"},
            "ValidationException",
            "1 validation error detected: Value 'YAML' at 'loggingConfig.logFormat' failed to satisfy "
            "constraint: Member must satisfy enum value set: [JSON, Text]",
        ),
        (
            {"LogFormat": "JSON", "SystemLogLevel": "ERROR", "ApplicationLogLevel": "NOTICE"},
            "ValidationException",
            "2 validation errors detected: Value 'NOTICE' at 'loggingConfig.applicationLogLevel' failed to "
            "satisfy constraint: Member must satisfy enum value set: [TRACE, DEBUG, INFO, WARN, ERROR, "
            "FATAL]; Value 'ERROR' at 'loggingConfig.systemLogLevel' failed to satisfy constraint: Member "
            "must satisfy enum value set: [DEBUG, INFO, WARN]",
        ),
        (
            {"LogGroup": "bad group"},
            "ValidationException",
            "1 validation error detected: Value 'bad group' at 'loggingConfig.logGroup' failed to satisfy "
            "constraint: Member must satisfy regular expression pattern: [\\.\\-_/#A-Za-z0-9]+",
        ),
    ],
)
def test_lambda_refuses_what_lambda_refuses(
    sandbox: Sandbox, make_function: Make, config: dict[str, str], code: str, message: str
) -> None:
    with pytest.raises(ClientError) as refused:
        make_function(config)

    assert refused.value.response["Error"] == {"Code": code, "Message": message}


def test_updates_merge_default_the_levels_and_refuse_a_level_with_text(
    sandbox: Sandbox, make_function: Make
) -> None:
    function = make_function({"LogFormat": "JSON", "SystemLogLevel": "WARN"})
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    group = f"/aws/lambda/{function}"

    def logging_config() -> dict[str, str]:
        config: dict[str, str] = lambda_.get_function_configuration(FunctionName=function)["LoggingConfig"]
        return config

    assert logging_config() == {
        "ApplicationLogLevel": "INFO",
        "SystemLogLevel": "WARN",
        "LogFormat": "JSON",
        "LogGroup": group,
    }
    lambda_.update_function_configuration(FunctionName=function, LoggingConfig={"LogFormat": "Text"})
    assert logging_config() == {"LogFormat": "Text", "LogGroup": group}
    with pytest.raises(ClientError) as refused:
        lambda_.update_function_configuration(
            FunctionName=function,
            Description="must not stick",
            LoggingConfig={"ApplicationLogLevel": "DEBUG"},
        )
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    configuration = lambda_.get_function_configuration(FunctionName=function)
    assert configuration["LoggingConfig"] == {"LogFormat": "Text", "LogGroup": group}
    assert configuration.get("Description") != "must not stick"


def test_a_runtime_that_exits_during_init_in_text(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, make_function: Make
) -> None:
    files = {"quits.py": "import os\nos._exit(2)\n\ndef handler(event, context):\n    return 1\n"}
    function = make_function(files=files, handler="quits.handler")

    invocation = runtime.invoke(function, {})

    rid = invocation.request_id
    lines = _read(sandbox, function, invocation)
    init_report = (
        r"INIT_REPORT Init Duration: \d+\.\d\d ms\tPhase: {}\tStatus: error\tError Type: Runtime.ExitError\n"
    )
    assert lines[0] == INIT_START
    assert re.fullmatch(init_report.format("init"), lines[1])
    assert re.fullmatch(init_report.format("invoke"), lines[2])
    assert lines[3:6] == [
        f"START RequestId: {rid} Version: $LATEST\n",
        f"RequestId: {rid} Error: Runtime exited with error: exit status 2\nRuntime.ExitError\n",
        f"END RequestId: {rid}\n",
    ]
    assert lines[6].endswith("\tStatus: error\tError Type: Runtime.ExitError\n")
    assert len(lines) == 7
