"""``get_recent_changes`` against the sandbox: the chaos injectors' changes with who and when, secrets never
returned, newest first, limit and pagination, gaps for a denied lookup, and CloudTrail's delivery delay."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from mcp import Client

from chaos.faults.chaos import Fault
from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import GLOBAL_EVENTS_REGION, AwsClients
from mcp_server.contract import ChangeEvent, ChangeEventDetail, GetRecentChangesArgs, RecentChangesResponse
from mcp_server.errors import DiagnosticToolError
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from mcp_server.tools import change_lookups, changes
from mcp_server.tools.changes import DELIVERY_NOTE, HIDDEN_ENVIRONMENT, SUMMARY_BYTE_CAP, recent_changes
from tests.conftest import Inject, Undo
from tests.reduced_reader import reader_without
from tests.tool_support import call_tool

REGION = names.DEFAULT_REGION
OPERATOR_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{names.ACCOUNT_ID}:function:{names.FUNCTION_NAME}"
LOGS_POLICY_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{names.LOGS_POLICY_NAME}"
VPC_POLICY_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{names.VPC_POLICY_NAME}"
FUNCTION_LABELS = [f"function {names.FUNCTION_NAME}", f"function {FUNCTION_ARN}"]
INPUT_BUCKET_LABEL = f"bucket arn:aws:s3:::{names.INPUT_BUCKET}"
MAPPING_LABELS = [
    f"{operation} of function {names.FUNCTION_NAME}"
    for operation in ("CreateEventSourceMapping", "UpdateEventSourceMapping", "DeleteEventSourceMapping")
]
ROLE_LABEL = f"role {names.ROLE_NAME}"
CLOCK_SLACK = timedelta(seconds=2)  # after a call: until the sandbox has recorded it
# Before a call: rounding only (the sandbox records on this machine's clock, when the request arrives), so
# the same change made by the test before this one, a second or two earlier, is never mistaken for it.
ROUNDING = timedelta(milliseconds=10)
SECRET = "planted-secret-7f3a9c"  # the value no answer may contain


@pytest.fixture
def aws(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


@pytest.fixture
def tag_key(operator: boto3.Session) -> Iterator[str]:
    """A tag key of this test's own, removed from the function afterwards."""
    key = f"changes-test-{uuid.uuid4().hex[:8]}"
    yield key
    operator.client("lambda").untag_resource(Resource=FUNCTION_ARN, TagKeys=[key])


def recent(aws: AwsClients, **args: Any) -> RecentChangesResponse:
    response: RecentChangesResponse = call_tool(
        aws, recent_changes, GetRecentChangesArgs(lambda_name=names.FUNCTION_NAME, **args)
    )
    return response


def only(events: list[ChangeEvent], event_name: str, before: datetime, after: datetime) -> ChangeEvent:
    """The one event named ``event_name`` made between ``before`` and ``after``."""
    found = [
        e
        for e in events
        if e.event_name == event_name
        and before - ROUNDING <= datetime.fromisoformat(e.time) <= after + CLOCK_SLACK
    ]
    assert len(found) == 1, [(e.event_name, e.time) for e in events]
    return found[0]


def assert_newest_first_and_distinct(response: RecentChangesResponse) -> None:
    times = [datetime.fromisoformat(e.time) for e in response.events]
    assert times == sorted(times, reverse=True)
    distinct = {(e.time, e.event_name, json.dumps(e.summary, sort_keys=True)) for e in response.events}
    assert len(distinct) == len(response.events) == response.returned_events


def operator_key(sandbox: Sandbox) -> str:
    credentials = sandbox.session(names.OPERATOR).get_credentials()
    assert credentials is not None
    return str(credentials.access_key)


@dataclass(frozen=True)
class Expected:
    event_name: str
    service: str
    region: str
    matched: list[str]
    summary: dict[str, Any]


