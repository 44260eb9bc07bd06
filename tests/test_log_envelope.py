"""The logs tool's invocation envelope on recorded and rendered log events of every runtime and both log
formats (tests/samples/lambda_logs.py names each source), on forged platform records, and in the tool's
answer (runtime, log format, log-level gaps, error detail computed before truncation)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from mcp_server.aws import TargetClients
from mcp_server.contract import GetRecentLogsArgs, LogsResponse
from mcp_server.contract.logs import ErrorDetail
from mcp_server.reads import Reads
from mcp_server.settings import ServerSettings
from mcp_server.targets import Target
from mcp_server.tools import metrics
from mcp_server.tools.context import ToolContext
from mcp_server.tools.envelope import invocations, place, report_figures, shape_of
from mcp_server.tools.error_detail import own_frame
from mcp_server.tools.log_shapes import Figures
from mcp_server.tools.logs import ERROR_LIKE, ERROR_TERMS, recent_logs
from tests.samples import lambda_logs as samples
from tests.samples.lambda_logs import JSON_REQUEST, NODE_REQUEST, STREAM, Sample

PY_REQUEST = "8f507cfc-xmpl-4697-b07a-ac58fc914c95"
WAZUH_REQUEST = "2a5345ff-6116-422d-a858-713b9216cc86"
OLD_NODE_REQUEST = "7a111162-fe11-4eee-a5f8-0651a0691b8f"
FORGED = samples.FORGED_REQUEST


def _kinds(sample: Sample | tuple[str, ...]) -> list[tuple[str, str | None]]:
    events = (sample if isinstance(sample, Sample) else Sample("test", sample)).events()
    return [(where.kind, where.request_id) for where in place(events)]


def _errors(sample: Sample | tuple[str, ...]) -> dict[int, ErrorDetail]:
    events = (sample if isinstance(sample, Sample) else Sample("test", sample)).events()
    return {n: where.error for n, where in enumerate(place(events)) if where.error is not None}


def _invocations(sample: Sample | tuple[str, ...]) -> list[dict[str, Any]]:
    events = (sample if isinstance(sample, Sample) else Sample("test", sample)).events()
    return invocations(events, place(events))


def _report(request_id: str, **fields: Any) -> dict[str, Any]:
    """An invocation as ``invocations`` lists it: no figures, no error, unless given."""
    base = {
        "request_id": request_id,
        "log_stream": STREAM,
        "started": None,
        "duration_ms": None,
        "memory_size_mb": None,
        "max_memory_used_mb": None,
        "init_duration_ms": None,
        "outcome": "no_error_seen",
        "status": None,
        "error_type": None,
    }
    return base | fields


def _started(n: int) -> str:
    return datetime.fromtimestamp((samples.START_MS + n) / 1000, UTC).isoformat()


# ------------------------------------------------------------------------------------------- text format


def test_python_text_success() -> None:
    assert _kinds(samples.PYTHON_TEXT_SUCCESS) == [
        ("start", PY_REQUEST),
        *[("function", PY_REQUEST)] * 4,
        ("end", PY_REQUEST),
        ("report", PY_REQUEST),
    ]
    assert _errors(samples.PYTHON_TEXT_SUCCESS) == {}
    assert _invocations(samples.PYTHON_TEXT_SUCCESS) == [
        _report(
            PY_REQUEST,
            started=_started(0),
            duration_ms=15.74,
            memory_size_mb=128,
            max_memory_used_mb=56,
            init_duration_ms=130.49,
        )
    ]


def test_node_text_success_keeps_each_console_line_s_request_id() -> None:
    assert _kinds(samples.NODE_TEXT_SUCCESS) == [
        ("start", NODE_REQUEST),
        *[("function", NODE_REQUEST)] * 3,
        ("end", NODE_REQUEST),
        ("report", NODE_REQUEST),
    ]
    assert _invocations(samples.NODE_TEXT_SUCCESS) == [
        _report(
            NODE_REQUEST,
            started=_started(0),
            duration_ms=128.83,
            memory_size_mb=128,
            max_memory_used_mb=74,
            init_duration_ms=166.62,
        )
    ]
    assert report_figures(samples.NODE_REPORT) == Figures(
        duration_ms=128.83,
        billed_duration_ms=200.0,
        memory_size_mb=128,
        max_memory_used_mb=74,
        init_duration_ms=166.62,
    )


def test_python_text_code_error_is_the_record_not_the_function_s_own_error_log() -> None:
    assert _kinds(samples.PYTHON_TEXT_CODE_ERROR) == [
        ("start", WAZUH_REQUEST),
        ("function", WAZUH_REQUEST),  # the function's logging.error, with its AccessDenied
        ("function", WAZUH_REQUEST),  # LAMBDA_WARNING
        ("error_record", WAZUH_REQUEST),
    ]
    assert _errors(samples.PYTHON_TEXT_CODE_ERROR) == {
        3: ErrorDetail(
            type="IndexError", message="list index out of range", frame="/var/task/lambda_function.py:170"
        )
    }


def test_python_text_boto3_denial_names_code_operation_and_the_function_s_line() -> None:
    assert _kinds(samples.PYTHON_TEXT_BOTO3_DENIED) == [("error_record", None)]
    assert _errors(samples.PYTHON_TEXT_BOTO3_DENIED) == {
        0: ErrorDetail(
            type="ClientError",
            message="An error occurred (AccessDenied) when calling the GetObject operation: Access Denied",
            code="AccessDenied",
            operation="GetObject",
            frame="/var/task/parsing.py:180",  # the innermost frame outside botocore
        )
    }


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        (
            "type and message",
            ErrorDetail(type="FaultExceptionType", message="Fault exception msg", frame="eggs.py:42"),
        ),
        ("type, no message", ErrorDetail(type="FaultExceptionType")),
        ("message, no type", ErrorDetail(message="Fault exception msg")),
        ("neither", ErrorDetail(frame="eggs.py:42")),
        (
            "init import error",
            ErrorDetail(
                type="Runtime.ImportModuleError",
                message="Unable to import module 'handler': No module named 'handler'",
            ),
        ),
    ],
)
def test_python_error_record_variants(variant: str, expected: ErrorDetail) -> None:
    found = shape_of(samples.PYTHON_RECORD_VARIANTS[variant])
    assert (found.kind, found.request_id, found.error) == ("error_record", None, expected)


def test_init_phase_lines_belong_to_the_invocation_that_starts_next() -> None:
    assert _kinds(samples.INIT_ERROR_EXIT) == [
        ("function", "123"),
        ("init_error", "123"),
        ("function", "123"),
        ("init_error", "123"),
        ("start", "123"),
        ("runtime_exit", "123"),
        ("runtime_exit", "123"),  # the Runtime.ExitError line after the exit line
        ("end", "123"),
        ("report", "123"),
    ]
    assert _errors(samples.INIT_ERROR_EXIT) == {
        1: ErrorDetail(type="Runtime.ExitError"),
        3: ErrorDetail(type="Runtime.ExitError"),
    }
    assert _invocations(samples.INIT_ERROR_EXIT) == [
        _report(
            "123",
            started=_started(4),
            duration_ms=1687.96,
            memory_size_mb=128,
            max_memory_used_mb=16,
            outcome="init_error",
        )
    ]


def test_a_timeout_from_the_report_s_status_and_from_the_timeout_line() -> None:
    assert _invocations(samples.TIMEOUT_REPORT_STATUS) == [
        _report(
            "4725a167-21a7-5731-99c2-c3d0e3dfd770",
            duration_ms=180000.0,
            memory_size_mb=1280,
            max_memory_used_mb=1201,
            outcome="timeout",
            status="timeout",
        )
    ]
    request = "b47cde10-029a-11e6-b5d6-1f01b70b94b2"
    assert _kinds(samples.TIMEOUT_LINE) == [
        ("start", request),
        ("end", request),
        ("report", request),
        ("timeout", request),
    ]
    assert _invocations(samples.TIMEOUT_LINE) == [
        _report(
            request,
            started=_started(0),
            duration_ms=120000.64,
            memory_size_mb=128,
            max_memory_used_mb=23,
            outcome="timeout",
        )
    ]


def test_runtime_exits_in_both_wordings() -> None:
    assert _kinds(samples.PROCESS_EXITED) == [
        ("start", OLD_NODE_REQUEST),
        ("function", OLD_NODE_REQUEST),
        ("end", OLD_NODE_REQUEST),
        ("report", OLD_NODE_REQUEST),
        ("runtime_exit", OLD_NODE_REQUEST),
    ]
    assert [i["outcome"] for i in _invocations(samples.PROCESS_EXITED)] == ["runtime_exit"]
    request = samples.RUNTIME_EXIT_REQUEST
    assert _kinds(samples.RUNTIME_EXIT) == [
        ("start", request),
        ("runtime_exit", request),
        ("end", request),
        ("report", request),
    ]
    assert [(i["outcome"], i["max_memory_used_mb"]) for i in _invocations(samples.RUNTIME_EXIT)] == [
        ("runtime_exit", 128)
    ]


def test_node_sdk_v3_denial() -> None:
    assert _kinds(samples.NODE_TEXT_SDK_DENIED) == [
        ("start", NODE_REQUEST),
        ("error_record", NODE_REQUEST),
        ("end", NODE_REQUEST),
        ("report", NODE_REQUEST),
    ]
    assert _errors(samples.NODE_TEXT_SDK_DENIED) == {
        1: ErrorDetail(type="AccessDenied", message="Access Denied", code="AccessDenied")  # frames: all SDK
    }
    assert [i["outcome"] for i in _invocations(samples.NODE_TEXT_SDK_DENIED)] == ["error_record"]


def test_node_code_error_points_at_the_function_s_own_frame() -> None:
    (error,) = _errors(samples.NODE_TEXT_CODE_ERROR).values()
    assert error == ErrorDetail(
        type="Error", message=samples.OWN_CODE_ERROR["errorMessage"], frame="/var/task/executor.js:177"
    )


def test_node_init_error_keeps_no_request_id_until_an_invocation_starts() -> None:
    assert shape_of(samples.NODE_TEXT_INIT_ERROR.messages[0]).request_id is None  # "undefined"
    assert _kinds(samples.NODE_TEXT_INIT_ERROR) == [
        ("error_record", NODE_REQUEST),
        ("start", NODE_REQUEST),
        ("end", NODE_REQUEST),
        ("report", NODE_REQUEST),
    ]
    assert _errors(samples.NODE_TEXT_INIT_ERROR) == {
        0: ErrorDetail(type="Runtime.ImportModuleError", message="Error: Cannot find module 'lambda'")
    }


# ------------------------------------------------------------------------- other runtimes' terminal records


def _in_invocation(record: str, request: str = NODE_REQUEST) -> tuple[str, ...]:
    return (f"START RequestId: {request} Version: $LATEST", record, f"END RequestId: {request}")


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            samples.JAVA_TEXT_RECORD,
            ErrorDetail(
                type="java.lang.ArithmeticException", message="/ by zero", frame="HandlerDivide.java:28"
            ),
        ),
        (
            samples.JAVA_TEXT_SDK_RECORD,
            ErrorDetail(
                type="com.amazonaws.services.s3.model.AmazonS3Exception",
                message=samples.JAVA_SDK_MESSAGE,
                code="AccessDenied",
            ),
        ),
        (
            samples.DOTNET_TEXT_RECORD,
            ErrorDetail(type="System.ArithmeticException", message="Sorry, 2 + 2 = 5"),
        ),
        (
            samples.RUBY_RECORD,
            ErrorDetail(
                type="TypeError",
                message="no implicit conversion of String into Integer",
                frame="/var/task/function.rb:3",
            ),
        ),
        (samples.GO_RECORD, ErrorDetail(type="errorString", message="something went wrong!")),
        (
            samples.GO_SDK_V1_RECORD,
            ErrorDetail(
                type="requestFailure",
                message="AccessDenied: Access Denied\n\tstatus code: 403, request id: "
                "1CD22FBD05A07230, host id: "
                "0DgsO7WgSuZQMilmgZ0Vpq/Fvn5hw3/NN89E/6b89WcJjhJGvi0onhSD1YPXlX8Z76JGSZ9HArw=",
                code="AccessDenied",
            ),
        ),
        (
            samples.GO_SDK_V2_RECORD,
            ErrorDetail(
                type="OperationError",
                message=samples.GO_SDK_V2_MESSAGE,
                code="AccessDeniedException",
                operation="CreateLogGroup",
            ),
        ),
    ],
    ids=["java", "java-sdk-v1", "dotnet", "ruby", "go", "go-sdk-v1", "go-sdk-v2"],
)
def test_other_runtimes_terminal_records(record: str, expected: ErrorDetail) -> None:
    assert _kinds(_in_invocation(record)) == [
        ("start", NODE_REQUEST),
        ("error_record", NODE_REQUEST),
        ("end", NODE_REQUEST),
    ]
    assert _errors(_in_invocation(record)) == {1: expected}


def test_ruby_header_is_a_function_line_before_the_record() -> None:
    messages = (*_in_invocation(samples.RUBY_HEADER), samples.RUBY_RECORD)
    assert [kind for kind, _ in _kinds(messages)] == ["start", "function", "end", "error_record"]


@pytest.mark.parametrize(
    ("record", "request_id", "expected"),
    [
        (
            samples.JAVA_JSON_RECORD,
            NODE_REQUEST,
            ErrorDetail(
                type="java.lang.ArithmeticException", message="/ by zero", frame="HandlerDivide.java:28"
            ),
        ),
        (
            samples.GO_JSON_RECORD,
            NODE_REQUEST,
            ErrorDetail(type="errorString", message="something went wrong!"),
        ),
    ],
    ids=["java-json", "go-document-in-a-json-record"],
)
def test_error_records_inside_json_records(record: str, request_id: str, expected: ErrorDetail) -> None:
    found = shape_of(record)
    assert (found.kind, found.request_id, found.error) == ("error_record", request_id, expected)


# ------------------------------------------------------------------------------------------- JSON format


def _json_invocation(*records: str, status: str | None, error_type: str | None = None) -> tuple[str, ...]:
    return (
        samples.INIT_START,
        samples.PLATFORM_START,
        *records,
        samples.runtime_done(status or "success", error_type),
        samples.platform_report(status, error_type),
    )


JSON_FIGURES = {
    "duration_ms": 693.92,
    "memory_size_mb": 128,
    "max_memory_used_mb": 84,
    "init_duration_ms": 397.68,
}


def test_json_success() -> None:
    assert _kinds(samples.JSON_SUCCESS) == [
        ("platform", JSON_REQUEST),  # platform.initStart: the init phase of the invocation that follows
        ("start", JSON_REQUEST),
        ("function", "79b4f56e-95b1-4643-9700-2807f4e68189"),  # the record's own request id
        ("end", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    assert _invocations(samples.JSON_SUCCESS) == [_report(JSON_REQUEST, started=_started(1), **JSON_FIGURES)]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            samples.PYTHON_JSON_ERROR,
            ErrorDetail(type="IndexError", message="list index out of range", frame="/var/task/index.py:53"),
        ),
        (
            samples.PYTHON_JSON_BOTO3,
            ErrorDetail(
                type="ClientError",
                message="An error occurred (AccessDenied) when calling the GetObject operation: "
                "Access Denied",
                code="AccessDenied",
                operation="GetObject",
                frame="/var/task/lambda_function.py:52",
            ),
        ),
        (
            samples.NODE_JSON_ERROR,
            ErrorDetail(
                type="Error",
                message=samples.OWN_CODE_ERROR["errorMessage"],
                frame="/var/task/executor.js:177",
            ),
        ),
    ],
    ids=["python", "python-boto3", "nodejs"],
)
def test_json_unhandled_errors(record: str, expected: ErrorDetail) -> None:
    messages = _json_invocation(record, status="error")
    assert _kinds(messages) == [
        ("platform", JSON_REQUEST),
        ("start", JSON_REQUEST),
        ("error_record", JSON_REQUEST),
        ("end", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    assert _errors(messages) == {2: expected}
    assert _invocations(messages) == [
        _report(JSON_REQUEST, started=_started(1), outcome="error_record", status="error", **JSON_FIGURES)
    ]


def test_json_init_error() -> None:
    messages = (
        samples.INIT_START,
        samples.PYTHON_JSON_INIT_ERROR,
        samples.INIT_REPORT_ERROR,
        samples.PLATFORM_START,
        samples.runtime_done("error", "Runtime.ImportModuleError"),
        samples.platform_report("error", "Runtime.ImportModuleError"),
    )
    assert _kinds(messages) == [
        ("platform", JSON_REQUEST),
        ("error_record", JSON_REQUEST),
        ("init_error", JSON_REQUEST),
        ("start", JSON_REQUEST),
        ("end", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    assert _errors(messages) == {
        1: ErrorDetail(
            type="Runtime.ImportModuleError",
            message="Unable to import module 'handler': No module named 'handler'",
        ),
        2: ErrorDetail(type="Runtime.ImportModuleError"),
    }
    assert _invocations(messages) == [
        _report(
            JSON_REQUEST,
            started=_started(3),
            outcome="init_error",
            status="error",
            error_type="Runtime.ImportModuleError",
            **JSON_FIGURES,
        )
    ]


@pytest.mark.parametrize(
    ("status", "error_type", "outcome"),
    [
        ("timeout", None, "timeout"),
        ("error", "Runtime.ExitError", "runtime_exit"),
        ("failure", None, "no_error_seen"),
    ],
)
def test_json_report_status_decides_the_outcome(status: str, error_type: str | None, outcome: str) -> None:
    assert _invocations(_json_invocation(status=status, error_type=error_type)) == [
        _report(
            JSON_REQUEST,
            started=_started(1),
            outcome=outcome,
            status=status,
            error_type=error_type,
            **JSON_FIGURES,
        )
    ]


# -------------------------------------------------------------------------------------- forged records


def test_json_records_a_function_prints_inside_an_invocation_do_not_count() -> None:
    messages = _json_invocation(
        samples.FORGED_REPORT_OWN,  # its own request id, before the real report
        samples.FORGED_REPORT_OTHER,  # another request id
        samples.FORGED_START,
        samples.FORGED_INIT_REPORT,  # an init failure after the init phase
        status="success",
    )
    assert _kinds(messages) == [
        ("platform", JSON_REQUEST),
        ("start", JSON_REQUEST),
        *[("function", JSON_REQUEST)] * 4,
        ("end", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    assert _errors(messages) == {}
    assert _invocations(messages) == [
        _report(JSON_REQUEST, started=_started(1), status="success", **JSON_FIGURES)  # not 128 MB, not error
    ]


def test_a_handler_s_error_counts_though_the_report_states_success() -> None:
    """The platform reports ``success`` whenever the runtime answered, also with the handler's error (the
    runtime interface emulator's runtimeDone for a completed invoke), so the status cannot deny the record:
    a record the function prints in an invocation that succeeded is not told apart (documented)."""
    messages = _json_invocation(samples.PYTHON_JSON_BOTO3, status="success")
    kinds = _kinds(messages)
    assert kinds.count(("error_record", JSON_REQUEST)) == 1
    assert _invocations(messages)[0]["outcome"] == "error_record"


def test_a_start_forged_in_the_init_phase_does_not_take_the_invocation() -> None:
    without_report = (
        samples.INIT_START,
        samples.FORGED_START,
        samples.PLATFORM_START,
        samples.platform_report(None),
    )
    assert _kinds(without_report) == [
        ("platform", JSON_REQUEST),
        ("function", JSON_REQUEST),
        ("start", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    # With a report of its own printed inside the real invocation, the forged start counts (documented), but
    # the invocations cross and the real one, whose report comes last, keeps its start and its report.
    with_report = (
        samples.INIT_START,
        samples.FORGED_START,
        samples.PLATFORM_START,
        samples.FORGED_REPORT_OTHER,
        samples.platform_report(None),
    )
    assert _kinds(with_report) == [
        ("platform", FORGED),
        ("start", FORGED),
        ("start", JSON_REQUEST),
        ("function", JSON_REQUEST),
        ("report", JSON_REQUEST),
    ]
    assert [i["request_id"] for i in _invocations(with_report)] == [JSON_REQUEST]


def test_text_platform_lines_a_function_prints_do_not_count() -> None:
    messages = (
        samples.NODE_START,
        samples.FORGED_TEXT_REPORT,
        samples.FORGED_TEXT_START,
        samples.NODE_END,
        samples.NODE_REPORT,
    )
    assert _kinds(messages) == [
        ("start", NODE_REQUEST),
        ("function", NODE_REQUEST),
        ("function", NODE_REQUEST),
        ("end", NODE_REQUEST),
        ("report", NODE_REQUEST),
    ]
    assert [i["max_memory_used_mb"] for i in _invocations(messages)] == [74]


def test_only_an_invocation_s_last_error_record_counts() -> None:
    messages = _json_invocation(samples.PYTHON_JSON_BOTO3, samples.PYTHON_JSON_ERROR, status="error")
    assert [kind for kind, _ in _kinds(messages)][2:4] == ["function", "error_record"]
    assert [error.type for error in _errors(messages).values()] == ["IndexError"]


def test_a_report_printed_for_the_own_request_id_counts_when_the_real_one_is_missing() -> None:
    """Documented limit: with no real report after it (a SystemLogLevel above INFO drops them), nothing tells
    a forged report from a real one."""
    messages = (samples.PLATFORM_START, samples.FORGED_REPORT_OWN)
    assert _kinds(messages) == [("start", JSON_REQUEST), ("report", JSON_REQUEST)]


def test_a_stream_with_no_report_read_keeps_every_start() -> None:
    starts = (samples.FORGED_TEXT_START, samples.NODE_START)  # a read filtered on "START"
    assert _kinds(starts) == [("start", FORGED), ("start", NODE_REQUEST)]


# --------------------------------------------------------------------------------------------- frames


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (samples.SDK_V3_DENIED["stack"], None),
        (["    at processTicksAndRejections (node:internal/process/task_queues:95:5)"], None),
        (
            [
                "TypeError: x is not a function",
                "    at Runtime.handler (file:///var/task/index.mjs:12:5)",
                "    at Runtime.handleOnceNonStreaming (file:///var/runtime/index.mjs:1173:29)",
            ],
            "/var/task/index.mjs:12",
        ),
        (
            [
                ["/var/task/lambda_function.py", 52, "lambda_handler", "x"],
                ["/var/runtime/botocore/client.py", 316],
            ],
            "/var/task/lambda_function.py:52",
        ),
        (
            "\tat example.Handler.run(Handler.java:7)\n\tat java.base/jdk.internal.Foo(Foo.java:1)",
            "Handler.java:7",
        ),
        (
            "   at Amazon.Runtime.Internal.HttpErrorResponseExceptionHandler.Handle() in "
            "/src/Handler.cs:line 9\n"
            "   at MyFunction.Function.Handler(String input) in /src/Function.cs:line 12",
            "/src/Function.cs:12",
        ),
        (
            'Traceback (most recent call last):\n  File "/var/task/app.py", line 9, in handler\n'
            '    body = json.loads(event["body"])\n'
            '  File "/var/lang/lib/python3.12/json/__init__.py", line 346, in loads\n'
            '  File "/usr/local/lib/python3.11/json/decoder.py", line 337, in decode\n',
            "/var/task/app.py:9",
        ),
    ],
    ids=["sdk-only", "node-internal", "node-esm", "python-old-list", "java", "dotnet", "python-stdlib"],
)
def test_own_frame(stack: Any, expected: str | None) -> None:
    """Frames are read innermost first; Python's (and the old Python list of [file, line, ...]) are written
    outermost first and read backwards, so botocore's innermost frame is skipped for lambda_function.py:52."""
    assert own_frame(stack) == expected


