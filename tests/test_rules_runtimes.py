"""What the rules brain reads from a failed invocation's error record, in every runtime and log format: the
failure (type, message, AWS error code, operation, frame, the field a pointer quotes), the runtime's sign of a
configuration error, and the denied call; each on a record of tests/events/runtime_error_records.json (its
source cited there), inside a logs answer built with the contract's models. Whole diagnoses on these records
are in test_rules_runtimes_diagnosis.py."""

from __future__ import annotations

from typing import Any

import pytest

from supervisor.diagnosis.corroboration import log_problem
from supervisor.diagnosis.iam_policy import DeniedCall, parse_denial
from supervisor.diagnosis.rules import signs
from supervisor.diagnosis.rules.code import is_code_failure
from supervisor.diagnosis.rules.failures import Failure, failures
from supervisor.schemas import EvidencePointer
from tests.runtime_worlds import RECORDS, TABLE, Run, conversation, logs, world


def _failure(record: str, *, attached: bool = True, **overrides: Any) -> Failure:
    """The one failure a function that succeeded at 10 s and then failed with ``record`` at 30 s shows."""
    answers = world([Run(10), Run(30, record, attached=attached)])
    answers["get_recent_logs"]["events"] = [
        e | overrides if e["kind"] in ("error_record", "init_error") else e
        for e in answers["get_recent_logs"]["events"]
    ]
    [failure] = failures(conversation(answers))
    return failure


# record -> (error type, AWS error code, summary, quoted field's last part, frame)
READ = {
    "python_text_key_error": ("KeyError", None, "KeyError: 'TABLE_NAME'", "message", "/var/task/app.py:7"),
    "python_json_key_error": ("KeyError", None, "KeyError: 'TABLE_NAME'", "message", "/var/task/app.py:7"),
    "python_text_none_split": (
        "AttributeError",
        None,
        "AttributeError: 'NoneType' object has no attribute 'split'",
        "message",
        "/var/task/app.py:12",
    ),
    "python_json_param_validation": (
        "ParamValidationError",
        None,
        "ParamValidationError: Parameter validation failed:",
        "message",
        "/var/task/app.py:17",
    ),
    "python_text_init_key_error": (
        "KeyError",
        None,
        "KeyError: 'TABLE_NAME'",
        "message",
        "/var/task/settings.py:3",
    ),
    "python_text_import_module_error": (
        "Runtime.ImportModuleError",
        None,
        "Runtime.ImportModuleError: Unable to import module 'orders': No module named 'orders'",
        "message",
        None,
    ),
    "python_text_event_key_error": (
        "KeyError",
        None,
        "KeyError: 'order_id'",
        "message",
        "/var/task/app.py:21",
    ),
    "node_text_undefined_read": (
        "TypeError",
        None,
        "TypeError: Cannot read properties of undefined (reading 'split')",
        "message",
        "/var/task/index.mjs:2",
    ),
    "node_json_access_denied": (
        "AccessDeniedException",
        "AccessDeniedException",
        "AccessDeniedException: " + RECORDS["node_json_access_denied"]["error"]["message"],
        "message",
        "/var/task/index.mjs:3",
    ),
    "node_json_import_module_error": (
        "ImportModuleError",
        None,
        "ImportModuleError: Error: Cannot find module 'uuid'",
        "message",
        None,
    ),
    "node_text_init_uncaught": (
        "TypeError",
        None,
        "TypeError: Cannot read properties of undefined (reading 'split')",
        "message",
        "/var/task/init.mjs:2",
    ),
    "node_text_resource_not_found": (
        "ResourceNotFoundException",
        "ResourceNotFoundException",
        "ResourceNotFoundException: Requested resource not found",
        "message",
        "/var/task/index.mjs:3",
    ),
}


@pytest.mark.parametrize("record", list(READ))
def test_a_failure_is_read_from_the_records_error_detail(record: str) -> None:
    error_type, code, summary, quoted, frame = READ[record]
    failure = _failure(record)
    assert (failure.error_type, failure.error_code, failure.summary, failure.frame) == (
        error_type,
        code,
        summary,
        frame,
    )
    field, value = failure.quoted()
    said = RECORDS[record]["error"]["message"].split("\n", 1)[0]
    assert (field, value) == (f"events.2.error.{quoted}", said)
    assert failure.kind == RECORDS[record]["kind"]


def test_an_init_record_without_a_request_id_is_read_for_the_invocation_its_report_shows_failed() -> None:
    """Lambda writes the init phase's lines before the invocation's START: the invocation's report says it
    failed in init, the latest init record of its log stream before it says how, and the pointer cites the
    report (an event with no request id is the terminal error of no invocation)."""
    failure = _failure("python_text_init_key_error", attached=False)
    assert (failure.kind, failure.error_type, failure.error_message, failure.frame) == (
        "init_error",
        "KeyError",
        "'TABLE_NAME'",
        "/var/task/settings.py:3",
    )
    assert failure.quoted() == ("invocations.1.outcome", "init_error")


