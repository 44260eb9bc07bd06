"""Situations outside the drill that came back wrong (issue 42), staged as :mod:`tests.timeline_scenarios`
stages its own: the operator's plain API calls between phases of traffic, each outcome checked, every change
registered for an exact restore."""

from __future__ import annotations

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from tests.fault_scenarios import Undo, _buggy_orders_api, _deployed_package
from tests.timeline_scenarios import Stage, Staged, expect, healthy

SETTINGS_EVENT = "UpdateFunctionConfiguration20150331v2"
ALIAS_EVENT = "UpdateAlias20150331"
DECIMAL_ERROR = "Object of type Decimal is not JSON serializable"


def put_back_then_new(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor's timeout cut below what its batches need and put back; then, a moment later,
    INPUT_BUCKET removed from its environment."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    lambda_, name = stage.operator.client("lambda"), names.FUNCTION_NAME
    configuration = lambda_.get_function_configuration(FunctionName=name)
    timeout, variables = configuration["Timeout"], configuration["Environment"]["Variables"]

    def set_timeout(seconds: int) -> None:
        lambda_.update_function_configuration(FunctionName=name, Timeout=seconds)

    def set_variables(chosen: dict[str, str]) -> None:
        lambda_.update_function_configuration(FunctionName=name, Environment={"Variables": chosen})

    slow = [names.input_event(0, work_seconds=1.5), names.input_event(1, work_seconds=1.5)]
    healthy(stage, slow)
    stage.call(SETTINGS_EVENT, lambda: set_timeout(1))
    undo(lambda: set_timeout(timeout))
    expect(stage.invoke("timeout cut", slow), {"timed_out": 2}, "Sandbox.Timedout", "timed out after 1.00")
    stage.call(SETTINGS_EVENT, lambda: set_timeout(timeout))
    stage.call(
        SETTINGS_EVENT, lambda: set_variables({k: v for k, v in variables.items() if k != "INPUT_BUCKET"})
    )
    undo(lambda: set_variables(variables))
    expect(stage.invoke("variable removed", slow), {"failed": 2}, "KeyError", "INPUT_BUCKET")
    return stage.finish(slow[0], timeout=timeout)


def rollback_to_buggy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api's release 2 (a JSON encoding that fails on a found order) published, release 3 (the code
    as deployed) published and served; then the alias moved from 3 back to 2."""
    name, alias = names.ORDERS_FUNCTION, names.ORDERS_ALIAS
    stage = Stage(sandbox, runtime, name, alias)
    lambda_ = stage.operator.client("lambda")
    served = lambda_.get_alias(FunctionName=name, Name=alias)["FunctionVersion"]
    original = _deployed_package(sandbox, name)

    def release(package: bytes, description: str) -> str:
        stage.call(
            "UpdateFunctionCode20150331v2",
            lambda: lambda_.update_function_code(FunctionName=name, ZipFile=package),
        )
        version: str = stage.call(
            "PublishVersion20150331",
            lambda: lambda_.publish_version(FunctionName=name, Description=description),
        )["Version"]
        undo(lambda: lambda_.delete_function(FunctionName=name, Qualifier=version))
        return version

    def point(version: str) -> None:
        stage.call(
            ALIAS_EVENT, lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=version)
        )

    undo(lambda: lambda_.update_function_code(FunctionName=name, ZipFile=original))
    buggy = release(_buggy_orders_api(original), "release 2")
    fixed = release(original, "release 3")
    point(fixed)
    undo(lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=served))
    assert {i.version for i in healthy(stage, [names.order_request(), names.order_request()])} == {fixed}
    point(buggy)
    failing = stage.invoke("after the rollback", [names.order_request(), names.order_request()])
    expect(failing, {"failed": 2}, "TypeError", DECIMAL_ERROR)
    assert {i.version for i in failing} == {buggy}
    return stage.finish(names.order_request(), buggy=buggy, fixed=fixed)