# --------------------------------------------------------------------------------------------- the tool


@dataclass
class FakeLambda:
    configuration: dict[str, Any]

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"FunctionName": FunctionName} | self.configuration


@dataclass
class FakeLogs:
    events: list[dict[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def filter_log_events(self, **request: Any) -> dict[str, Any]:
        """The events in the request's time range (both ends inclusive), in one page."""
        self.calls.append(request)
        return {
            "events": [e for e in self.events if request["startTime"] <= e["timestamp"] <= request["endTime"]]
        }


NOW = datetime.fromtimestamp((samples.START_MS + 60_000) / 1000, UTC)


def _tool(
    events: list[dict[str, Any]],
    configuration: dict[str, Any],
    settings: ServerSettings | None = None,
    *,
    detail: bool = False,
) -> LogsResponse:
    settings = settings or ServerSettings()
    target = Target("fn", None, "ca-central-1", None)
    clients = TargetClients(
        target, FakeLambda(configuration), FakeLogs(events), None, None, None, None, None, None, None
    )
    reads = Reads(ThreadPoolExecutor(2), settings.mcp_tool_deadline_seconds, target.region)
    args = GetRecentLogsArgs(lambda_name="fn", minutes=5, detail=detail)
    return recent_logs(ToolContext(clients, reads, settings), args, now=NOW)


def test_platform_lines_are_summarised_unless_detail_asks_for_them() -> None:
    """START, END and REPORT say nothing the invocation report does not: left out by default and counted,
    shown with ``detail``; so is the log stream of a line its invocation's report names. The invocation
    reports and every other line are the same either way."""
    events, configuration = samples.NODE_TEXT_SUCCESS.events(), {"Runtime": "nodejs22.x"}
    short, full = _tool(events, configuration), _tool(events, configuration, detail=True)
    platform = [e for e in full.events if e.kind in ("start", "end", "report", "platform")]
    assert {e.kind for e in platform} >= {"start", "end", "report"}
    assert short.summarised_events == len(platform)
    others = [e for e in full.events if e not in platform]
    assert [(e.log_stream, bool(e.request_id)) for e in others] == [(STREAM, True)] * 3
    assert short.events == [e.model_copy(update={"log_stream": None}) for e in others]
    assert {i.log_stream for i in short.invocations} == {STREAM}
    assert (short.matched_events, full.matched_events) == (len(full.events), len(full.events))
    assert short.invocations == full.invocations
    assert full.summarised_events == 0


def test_the_answer_says_which_runtime_and_format_it_read_and_carries_each_record_s_detail() -> None:
    configuration = {
        "Runtime": "python3.12",
        "LoggingConfig": {"LogFormat": "JSON", "LogGroup": "/aws/lambda/fn"},
    }
    answer = _tool(
        Sample("t", _json_invocation(samples.PYTHON_JSON_BOTO3, status="error")).events(), configuration
    )
    assert (answer.runtime, answer.log_format, answer.gaps) == ("python3.12", "JSON", [])
    assert [(e.kind, e.error) for e in answer.events if e.error] == [
        ("error_record", _errors(_json_invocation(samples.PYTHON_JSON_BOTO3, status="error"))[2])
    ]
    assert [(i.outcome, i.status) for i in answer.invocations] == [("error_record", "error")]


def test_text_is_the_format_when_the_configuration_names_none() -> None:
    answer = _tool(samples.NODE_TEXT_SUCCESS.events(), {"Runtime": "nodejs22.x"})
    assert (answer.runtime, answer.log_format) == ("nodejs22.x", "Text")


LEVEL_GAPS = {  # what each log level that hides records leaves out, as the gap says it
    "SystemLogLevel WARN": "with LoggingConfig.SystemLogLevel WARN Lambda writes only platform records at "
    "WARN or above: the start records and the reports of successful invocations (INFO) are not written, so "
    "invocations, durations and memory figures are missing from the logs (read them from "
    "get_function_metrics)",
    "ApplicationLogLevel FATAL": "with LoggingConfig.ApplicationLogLevel FATAL Lambda drops application "
    "records below FATAL, and the runtimes write their record of an unhandled error at ERROR: error records "
    "and their detail are missing from the logs",
}


@pytest.mark.parametrize(
    ("levels", "sources"),
    [
        ({"SystemLogLevel": "INFO", "ApplicationLogLevel": "ERROR"}, []),
        ({"SystemLogLevel": "WARN", "ApplicationLogLevel": "INFO"}, ["SystemLogLevel WARN"]),
        ({"SystemLogLevel": "DEBUG", "ApplicationLogLevel": "FATAL"}, ["ApplicationLogLevel FATAL"]),
    ],
)
def test_log_levels_that_hide_records_are_gaps(levels: dict[str, str], sources: list[str]) -> None:
    configuration = {"Runtime": "nodejs22.x", "LoggingConfig": {"LogFormat": "JSON", **levels}}
    answer = _tool([], configuration)
    assert [(gap.source, gap.error_code, gap.meaning) for gap in answer.gaps] == [
        (f"LoggingConfig of function fn: {source}", None, LEVEL_GAPS[source]) for source in sources
    ]


def test_levels_do_not_apply_to_the_text_format() -> None:
    configuration = {"LoggingConfig": {"LogFormat": "Text", "SystemLogLevel": "WARN"}}
    assert _tool([], configuration).gaps == []


def test_the_error_detail_is_read_before_the_message_is_cut() -> None:
    """A stack longer than the message cap: the own frame sits past the cut, and the answer still has it."""
    stack = [
        "Error: boom",
        *[f"    at f{n} (/var/task/node_modules/lib/x.js:{n}:1)" for n in range(300)],
        "    at handler (/var/task/index.js:42:7)",
    ]
    error = {**samples.OWN_CODE_ERROR, "stack": stack}
    record = samples.NODE_TEXT_CODE_ERROR.messages[1].split("\tInvoke Error \t")[0] + "\tInvoke Error \t"
    message = record + json.dumps(error, separators=(",", ":"))
    settings = ServerSettings().model_copy(update={"logs_message_cap": 1024})
    answer = _tool(Sample("t", (samples.NODE_START, message)).events(), {}, settings)
    (event,) = [e for e in answer.events if e.kind == "error_record"]
    assert answer.truncated_messages == 1
    assert event.error is not None
    assert event.error.frame == "/var/task/index.js:42"
    assert "index.js:42" not in event.message


# ----------------------------------------------------------------------- error lookups and peak memory


ERROR_SAMPLES = [
    samples.PYTHON_JSON_ERROR,
    samples.PYTHON_JSON_BOTO3,
    samples.NODE_JSON_ERROR,
    samples.JAVA_JSON_RECORD,
    samples.INIT_REPORT_ERROR,
    samples.platform_report("error", "Runtime.ExitError"),
    samples.platform_report("timeout"),
    samples.platform_report("failure"),
]


@pytest.mark.parametrize("message", ERROR_SAMPLES)
def test_json_error_records_and_failed_reports_are_found_by_the_error_lookups(message: str) -> None:
    assert ERROR_LIKE.search(message)
    assert any(term.strip('"') in message for term in ERROR_TERMS)  # a term the lookup filters on


def test_a_successful_json_report_is_not_error_like() -> None:
    assert ERROR_LIKE.search(samples.platform_report("success")) is None


def test_peak_memory_reads_both_report_forms() -> None:
    events = Sample(
        "t",
        (samples.NODE_REPORT, samples.platform_report("success"), samples.TIMEOUT_REPORT_STATUS.messages[0]),
    ).events()
    assert metrics._peak_memory(events, None) == (1201, 3)


@dataclass
class FakePaginatedLogs:
    """``get_paginator('filter_log_events')`` answering by filter pattern, as one page."""

    by_pattern: dict[str, list[dict[str, Any]]]
    patterns: list[str] = field(default_factory=list)

    class exceptions:  # boto3's attribute name
        class ResourceNotFoundException(Exception):
            pass

    def get_paginator(self, name: str) -> FakePaginatedLogs:
        assert name == "filter_log_events"
        return self

    def paginate(self, **request: Any) -> list[dict[str, Any]]:
        self.patterns.append(request["filterPattern"])
        return [{"events": self.by_pattern.get(request["filterPattern"], [])}]


def test_report_lookups_cover_both_formats() -> None:
    text = Sample("t", (samples.NODE_REPORT,)).events(start_ms=samples.START_MS + 5)
    json_reports = Sample("t", (samples.platform_report("success"),)).events(stream="other")
    logs = FakePaginatedLogs({'"REPORT RequestId"': text, '"platform.report"': json_reports})
    found = metrics._report_events(logs, "/aws/lambda/fn", NOW, NOW)
    assert logs.patterns == ['"REPORT RequestId"', '"platform.report"']
    assert [event["message"] for event in found] == [samples.platform_report("success"), samples.NODE_REPORT]