def test_an_init_failure_known_only_from_its_report_is_the_reports_error_type() -> None:
    answers = world([Run(10), Run(30, outcome="init_error", error_type="Runtime.ExitError")])
    [failure] = failures(conversation(answers))
    assert (failure.kind, failure.error_type, failure.message, failure.request_id) == (
        "init_error",
        "Runtime.ExitError",
        "",
        "00000000-0000-4000-8000-000000000101",
    )
    assert failure.quoted() == ("invocations.1.error_type", "Runtime.ExitError")
    assert is_code_failure(failure)


def test_an_answer_without_the_error_detail_is_read_from_the_python_text_record() -> None:
    """Answers recorded before the tool gave the detail: the Python runtime's text record, quoted whole."""
    failure = _failure("python_text_key_error", error=None)
    assert (failure.detailed, failure.error_type, failure.summary) == (
        False,
        "KeyError",
        "KeyError: 'TABLE_NAME'",
    )
    assert failure.quoted() == ("events.2.message", "[ERROR] KeyError: 'TABLE_NAME'")
    client = _failure(
        "python_text_key_error",
        error=None,
        message="[ERROR] ClientError: An error occurred (NoSuchBucket) when calling the GetObject operation",
    )
    assert (client.error_type, client.error_code, client.operation) == (
        "ClientError",
        "NoSuchBucket",
        "GetObject",
    )


def test_a_node_error_code_is_not_an_aws_error_code() -> None:
    """Node's records carry Node's own `code` ('ERR_INVALID_ARG_TYPE'): not an AWS error code, said or not."""
    record = RECORDS["node_text_undefined_argument"]
    failure = _failure(
        "node_text_undefined_argument", error=record["error"] | {"code": "ERR_INVALID_ARG_TYPE"}
    )
    assert failure.error_code is None
    assert is_code_failure(failure)


def test_a_boto3_error_in_the_detail_gives_its_code_and_operation_from_the_message() -> None:
    message = (
        "An error occurred (AccessDeniedException) when calling the PutItem operation: User: "
        "arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: dynamodb:PutItem on "
        f"resource: {TABLE} because no identity-based policy allows the dynamodb:PutItem action"
    )
    failure = _failure("python_text_key_error", error={"type": "ClientError", "message": message})
    assert (failure.error_code, failure.operation) == ("AccessDeniedException", "PutItem")
    assert failure.denial() == DeniedCall(
        "dynamodb:PutItem", TABLE, "no_allow", "identity-based policy", "AccessDeniedException", message
    )


# ------------------------------------------------------------------------------------------------ signs

# record -> (sign, variable); None: no sign of a configuration error
SIGNS: dict[str, tuple[str, str | None] | None] = {
    "python_text_key_error": ("python_environ_read", "TABLE_NAME"),
    "python_json_key_error": ("python_environ_read", "TABLE_NAME"),
    "python_text_init_key_error": ("python_environ_read", "TABLE_NAME"),
    "python_text_none_split": ("python_none_setting", None),
    "python_json_param_validation": ("boto_param_validation", None),
    "python_text_event_key_error": None,  # event['order_id']: the input's key, not a variable
    "python_json_event_upper_key_error": None,  # event['ORDER_ID']: a variable's shape, the input's key
    "python_text_import_module_error": None,  # a runtime error: the handler's check reads it
    "node_text_undefined_read": ("node_undefined_read", None),
    "node_json_undefined_read": ("node_undefined_read", None),
    "node_text_undefined_argument": ("node_undefined_argument", None),
    "node_text_null_table": ("sdk_rejected_parameter", None),
    "node_json_null_table": ("sdk_rejected_parameter", None),
    "node_text_unhandled_rejection": ("node_undefined_read", None),
    "node_json_unhandled_rejection": ("node_undefined_read", None),
    "node_text_init_uncaught": ("node_undefined_read", None),
    "node_json_init_uncaught": ("node_undefined_read", None),
    "node_json_variable_named": ("variable_named_missing", "TABLE_NAME"),
    "node_text_access_denied": None,
    "node_json_access_denied": None,
    "node_text_const_assignment": None,  # a bug of the code
    "node_text_resource_not_found": None,
    "node_text_key_disabled": None,
    "node_text_key_pending_deletion": None,
    "node_text_import_module_error": None,
    "node_json_import_module_error": None,
}


def test_every_record_has_its_expected_sign() -> None:
    assert set(SIGNS) == set(RECORDS)


