"""A caller the function's resource policy no longer lets in (issue 45), end to end: the statement that lets
anonymous callers invoke order-intake through its public function URL removed by the operator's own boto3
call, orders POSTed to the URL and refused before the function runs, then diagnosed by the `rules` model
over MCP: permission_loss, the removal its trigger, and the statement added back, applied as a person
approving it would, lets the next order through."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from chaos.drill.event_traffic import DRILL_ORDER
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.function_urls import FunctionUrls
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.fault_scenarios import RestoreSteps, Undo
from tests.timeline_cases import diagnosed, own_world, restored_exactly
from tests.timeline_scenarios import IAM_QUIET_SECONDS, Stage, Staged

sandbox, mcp_server_url, before = own_world("callers")

INTAKE, STATEMENT = names.ORDER_INTAKE_FUNCTION, names.ORDER_INTAKE_URL_INVOKE_STATEMENT


def url_statement_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two orders through the URL, answered 201; the InvokeFunction statement removed; two more, each
    answered 403 with no invocation."""
    stage = Stage(sandbox, runtime, INTAKE, None)
    lambda_, table = stage.operator.client("lambda"), stage.operator.client("dynamodb")
    urls = FunctionUrls(runtime, sandbox.session(names.LAMBDA_SERVICE))
    url, body = sandbox.world.order_intake_url, str(names.order_submission(order_id=DRILL_ORDER)["body"])
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    policy = json.loads(lambda_.get_policy(FunctionName=INTAKE)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == STATEMENT]

    def post(phase: str, count: int, status: int) -> None:
        def run() -> list[Invocation]:
            seen: list[Invocation] = []
            runtime.observers.append(seen.append)
            try:
                answers = [urls.request(url, "POST", body).status for _ in range(count)]
            finally:
                runtime.observers.remove(seen.append)
            assert answers == [status] * count, (phase, answers)
            return seen

        stage.traffic(phase, run)

    time.sleep(IAM_QUIET_SECONDS)  # the world's making well before the last success
    post("accepted", 2, 201)
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(FunctionName=INTAKE, StatementId=STATEMENT),
    )
    undo(lambda: _added_back(lambda_, statement))
    post("refused", 2, 403)

    def answers() -> str | None:
        status = urls.request(url, "POST", body).status
        return None if status == 201 else f"the URL answered {status}"

    return stage.finish(None, works=answers, statement=statement)


def _added_back(lambda_: Any, statement: dict[str, Any]) -> None:
    present = json.loads(lambda_.get_policy(FunctionName=INTAKE)["Policy"])["Statement"]
    if not any(s["Sid"] == statement["Sid"] for s in present):
        lambda_.add_permission(
            FunctionName=INTAKE,
            StatementId=statement["Sid"],
            Action=statement["Action"],
            Principal="*",
            InvokedViaFunctionUrl=True,
        )


async def test_a_url_caller_refused_by_the_policy_is_permission_loss_and_the_statement_added_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    situation: Callable[[Sandbox, LocalLambdaRuntime, Undo], Staged] = url_statement_removed
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    case.apply_first_command(
        "lambda add-permission",
        "AddPermission",
        {
            "FunctionName": INTAKE,
            "StatementId": STATEMENT,
            "Action": "lambda:InvokeFunction",
            "Principal": "*",
            "InvokedViaFunctionUrl": True,
        },
    )
    restored_exactly(case, steps, before)
