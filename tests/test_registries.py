"""The two registries: every tool and every fault class is one declaration, checked when it is made, and
what the code does matches what it declares (a tool calls exactly the AWS reads it declares)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import boto3
import pytest

from chaos.drill.scenarios import SCENARIOS, Scenario, Traffic
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from evals.definitions import DEFINITIONS
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentLogsArgs, LogsResponse
from mcp_server.contract.declaration import DeclarationError, ToolDeclaration
from mcp_server.contract.discovery import declarations
from mcp_server.contract.registry import SERVED_TOOLS, TOOLS
from mcp_server.permissions import ALLOWED_OPERATIONS, READ_OPERATIONS
from mcp_server.server import ToolRunner
from mcp_server.settings import ServerSettings
from supervisor.faults.declaration import FaultClass, FaultClassError
from supervisor.faults.registry import BY_PRECEDENCE, FAULT_CLASSES, FAULT_TYPES
from supervisor.faults.sources import ERRORS
from tests.conftest import Undo
from tests.http_api_stage import http_api
from tests.queue_grants import grant_consumer

# --------------------------------------------------------------------------- declarations are checked


def _tool(**changes: Any) -> ToolDeclaration:
    fields: dict[str, Any] = {
        "name": "get_something",
        "title": "Something",
        "description": "Reads something.",
        "arguments": GetRecentLogsArgs,
        "response": LogsResponse,
        "implementation": "mcp_server.tools.logs:recent_logs",
        "reads": (("logs", "FilterLogEvents"),),
        "order": 99,
    }
    return ToolDeclaration(**(fields | changes))


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"reads": (("iam", "DeleteRolePolicy"),)}, "iam:DeleteRolePolicy is not a read"),
        ({"reads": (("lambda", "PutFunctionConcurrency"),)}, "lambda:PutFunctionConcurrency is not a read"),
        ({"reads": ()}, "declares no AWS read"),
        ({"implementation": "mcp_server.tools.logs.recent_logs"}, "is not 'module:function'"),
        ({"name": "Get Something"}, "is not snake_case"),
        ({"description": ""}, "must not be empty"),
        ({"benchmark_arguments": ()}, "at least the default call"),
    ],
)
def test_a_tool_declaration_that_cannot_be_served_is_refused(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(DeclarationError, match=said):
        _tool(**changes)


def test_a_tool_that_would_write_is_refused() -> None:
    from mcp_server.contract.declaration import ToolHints

    with pytest.raises(DeclarationError, match="read-only"):
        _tool(hints=ToolHints(read_only=False))
    with pytest.raises(DeclarationError, match="read-only"):
        _tool(hints=ToolHints(destructive=True))


def test_benchmark_arguments_are_frozen_and_valid_for_their_tool() -> None:
    for tool in TOOLS.values():
        for arguments in tool.benchmark_arguments:
            with pytest.raises(TypeError):
                arguments["lambda_name"] = "x"  # type: ignore[index]
            tool.arguments.model_validate({"lambda_name": names.FUNCTION_NAME, **arguments}, strict=True)


def test_every_tool_function_resolves_and_takes_a_context_and_its_arguments() -> None:
    for tool in SERVED_TOOLS.values():
        function = tool.function()
        parameters = list(inspect.signature(function).parameters.values())
        assert [p.name for p in parameters[:2]] == ["ctx", "args"], tool.name
        assert all(p.default is not inspect.Parameter.empty for p in parameters[2:]), tool.name


def test_the_allowlist_is_the_declared_reads_and_the_fixed_startup_calls() -> None:
    declared = {operation for tool in SERVED_TOOLS.values() for operation in tool.reads}
    assert set(READ_OPERATIONS) == declared
    assert declared <= ALLOWED_OPERATIONS
    assert ALLOWED_OPERATIONS - declared == {
        ("ssm", "GetParameter"),
        ("sts", "AssumeRole"),
        ("sts", "GetCallerIdentity"),
    }


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"name": "unknown"}, "not 'unknown'"),
        ({"corroboration": ()}, "at least one group"),
        ({"corroboration": ((ERRORS,), ())}, "none empty"),
        ({"check": "supervisor.diagnosis.rules.code.check"}, "is not 'module:function'"),
        ({"description": ""}, "must not be empty"),
    ],
)
def test_a_fault_class_declaration_that_cannot_be_used_is_refused(changes: dict[str, Any], said: str) -> None:
    fields: dict[str, Any] = {
        "name": "something_broke",
        "description": "something broke",
        "corroboration": ((ERRORS,),),
        "check": "supervisor.diagnosis.rules.code:check",
        "order": 99,
        "precedence": 99,
    }
    with pytest.raises(FaultClassError, match=said):
        FaultClass(**(fields | changes))


def test_every_fault_class_check_resolves_and_the_precedence_is_a_total_order() -> None:
    assert (*FAULT_CLASSES, "unknown") == FAULT_TYPES
    for fault in FAULT_CLASSES.values():
        assert list(inspect.signature(fault.checker()).parameters) == ["c"], fault.name
    assert len({fault.precedence for fault in BY_PRECEDENCE}) == len(BY_PRECEDENCE)
    assert len({fault.order for fault in FAULT_CLASSES.values()}) == len(FAULT_CLASSES)
    assert BY_PRECEDENCE[0].name == "configuration_error"  # a setting that cannot work is checked first
    # A setting that cannot work, and a full /tmp, explain the exceptions they raise.
    assert FAULT_CLASSES["code_error"].unless == ("configuration_error", "resource_exhausted")


# --------------------------------------------------------------------------- a tool reads what it declares


@pytest.fixture
def recorded(sandbox: Sandbox) -> tuple[ToolRunner, list[tuple[str, str]]]:
    session: boto3.Session = sandbox.session(names.MCP_SERVER)
    calls: list[tuple[str, str]] = []

    def record(model: Any, **_: Any) -> None:
        calls.append((model.service_model.service_name, model.name))

    session._session.register("before-call", record)  # every client made from this session reports its calls
    settings = ServerSettings()
    return ToolRunner(settings, AwsClients.create(settings, session)), calls


def test_each_tool_calls_exactly_the_aws_reads_it_declares(
    recorded: tuple[ToolRunner, list[tuple[str, str]]], sandbox: Sandbox, undo: Undo
) -> None:
    """On a function in a VPC and on an alias of another (fed by an SQS queue, behind an HTTP API), every
    tool's calls are its declared reads: none undeclared (the allowlist would refuse it in production) and
    none declared in vain (a broader IAM policy than the tools need)."""
    runner, calls = recorded
    operator = sandbox.session(names.OPERATOR)
    sqs, lambda_ = operator.client("sqs"), operator.client("lambda")
    queue = sqs.create_queue(QueueName="registries-reads-source", Attributes={"VisibilityTimeout": "30"})
    undo(lambda: sqs.delete_queue(QueueUrl=queue["QueueUrl"]))
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue["QueueUrl"], AttributeNames=["QueueArn"])
    undo(grant_consumer(operator, names.ORDERS_FUNCTION))
    mapping = lambda_.create_event_source_mapping(
        EventSourceArn=queue_arn["Attributes"]["QueueArn"], FunctionName=names.ORDERS_FUNCTION, Enabled=False
    )
    undo(lambda: lambda_.delete_event_source_mapping(UUID=mapping["UUID"]))
    kms = operator.client("kms")  # a customer managed key on the environment: its reads are made too
    key = kms.create_key(Description="registries-reads")["KeyMetadata"]["Arn"]
    undo(lambda: kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7))
    lambda_.update_function_configuration(FunctionName=names.FUNCTION_NAME, KMSKeyArn=key)
    undo(lambda: lambda_.update_function_configuration(FunctionName=names.FUNCTION_NAME, KMSKeyArn=""))
    alias = lambda_.get_alias(FunctionName=names.ORDERS_FUNCTION, Name=names.ORDERS_ALIAS)["AliasArn"]
    http_api(operator, undo, alias)  # an HTTP API in front of the alias too: its reads are made
    targets = (names.FUNCTION_NAME, f"{names.ORDERS_FUNCTION}:{names.ORDERS_ALIAS}")
    for tool in TOOLS.values():
        made: set[tuple[str, str]] = set()
        for target in targets:
            calls.clear()
            runner.run(tool.name, tool.arguments.model_validate({"lambda_name": _arn(runner, target)}))
            made |= set(calls) - {("sts", "GetCallerIdentity")}
        assert made == set(tool.reads), tool.name


def _arn(runner: ToolRunner, target: str) -> str:
    name, _, qualifier = target.partition(":")
    if not qualifier:
        return name
    return f"arn:aws:lambda:{runner.aws.region}:{names.ACCOUNT_ID}:function:{name}:{qualifier}"


# Classes no change causes, and the traffic that stages each in a scenario that changes nothing.
STAGED_BY_TRAFFIC: dict[str, Traffic] = {"bad_input": "mixed-input"}


def test_every_fault_class_has_a_drill_scenario_and_an_eval_case() -> None:
    """What the recipe says comes with a class: an injector breaks it in a scenario (or, for a class no
    change causes, the traffic named for it stages it with nothing injected), and a recorded case."""
    drilled = {fault for scenario in SCENARIOS if scenario.injections for fault in _faults(scenario)}
    staged = {
        fault
        for scenario in SCENARIOS
        if not scenario.injections
        for fault in _faults(scenario) & set(STAGED_BY_TRAFFIC)
        if any(act.traffic == STAGED_BY_TRAFFIC[fault] for act in scenario.acts)
    }
    recorded = {fault for definition in DEFINITIONS for fault in definition.faults}
    assert set(FAULT_CLASSES) - set(STAGED_BY_TRAFFIC) <= drilled
    assert set(STAGED_BY_TRAFFIC) <= staged
    assert set(FAULT_CLASSES) <= recorded


def _faults(scenario: Scenario) -> set[str]:
    return {fault for incident in scenario.expected for fault in incident.fault_types}


def test_two_declarations_with_one_name_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "twice_declared"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module in ("first", "second"):
        (package / f"{module}.py").write_text(
            "from tests.test_registries import _tool\n\nTOOL = _tool(name='get_twice')\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="two ToolDeclaration values are named 'get_twice'"):
        declarations(importlib.import_module("twice_declared"), ToolDeclaration, lambda tool: tool.name)