def expected_event(fault: Fault, security_group: str) -> Expected:
    """What each injector does to data-processor in the sandbox world, as CloudTrail records it."""
    return {
        "iam-s3": Expected(  # the inline policy grants only s3 actions: it is deleted, not rewritten
            "DeleteRolePolicy",
            "iam.amazonaws.com",
            GLOBAL_EVENTS_REGION,
            [ROLE_LABEL],
            {"roleName": names.ROLE_NAME, "policyName": names.INLINE_POLICY_NAME},
        ),
        "iam-cloudwatch": Expected(
            "DetachRolePolicy",
            "iam.amazonaws.com",
            GLOBAL_EVENTS_REGION,
            [ROLE_LABEL],
            {"roleName": names.ROLE_NAME, "policyArn": LOGS_POLICY_ARN},
        ),
        "throttle": Expected(
            "PutFunctionConcurrency20171031",
            "lambda.amazonaws.com",
            REGION,
            FUNCTION_LABELS,
            {"functionName": names.FUNCTION_NAME, "reservedConcurrentExecutions": 0},
        ),
        "network": Expected(
            "RevokeSecurityGroupEgress",
            "ec2.amazonaws.com",
            REGION,
            [f"security group {security_group}"],
            {
                "groupId": security_group,
                "ipPermissions": [
                    {
                        "ipProtocol": "tcp",
                        "fromPort": 443,
                        "toPort": 443,
                        "ipRanges": [{"description": "HTTPS to AWS APIs", "cidrIp": "0.0.0.0/0"}],
                    }
                ],
            },
        ),
    }[fault.name]


@pytest.mark.parametrize(
    "fault", [REVOKE_S3, REVOKE_CLOUDWATCH, THROTTLE, BLOCK_EGRESS], ids=lambda f: f.name
)
def test_each_injected_fault_appears_with_the_operator_and_its_time(
    sandbox: Sandbox, aws: AwsClients, inject: Inject, fault: Fault
) -> None:
    expected = expected_event(fault, sandbox.world.security_group_id)
    before = datetime.now(UTC)
    inject(fault)
    after = datetime.now(UTC)

    response = recent(aws, detail=True)

    event = only(response.events, expected.event_name, before, after)
    assert isinstance(event, ChangeEventDetail)
    # By default the same event, without what only `detail` asks for.
    compact = only(recent(aws).events, expected.event_name, before, after)
    assert type(compact) is ChangeEvent
    assert compact.model_dump() == event.model_dump(include=set(ChangeEvent.model_fields))
    key = operator_key(sandbox)
    assert (event.identity_arn, event.identity_type, event.access_key_id) == (
        OPERATOR_ARN,
        "IAMUser",
        f"{key[:4]}…{key[-4:]}",
    )
    assert (event.service, event.region, event.matched) == (
        expected.service,
        expected.region,
        expected.matched,
    )
    assert (event.summary, event.error_code) == (expected.summary, None)
    assert key not in response.model_dump_json()
    assert response.note == DELIVERY_NOTE
    # The session's history may outgrow the lookups' pages (a busy account): then each gap says its search
    # stopped before this test's change, so nothing since it was left unread.
    for gap in response.gaps:
        stopped = re.fullmatch(
            r"stopped reading because .+: its changes before (\S+) were not searched", gap.meaning
        )
        assert stopped is not None, gap
        assert datetime.fromisoformat(stopped[1]) < before, gap
    assert_newest_first_and_distinct(response)


def test_what_is_searched_is_the_function_its_role_policies_and_network(
    sandbox: Sandbox, aws: AwsClients
) -> None:
    world = sandbox.world
    response = recent(aws, hours=1)
    assert response.searched == [
        *FUNCTION_LABELS,
        ROLE_LABEL,
        f"policy {LOGS_POLICY_ARN}",
        f"policy {VPC_POLICY_ARN}",
        f"security group {world.security_group_id}",
        f"subnet {world.subnet_id}",  # the interfaces made there take its addresses
        f"network ACL {world.network_acl_id}",
        f"route table {world.route_table_id}",
        *MAPPING_LABELS,
        INPUT_BUCKET_LABEL,  # what the role grants by name
    ]
    end, start = datetime.fromisoformat(response.window_end), datetime.fromisoformat(response.window_start)
    assert end - start == timedelta(hours=1)
    assert abs(datetime.now(UTC) - end) < timedelta(seconds=30)


