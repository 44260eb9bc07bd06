"""The change behind a failing dependency: ``get_recent_changes`` searches the tables, buckets, queues,
topics and keys the function's role grants by name, its environment names and its errors name by ARN
(mcp_server/tools/dependencies.py), and the rules name a change that can break the failing resource as the
trigger (supervisor/diagnosis/rules/dependencies.py)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentChangesArgs
from mcp_server.contract.changes import ChangeEventDetail
from mcp_server.settings import ServerSettings
from mcp_server.tools.changes import recent_changes
from mcp_server.tools.dependencies import environment_resources, logged_resources, named_resource
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import diagnose_with
from tests.conftest import Undo
from tests.packages import python_function
from tests.runtime_worlds import DEPLOYMENT, RECORDS, Change, Run, at, responses, world
from tests.tool_support import call_tool

REGION, ACCOUNT = names.DEFAULT_REGION, names.ACCOUNT_ID
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders"


@pytest.mark.parametrize(
    ("granted", "resource"),
    [
        (TABLE_ARN, ("table", TABLE_ARN)),
        (f"{TABLE_ARN}/index/by-customer", ("table", TABLE_ARN)),
        ("arn:aws:s3:::data-input/*", ("bucket", "arn:aws:s3:::data-input")),
        ("arn:aws:s3:::data-input", ("bucket", "arn:aws:s3:::data-input")),
        (f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders", ("queue", f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders")),
        (f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234", ("key", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234")),
        (f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders-*", None),  # a pattern names no one table
        ("arn:aws:s3:::*", None),
        ("*", None),
        (f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/orders", None),  # an alias is not the key's ARN
        (f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/f:*", None),  # every function writes logs
    ],
)
def test_a_resource_the_role_grants_by_name_is_searched_by_its_own_arn(
    granted: str, resource: tuple[str, str] | None
) -> None:
    assert named_resource(granted) == resource


QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
PATTERN = "arn:aws:dynamodb:*:*:table/orders-*/index/*"


@pytest.mark.parametrize(
    ("value", "granted", "resource"),
    [
        ("orders-eu", [PATTERN], ("table", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders-eu")),
        ("orders-eu", [f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders-?"], None),  # one character
        ("orders-eu", ["*"], None),  # a bare wildcard: any value would match, a secret too
        ("orders-eu", [f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/*"], None),
        ("invoices", [PATTERN], None),
        ("orders eu", [PATTERN], None),  # no table's name
        ("data-in", ["arn:aws:s3:::data-*/*"], ("bucket", "arn:aws:s3:::data-in")),
        ("Data-in", ["arn:aws:s3:::*-in/*"], None),  # no bucket's name, though the pattern matches it
        ("orders", [f"arn:aws:sqs:{REGION}:{ACCOUNT}:ord*"], ("queue", QUEUE_ARN)),
        (f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders", [], ("queue", QUEUE_ARN)),
        (f"https://{REGION}.queue.amazonaws.com/{ACCOUNT}/orders", [], ("queue", QUEUE_ARN)),
        (TABLE_ARN, [], ("table", TABLE_ARN)),  # an ARN names its resource, granted or not
        (f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts", [], ("topic", f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts")),
        (f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders-*", [], None),
        ("1234abcd", [f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234*"], None),  # a key only by its ARN
    ],
)
def test_an_environment_value_names_a_resource_by_its_arn_or_url_or_by_completing_a_granted_pattern(
    value: str, granted: list[str], resource: tuple[str, str] | None
) -> None:
    assert environment_resources([value], granted, REGION, ACCOUNT) == ({resource} if resource else set())


def _new_table(dynamodb: Any, name: str) -> str:
    table = dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return str(table["TableDescription"]["TableArn"])


def _function_granted(
    operator: Any, undo: Undo, name: str, grant: dict[str, Any], environment: dict[str, str] | None = None
) -> None:
    """A function ``name`` whose role ``name`` has ``grant`` (inline), undone after the test."""
    iam, lambda_ = operator.client("iam"), operator.client("lambda")
    trust = {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=_policy(trust))["Role"]["Arn"]
    undo(lambda: iam.delete_role(RoleName=name))
    iam.put_role_policy(RoleName=name, PolicyName="read", PolicyDocument=_policy(grant))
    undo(lambda: iam.delete_role_policy(RoleName=name, PolicyName="read"))
    files = {"handler.py": "def handler(event, context):\n    return {}\n"}
    variables = {"Variables": environment or {}}
    python_function(lambda_, undo, name, role, files, "handler.handler", Environment=variables)


def test_the_change_history_finds_the_deletion_of_a_table_the_environment_names_and_a_pattern_grants(
    sandbox: Sandbox, undo: Undo
) -> None:
    operator = sandbox.session(names.OPERATOR)
    dynamodb = operator.client("dynamodb")
    name = f"ledger-{uuid.uuid4().hex[:8]}"
    # both granted by the pattern; only one is in the environment
    tables = {suffix: _new_table(dynamodb, f"{name}-{suffix}") for suffix in ("eu", "us")}
    pattern = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}-*"
    grant = {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": pattern}
    _function_granted(operator, undo, name, grant, {"TABLE": f"{name}-eu", "MODE": "strict"})
    for table in tables.values():
        dynamodb.delete_table(TableName=table.rsplit("/", 1)[1])
    clients = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer = call_tool(clients, recent_changes, GetRecentChangesArgs(lambda_name=name, hours=1, detail=True))
    assert [s for s in answer.searched if s.startswith("table ")] == [f"table {tables['eu']}"]
    (deleted,) = [event for event in answer.events if event.event_name == "DeleteTable"]
    assert isinstance(deleted, ChangeEventDetail)
    assert deleted.matched == [f"table {tables['eu']}"]
    assert deleted.summary == {"tableName": f"{name}-eu"}


@pytest.fixture
def reader_of_a_table(sandbox: Sandbox, undo: Undo) -> tuple[str, str]:
    """A function whose role may read a new table: its name, and the table's ARN."""
    operator = sandbox.session(names.OPERATOR)
    name = f"reader-{uuid.uuid4().hex[:8]}"
    table = _new_table(operator.client("dynamodb"), f"{name}-table")
    grant = {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": [table, f"{table}/index/*"]}
    _function_granted(operator, undo, name, grant)
    return name, table


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def test_the_change_history_finds_the_deletion_of_a_table_the_role_grants(
    sandbox: Sandbox, reader_of_a_table: tuple[str, str]
) -> None:
    name, table = reader_of_a_table
    sandbox.session(names.OPERATOR).client("dynamodb").delete_table(TableName=f"{name}-table")
    clients = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    args = GetRecentChangesArgs(lambda_name=name, hours=1, detail=True)
    answer = call_tool(clients, recent_changes, args)
    assert answer.searched.count(f"table {table}") == 1  # the index grant names the same table
    (deleted,) = [event for event in answer.events if event.event_name == "DeleteTable"]
    assert isinstance(deleted, ChangeEventDetail)
    assert deleted.matched == [f"table {table}"]
    assert deleted.summary == {"tableName": f"{name}-table"}


async def _diagnosis(answers: dict[str, Any]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses(answers))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    return diagnosis


DELETED: Change = ("DeleteTable", "dynamodb.amazonaws.com", {"tableName": "orders"})
RECREATED: Change = ("CreateTable", "dynamodb.amazonaws.com", {"tableName": "orders"})
OTHER_DELETED: Change = ("DeleteTable", "dynamodb.amazonaws.com", {"tableName": "invoices"})


@pytest.mark.parametrize("success_first", [True, False])
async def test_the_deletion_of_the_table_that_fails_is_the_trigger_before_a_later_unrelated_change(
    success_first: bool,
) -> None:
    """With a success to bound the window any change in it can be the trigger, and one that breaks the
    failing resource is preferred; without one, only such a change is."""
    runs = [Run(10)] if success_first else []
    runs += [Run(30, "node_text_resource_not_found"), Run(40, "node_text_resource_not_found")]
    diagnosis = await _diagnosis(world(runs, [(15, DELETED), (20, DEPLOYMENT)]))
    assert diagnosis.fault_types == ["dependency_failure"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "DeleteTable"


@pytest.mark.parametrize("change", [RECREATED, OTHER_DELETED])
async def test_a_change_that_cannot_break_the_failing_table_is_no_trigger_without_a_success(
    change: Change,
) -> None:
    runs = [Run(30, "node_text_resource_not_found"), Run(40, "node_text_resource_not_found")]
    diagnosis = await _diagnosis(world(runs, [(20, change)]))
    assert diagnosis.fault_types == ["dependency_failure"]
    assert diagnosis.trigger is None


KEY = "arn:aws:kms:ca-central-1:123456789012:key/0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"  # the records' key


@pytest.mark.parametrize(
    ("message", "resources"),
    [
        (RECORDS["node_text_key_disabled"]["message"], {("key", KEY)}),  # the escaped quote ends it
        (
            "[ERROR] DisabledException: An error occurred (DisabledException) when calling the Encrypt "
            f"operation: {KEY} is disabled.",
            {("key", KEY)},  # the full stop is not part of it
        ),
        (
            "[ERROR] AccessDeniedException: ... is not authorized to perform: dynamodb:Query on resource: "
            f"{TABLE_ARN}/index/by-customer because no identity-based policy allows it",
            {("table", TABLE_ARN)},
        ),
        (f"INFO sealing with {KEY}", set()),  # not an error line
        (f"ERROR alias arn:aws:kms:{REGION}:{ACCOUNT}:alias/seals is disabled.", set()),  # not a key's ARN
        (f"ERROR arn:aws:logs:{REGION}:{ACCOUNT}:log-group:x failed", set()),  # no resource a function calls
    ],
)
def test_a_resource_an_error_line_names_by_arn_is_searched(message: str, resources: set[Any]) -> None:
    assert logged_resources([{"message": message}]) == resources


KEY_DISABLED: Change = ("DisableKey", "kms.amazonaws.com", {"keyId": KEY.rsplit("/", 1)[-1]})
KEY_SCHEDULED: Change = ("ScheduleKeyDeletion", "kms.amazonaws.com", {"keyId": KEY, "pendingWindowInDays": 7})
OTHER_KEY_DISABLED: Change = (
    "DisableKey",
    "kms.amazonaws.com",
    {"keyId": "9e8d7c6b-5a49-4837-8261-504f3e2d1c0b"},
)


@pytest.mark.parametrize(
    ("record", "change", "command"),
    [
        ("node_text_key_disabled", KEY_DISABLED, f"aws kms enable-key --key-id {KEY}"),
        ("node_text_key_pending_deletion", KEY_SCHEDULED, f"aws kms cancel-key-deletion --key-id {KEY}"),
    ],
)
async def test_the_key_an_error_names_is_the_failing_resource_and_its_change_the_trigger(
    record: str, change: Change, command: str
) -> None:
    """The change to the key the error names (by its id or ARN) is the trigger, not another key's later
    one; the step makes the key usable again."""
    runs = [Run(10), Run(30, record), Run(40, record)]
    diagnosis = await _diagnosis(world(runs, [(15, change), (20, OTHER_KEY_DISABLED)]))
    assert diagnosis.fault_types == ["dependency_failure"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == (change[0], at(15))
    assert KEY in diagnosis.affected_resources
    step = diagnosis.remediation_plan[0]
    assert step.command is not None
    assert step.command.startswith(command), step.command
