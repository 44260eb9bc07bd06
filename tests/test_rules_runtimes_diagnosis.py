"""Whole diagnoses of the rules brain, through the real graph and its verification, on the runtimes' error
records of tests/events/runtime_error_records.json (Python and Node.js, text and JSON): a configuration error
is told from a bug of the code by the function's configuration and change history, not by the record's shape;
init failures, denials and AWS error codes are read from any of them."""

from __future__ import annotations

from typing import Any

import pytest

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import FUNCTION, diagnose_with
from tests.runtime_worlds import (
    DEPLOYMENT,
    ENVIRONMENT_CHANGE,
    HANDLER_CHANGE,
    RECORDS,
    ROLE,
    TABLE,
    Change,
    Run,
    at,
    responses,
    world,
)


async def _diagnosis(answers: dict[str, Any]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses(answers))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


def _failing_after(record: str, changed: Change | None, *, attached: bool = True) -> dict[str, Any]:
    """A success at 10 s, ``changed`` at 20 s, then the record at 30 s and 40 s."""
    runs = [Run(10), Run(30, record, attached=attached), Run(40, record, attached=attached)]
    return world(runs, [(20, changed)] if changed else [])


def _cited(diagnosis: Diagnosis, fault: str) -> list[tuple[str, str, str]]:
    return [(p.tool, p.field, p.value) for p in diagnosis.evidence if p.supports == fault]


@pytest.mark.parametrize(
    ("record", "field", "value"),
    [
        ("python_text_key_error", "events.2.error.message", "'TABLE_NAME'"),
        ("python_json_key_error", "events.2.error.message", "'TABLE_NAME'"),
        ("python_text_init_key_error", "events.2.error.message", "'TABLE_NAME'"),
        ("node_json_variable_named", "events.2.error.message", "TABLE_NAME is not set"),
    ],
)
async def test_a_variable_the_code_reads_and_the_configuration_does_not_set_is_a_configuration_error(
    record: str, field: str, value: str
) -> None:
    """No change needed: the configuration, which the function's users cannot write, lacks the variable."""
    diagnosis = await _diagnosis(_failing_after(record, None))
    assert diagnosis.fault_types == ["configuration_error"]
    assert diagnosis.root_cause.startswith(
        f"{FUNCTION} reads the environment variable TABLE_NAME, which its configuration does not set."
    )
    assert _cited(diagnosis, "configuration_error") == [
        ("get_recent_logs", field, value),
        ("get_lambda_config", "EnvironmentVariableNames", '["ORDERS_TOPIC"]'),
    ]


async def test_an_init_record_without_a_request_id_is_cited_through_its_invocations_report() -> None:
    diagnosis = await _diagnosis(_failing_after("python_text_init_key_error", None, attached=False))
    assert diagnosis.fault_types == ["configuration_error"]
    assert ("get_recent_logs", "invocations.1.outcome", "init_error") in _cited(
        diagnosis, "configuration_error"
    )


async def test_a_variable_the_configuration_sets_is_not_a_configuration_error() -> None:
    answers = _failing_after("python_text_key_error", None)
    answers["get_lambda_config"]["EnvironmentVariableNames"] = ["TABLE_NAME"]
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["code_error"]  # not configuration_error: the code reads another key


UNSET_VALUE = {  # records that name no variable -> what the root cause says the record shows
    "node_text_undefined_read": "TypeError: Cannot read properties of undefined (reading 'split')",
    "node_json_undefined_read": "TypeError: Cannot read properties of undefined (reading 'split')",
    "node_json_unhandled_rejection": "TypeError: Cannot read properties of undefined (reading 'split')",
    "node_text_undefined_argument": 'TypeError: The "path" argument must be of type string or an instance of '
    "Buffer or URL. Received undefined",
    "node_json_null_table": "AWS refused tableName=null: Member must not be null",
    "python_text_none_split": "AttributeError on None: 'NoneType' object has no attribute 'split'",
    "python_json_param_validation": "boto3 refused the parameter TableName (ParamValidationError: Parameter "
    "validation failed:)",
}