def test_a_policy_write_shows_the_document_and_a_long_one_is_cut_visibly(
    operator: boto3.Session, aws: AwsClients, undo: Undo
) -> None:
    iam = operator.client("iam")
    name = f"changes-test-{uuid.uuid4().hex[:8]}"
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::changes-test-none/*"}
    small = {"Version": "2012-10-17", "Statement": [statement]}
    large = {
        "Version": "2012-10-17",
        "Statement": [statement | {"Sid": f"Statement{i:03}"} for i in range(60)],
    }
    assert len(json.dumps(large)) > SUMMARY_BYTE_CAP
    undo(lambda: iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=name))
    before = datetime.now(UTC)
    iam.put_role_policy(RoleName=names.ROLE_NAME, PolicyName=name, PolicyDocument=json.dumps(small))
    iam.put_role_policy(RoleName=names.ROLE_NAME, PolicyName=name, PolicyDocument=json.dumps(large))
    after = datetime.now(UTC)

    events = [e for e in recent(aws, hours=1).events if e.event_name == "PutRolePolicy"]

    newest, older = events[0], events[1]
    assert older.summary == {"roleName": names.ROLE_NAME, "policyName": name, "policyDocument": small}
    assert older.identity_arn == newest.identity_arn == OPERATOR_ARN
    assert before - CLOCK_SLACK <= datetime.fromisoformat(older.time) <= after + CLOCK_SLACK
    excerpt = newest.summary["excerpt"]
    assert list(newest.summary) == ["excerpt"]
    assert excerpt.startswith(f'{{"roleName": "{names.ROLE_NAME}", "policyName": "{name}"')
    assert re.search(r" …\[truncated [0-9]+ bytes\]$", excerpt)
    assert len(excerpt.encode()) <= SUMMARY_BYTE_CAP


def test_summaries_share_a_byte_budget_newest_first(aws: AwsClients, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "SUMMARIES_BYTE_CAP", 300)

    summaries = [e.summary for e in recent(aws, limit=20).events]

    whole = [s for s in summaries if "excerpt" not in s]
    cut = summaries[len(whole) :]
    assert whole == summaries[: len(whole)]  # the newest keep theirs
    assert sum(len(json.dumps(s)) for s in whole) <= 300
    assert cut
    assert all(re.search(r"…\[truncated [0-9]+ bytes\]$", s["excerpt"]) for s in cut)


def test_an_environment_change_shows_which_fields_changed_and_never_a_value(
    operator: boto3.Session, aws: AwsClients, undo: Undo
) -> None:
    lambda_client = operator.client("lambda")
    prior = lambda_client.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    variables = (prior.get("Environment") or {}).get("Variables") or {}
    undo(
        lambda: lambda_client.update_function_configuration(
            FunctionName=names.FUNCTION_NAME, Environment={"Variables": variables}
        )
    )
    lambda_client.update_function_configuration(
        FunctionName=names.FUNCTION_NAME, Environment={"Variables": variables | {"API_TOKEN": SECRET}}
    )

    response = recent(aws, hours=1)

    event = response.events[0]
    assert event.event_name == "UpdateFunctionConfiguration20150331v2"
    assert event.summary == {
        "changed_fields": ["environment"],
        "functionName": names.FUNCTION_NAME,
        "environment": HIDDEN_ENVIRONMENT,  # the sandbox hides names and values, as AWS does
    }
    assert SECRET not in response.model_dump_json()


def test_read_only_events_are_left_out(sandbox: Sandbox, operator: boto3.Session, aws: AwsClients) -> None:
    sts = sandbox.session(names.LAMBDA_SERVICE).client("sts", region_name=GLOBAL_EVENTS_REGION)
    sts.assume_role(RoleArn=sandbox.world.role_arn, RoleSessionName="changes-test")
    recorded = operator.client("cloudtrail", region_name=GLOBAL_EVENTS_REGION).lookup_events(
        LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": names.ROLE_NAME}], MaxResults=1
    )["Events"]
    assert [(e["EventName"], e["ReadOnly"]) for e in recorded] == [("AssumeRole", "true")]

    response = recent(aws, hours=1)

    assert "AssumeRole" not in [e.event_name for e in response.events]


def test_a_lookup_stopped_at_its_page_cap_is_a_gap(
    operator: boto3.Session, aws: AwsClients, tag_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_lookups, "PAGE_SIZE", 1)
    monkeypatch.setattr(change_lookups, "WRITE_PAGES", 1)
    monkeypatch.setattr(change_lookups, "SEARCH_PAGES", 2)
    for value in "abcd":  # the writes lookup reads the newest; the function's own lookup, 2 of the 3 before
        operator.client("lambda").tag_resource(Resource=FUNCTION_ARN, Tags={tag_key: value})

    response = recent(aws)

    source = f"cloudtrail:LookupEvents of {FUNCTION_LABELS[0]} ({REGION})"
    gap = next((g for g in response.gaps if g.source == source), None)
    assert gap is not None, response.gaps
    assert gap.error_code is None
    capped = re.fullmatch(
        r"stopped reading because its cap of 2 pages of 1 was reached: its changes before (\S+) were not "
        r"searched",
        gap.meaning,
    )
    assert capped is not None, gap.meaning
    assert datetime.fromisoformat(capped[1]) <= datetime.now(UTC)
    assert response.more_events


def serve_lookups(client: Any, events_by_name: dict[str, list[dict[str, Any]]]) -> None:
    """Answer ``client``'s LookupEvents from ``events_by_name`` (by the ResourceName looked up), without
    sending them: for events as a source other than the sandbox may record them."""

    def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        value = json.loads(params["body"])["LookupAttributes"][0]["AttributeValue"]  # "false": the writes
        return AWSResponse("", 200, {}, None), {"Events": events_by_name.get(value, [])}

    client.meta.events.register("before-call.cloudtrail.LookupEvents", answer)


def test_environment_variable_values_are_never_returned_even_when_the_event_shows_them(
    aws: AwsClients,
) -> None:
    environment = {"variables": {"API_TOKEN": SECRET, "STAGE": "prod"}}
    record = {
        "eventName": "UpdateFunctionConfiguration20150331v2",
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/deployer/ci"},
        "requestParameters": {"functionName": names.FUNCTION_NAME, "environment": environment, "timeout": 9},
        "responseElements": {"environment": environment},
    }
    event = {
        "EventId": "e-1",
        "EventName": "UpdateFunctionConfiguration20150331v2",
        "ReadOnly": "false",
        "EventTime": datetime.now(UTC),
        "EventSource": "lambda.amazonaws.com",
        "Resources": [{"ResourceType": "AWS::Lambda::Function", "ResourceName": names.FUNCTION_NAME}],
        "CloudTrailEvent": json.dumps(record),
    }
    serve_lookups(aws.client("cloudtrail", REGION), {"false": [event]})
    serve_lookups(aws.client("cloudtrail", GLOBAL_EVENTS_REGION), {})

    response = recent(aws)

    assert [e.summary for e in response.events] == [
        {
            "changed_fields": ["environment", "timeout"],
            "functionName": names.FUNCTION_NAME,
            "environment": {"variable_names": ["API_TOKEN", "STAGE"]},
            "timeout": 9,
        }
    ]
    assert SECRET not in response.model_dump_json()


def test_limit_and_pagination_return_each_event_once_newest_first(
    operator: boto3.Session, aws: AwsClients, tag_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_lookups, "PAGE_SIZE", 3)
    lambda_client = operator.client("lambda")
    keys = [f"{tag_key}-{i}" for i in range(4)]
    for key in keys:
        lambda_client.tag_resource(Resource=FUNCTION_ARN, Tags={key: "v"})
        lambda_client.untag_resource(Resource=FUNCTION_ARN, TagKeys=[key])
    made = [
        step
        for key in reversed(keys)
        for step in (("UntagResource20170331v2", key), ("TagResource20170331v2", key))
    ]
    pages = count_requests(aws.client("cloudtrail", REGION))

    limited = recent(aws, hours=1, limit=5)
    assert [tagging(e) for e in limited.events] == made[:5]
    assert (limited.returned_events, limited.more_events) == (5, True)
    assert limited.matched_events > 5
    assert_newest_first_and_distinct(limited)

    eight = recent(aws, hours=1, limit=8)
    assert [tagging(e) for e in eight.events] == made
    assert_newest_first_and_distinct(eight)
    assert pages() >= 3  # our 8 writes alone fill 3 pages of 3: read page by page, with NextToken


def tagging(event: ChangeEvent) -> tuple[str, str]:
    keys = list(event.summary.get("tags") or {}) + list(event.summary.get("tagKeys") or [])
    return event.event_name, keys[0] if keys else ""


def count_requests(client: Any) -> Any:
    sent: list[int] = []
    client.meta.events.register("before-send.cloudtrail.LookupEvents", lambda **_: sent.append(1))
    return lambda: len(sent)


def test_an_unknown_function_is_a_tool_error_naming_it_and_its_region(aws: AwsClients) -> None:
    lookups = (
        count_requests(aws.client("cloudtrail", REGION)),
        count_requests(aws.client("cloudtrail", GLOBAL_EVENTS_REGION)),
    )
    with pytest.raises(DiagnosticToolError) as raised:
        call_tool(aws, recent_changes, GetRecentChangesArgs(lambda_name="no-such-function"))
    assert "no-such-function" in str(raised.value)
    assert REGION in str(raised.value)
    assert "ResourceNotFoundException" in str(raised.value)
    assert [count() for count in lookups] == [0, 0]


@pytest.fixture
def without_lookup_events(sandbox: Sandbox) -> Iterator[AwsClients]:
    """Clients of a new identity holding every action the MCP server needs except cloudtrail:LookupEvents.
    (The ``watchdog`` profile cannot read the function's configuration either.)"""
    with reader_without(sandbox, "cloudtrail:LookupEvents") as session:
        yield AwsClients.create(ServerSettings(), session)


def test_a_denied_lookup_is_a_gap_for_each_resource(
    sandbox: Sandbox, without_lookup_events: AwsClients
) -> None:
    world = sandbox.world
    response = recent(without_lookup_events)

    assert (response.events, response.matched_events) == ([], 0)
    assert [(g.source, g.error_code) for g in response.gaps] == [
        (f"cloudtrail:LookupEvents of the writes in {region}", "AccessDeniedException")
        for region in (REGION, GLOBAL_EVENTS_REGION)
    ]
    regional = ", ".join(
        [
            *FUNCTION_LABELS,
            f"security group {world.security_group_id}",
            f"subnet {world.subnet_id}",
            f"network ACL {world.network_acl_id}",
            f"route table {world.route_table_id}",
            *MAPPING_LABELS,
            INPUT_BUCKET_LABEL,
        ]
    )
    assert [g.meaning for g in response.gaps] == [
        f"the MCP server's identity is not allowed to read it: changes to {labels} in the window are unknown"
        for labels in (regional, f"{ROLE_LABEL}, policy {LOGS_POLICY_ARN}, policy {VPC_POLICY_ARN}")
    ]


def test_an_undelivered_change_is_missing_and_the_note_says_so(
    sandbox: Sandbox, operator: boto3.Session, aws: AwsClients, tag_key: str, undo: Undo
) -> None:
    undo(lambda: sandbox.set_cloudtrail_delay(0))
    sandbox.set_cloudtrail_delay(300)
    operator.client("lambda").tag_resource(Resource=FUNCTION_ARN, Tags={tag_key: "v"})

    hidden = recent(aws, hours=1)
    sandbox.set_cloudtrail_delay(0)
    delivered = recent(aws, hours=1)

    tagged = ("TagResource20170331v2", tag_key)
    assert tagged not in [tagging(e) for e in hidden.events]
    assert "the newest changes may be missing" in hidden.note
    assert tagging(delivered.events[0]) == tagged


async def test_an_mcp_client_gets_the_output_schema_and_structured_content(aws: AwsClients) -> None:
    async with Client(build_server(ServerSettings(), aws)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool(
            "get_recent_changes", {"lambda_name": names.FUNCTION_NAME, "hours": 1, "limit": 2}
        )
    schema = tools["get_recent_changes"].output_schema
    assert schema is not None
    assert {"events", "matched_events", "note", "gaps", "searched"} <= set(schema["properties"])
    assert not result.is_error
    response = RecentChangesResponse.model_validate(result.structured_content)
    assert response.returned_events == len(response.events) <= 2