@pytest.mark.parametrize("record", list(SIGNS))
def test_each_runtime_sign_is_read_from_its_record(record: str) -> None:
    sign = signs.read(_failure(record))
    assert (None if sign is None else (sign.name, sign.variable)) == SIGNS[record]


@pytest.mark.parametrize(
    ("record", "shows"),
    [
        ("python_text_key_error", "os.environ['TABLE_NAME'] raised KeyError"),
        ("node_json_null_table", "AWS refused tableName=null: Member must not be null"),
        ("python_json_param_validation",
         "boto3 refused the parameter TableName (ParamValidationError: Parameter validation failed:)"),
        ("node_text_undefined_argument",
         "TypeError: " + RECORDS["node_text_undefined_argument"]["error"]["message"]),
    ],
)  # fmt: skip
def test_a_sign_says_what_the_record_shows(record: str, shows: str) -> None:
    sign = signs.read(_failure(record))
    assert sign is not None
    assert sign.shows == shows


def test_a_key_error_of_an_upper_case_key_without_the_environment_read_is_still_a_variable() -> None:
    """The Python text record as it was read before: a key shaped like a variable, no traceback."""
    failure = _failure("python_text_key_error", message="[ERROR] KeyError: 'TABLE_NAME'")
    assert signs.read(failure) == signs.Sign("python_key_error", "TABLE_NAME", "KeyError: 'TABLE_NAME'")


def test_a_read_of_undefined_that_names_a_variable_is_not_that_variable_missing() -> None:
    """'Cannot read properties of undefined (reading 'TABLE_NAME')': what holds TABLE_NAME is unset."""
    message = "Cannot read properties of undefined (reading 'TABLE_NAME')"
    failure = _failure("node_text_undefined_read", error={"type": "TypeError", "message": message})
    assert signs.variable_named_missing(failure) is None
    assert signs.read(failure) == signs.Sign("node_undefined_read", None, f"TypeError: {message}")


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ("python_text_import_module_error", "Runtime.ImportModuleError"),
        ("node_text_import_module_error", "Runtime.ImportModuleError"),
        ("node_json_import_module_error", "Runtime.ImportModuleError"),  # the class's name alone in JSON
        ("node_json_unhandled_rejection", "Runtime.UnhandledPromiseRejection"),
        ("node_text_undefined_read", None),
    ],
)
def test_the_runtimes_errors_are_named_alike_in_every_format(record: str, expected: str | None) -> None:
    assert signs.runtime_error(_failure(record)) == expected


def test_an_unhandled_rejection_is_read_as_what_the_code_threw() -> None:
    failure = _failure("node_text_unhandled_rejection")
    assert signs.thrown(failure) == ("TypeError", "Cannot read properties of undefined (reading 'split')")
    assert is_code_failure(failure)


# ---------------------------------------------------------------------------------------------- denials


@pytest.mark.parametrize("record", ["node_text_access_denied", "node_json_access_denied"])
def test_an_sdk_v3_denial_gives_the_action_resource_and_code(record: str) -> None:
    failure = _failure(record)
    assert failure.denial() == DeniedCall(
        "dynamodb:PutItem",
        TABLE,
        "no_allow",
        "identity-based policy",
        "AccessDeniedException",
        RECORDS[record]["error"]["message"],
    )
    assert not is_code_failure(failure)


def test_a_denial_code_with_its_operation_and_no_iam_message_is_a_service_less_denial() -> None:
    assert parse_denial("Access Denied", code="AccessDenied", operation="GetObject") == DeniedCall(
        "*:GetObject", None, None, None, "AccessDenied", "Access Denied"
    )
    assert parse_denial("Access Denied", code="AccessDenied") is None  # no operation: no action to evaluate
    assert parse_denial("Access Denied", code="ValidationException", operation="GetObject") is None


# ------------------------------------------------------------------------------------------- init error


def test_an_init_error_of_a_failed_invocation_is_its_terminal_error() -> None:
    answers = world([Run(10), Run(30, "node_text_init_uncaught")])
    pointer = EvidencePointer(
        tool="get_recent_logs",
        field="events.2.error.type",
        value="TypeError",
        interpretation="the init phase failed",
        supports="code_error",
    )
    assert answers["get_recent_logs"]["events"][2]["kind"] == "init_error"
    assert log_problem(pointer, answers["get_recent_logs"]) == ""


def test_the_contract_accepts_every_record_as_the_answer_gives_it() -> None:
    """Each record's detail and kind, in a LogsResponse: the contract's own validation."""
    answer = logs([Run(10 + n, name) for n, name in enumerate(RECORDS)])
    kinds = [e.kind for e in answer.events if e.kind != "start"]
    assert kinds == [RECORDS[name]["kind"] for name in RECORDS]