@pytest.mark.parametrize("record", list(UNSET_VALUE))
async def test_a_value_the_code_cannot_use_after_the_environment_changed_is_a_configuration_error(
    record: str,
) -> None:
    diagnosis = await _diagnosis(_failing_after(record, ENVIRONMENT_CHANGE))
    assert diagnosis.fault_types == ["configuration_error"]
    assert diagnosis.root_cause == (
        f"{FUNCTION} cannot work with its environment as it was changed at {at(20)}: {UNSET_VALUE[record]}: "
        "a value its code reads from the environment is missing or not valid (variables set now: "
        "ORDERS_TOPIC). It started after arn:aws:iam::123456789012:user/operator called "
        f"UpdateFunctionConfiguration at {at(20)}, 10 s before the first failure."
    )
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "UpdateFunctionConfiguration20150331v2"
    assert [g.reason for g in diagnosis.gaps if g.source == "remediation"] == [
        f"the environment values before the change at {at(20)} are not recorded (CloudTrail hides them; "
        "variables set now: ORDERS_TOPIC): no command can restore them"
    ]
    assert [s.command for s in diagnosis.remediation_plan] == [None]


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ("node_text_undefined_read", "/var/task/index.mjs:2"),
        ("node_json_undefined_read", "/var/task/index.mjs:2"),
        ("python_text_none_split", "/var/task/app.py:12"),
        ("node_text_const_assignment", "/var/task/index.mjs:5"),
    ],
)
async def test_the_same_records_after_a_deployment_are_the_codes_error_at_its_line(
    record: str, where: str
) -> None:
    diagnosis = await _diagnosis(_failing_after(record, DEPLOYMENT))
    assert diagnosis.fault_types == ["code_error"]
    summary = RECORDS[record]["error"]["type"] + ": " + RECORDS[record]["error"]["message"]
    assert diagnosis.root_cause.startswith(f"{FUNCTION}'s code fails: {summary} (at {where}).")
    assert ("get_recent_logs", "events.4.error.frame", where) in [
        (p.tool, p.field, p.value) for p in diagnosis.evidence
    ]
    [step] = diagnosis.remediation_plan
    assert (step.action, step.details) == (
        f"Fix the {RECORDS[record]['error']['type']} in {FUNCTION}'s code",
        f"It is raised at {where}, the first frame of the function's own code: fix it there, or redeploy the "
        "last version that worked.",
    )


async def test_an_unset_value_with_no_change_before_it_is_the_codes_error() -> None:
    diagnosis = await _diagnosis(_failing_after("node_json_undefined_read", None))
    assert diagnosis.fault_types == ["code_error"]


async def test_an_environment_change_the_function_succeeded_after_is_not_the_configuration_error() -> None:
    """A success after the change and between the failures: the change did not break every invocation, and
    nothing was deployed: the same code fails on some inputs only, which is bad_input (issue 42)."""
    runs = [Run(10), Run(30, "node_text_undefined_read"), Run(35), Run(40, "node_text_undefined_read")]
    diagnosis = await _diagnosis(world(runs, [(20, ENVIRONMENT_CHANGE)]))
    assert diagnosis.fault_types == ["bad_input"]  # neither configuration_error nor code_error


@pytest.mark.parametrize("record", ["node_text_import_module_error", "node_json_import_module_error"])
async def test_a_handler_that_cannot_load_after_the_handler_changed_is_a_configuration_error(
    record: str,
) -> None:
    diagnosis = await _diagnosis(_failing_after(record, HANDLER_CHANGE))
    assert diagnosis.fault_types == ["configuration_error"]
    summary = f"{RECORDS[record]['error']['type']}: Error: Cannot find module 'uuid'"
    assert diagnosis.root_cause.startswith(
        f"The handler of {FUNCTION} (index.handler) cannot be loaded: {summary}."
    )


@pytest.mark.parametrize("record", ["node_json_import_module_error", "python_text_import_module_error"])
async def test_a_module_that_cannot_load_after_a_deployment_is_the_codes_error(record: str) -> None:
    diagnosis = await _diagnosis(_failing_after(record, DEPLOYMENT))
    assert diagnosis.fault_types == ["code_error"]


async def test_the_runtime_exiting_at_init_after_a_deployment_is_the_codes_error() -> None:
    runs = [Run(10), *(Run(s, outcome="init_error", error_type="Runtime.ExitError") for s in (30, 40))]
    diagnosis = await _diagnosis(world(runs, [(20, DEPLOYMENT)]))
    assert diagnosis.fault_types == ["code_error"]
    assert diagnosis.root_cause.startswith(f"{FUNCTION}'s code fails: Runtime.ExitError.")
    assert ("get_recent_logs", "invocations.2.error_type", "Runtime.ExitError") in _cited(
        diagnosis, "code_error"
    )


@pytest.mark.parametrize("record", ["node_text_access_denied", "node_json_access_denied"])
async def test_an_sdk_v3_denial_after_the_role_was_narrowed_is_a_permission_loss(record: str) -> None:
    elsewhere = TABLE.replace("table/orders", "table/archive")
    iam = world([Run(10)])["get_iam_state"]
    iam["inline_policies"]["orders-access"]["Statement"][0]["Resource"] = elsewhere
    narrowed: Change = (
        "PutRolePolicy",
        "iam.amazonaws.com",
        {"roleName": ROLE, "policyName": "orders-access"},
    )
    runs = [Run(10), Run(30, record), Run(40, record)]
    diagnosis = await _diagnosis(world(runs, [(20, narrowed)], iam=iam))
    assert diagnosis.fault_types == ["permission_loss"]
    assert f"{ROLE} does not allow dynamodb:PutItem on {TABLE}" in diagnosis.root_cause
    said = RECORDS[record]["error"]["message"]
    assert ("get_recent_logs", "events.2.error.message", said) in _cited(diagnosis, "permission_loss")


async def test_an_sdk_v3_missing_resource_is_a_dependency_failure_without_its_operation() -> None:
    diagnosis = await _diagnosis(_failing_after("node_text_resource_not_found", None))
    assert diagnosis.fault_types == ["dependency_failure"]
    assert diagnosis.root_cause.startswith(
        f"A resource {FUNCTION} calls is missing: a call fails with ResourceNotFoundException on orders, the "
        "only one its role allows it on (its role allows the call; the resource itself is the problem)."
    )  # the SDK does not name the operation: the role's only granted resource names the table
