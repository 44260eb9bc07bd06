"""``get_recent_changes``: arguments and answer."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration

# How a ``searched`` label ends for a resource only the function's error lines name: log text, which the
# function itself wrote, so no proof that it uses the resource (a remediation may not act on it for that).
NAMED_BY_ERRORS = " (named by its errors)"
ChangeHours = Annotated[int, Field(ge=1, le=720, description="Hours back from now.")]
ChangeLimit = Annotated[int, Field(ge=1, le=200, description="Most events to return, newest first.")]


class GetRecentChangesArgs(TargetArguments):
    """Arguments of ``get_recent_changes``: management events that touched the function or what it uses."""

    hours: ChangeHours = 24
    limit: ChangeLimit = 50
    detail: bool = Field(
        default=False,
        description="Also each event's id, region, caller type, access key, resources and matches.",
    )


class ChangedResource(ContractModel):
    """A resource CloudTrail lists for an event."""

    type: str | None = Field(default=None, description="e.g. 'AWS::Lambda::Function', 'AWS::IAM::Role'.")
    name: str = Field(description="Its name or ARN, as CloudTrail records it.")


class ChangeEvent(ContractModel):
    """One CloudTrail management event that changed something (read-only calls are left out)."""

    time: str = Field(description="ISO-8601 time of the call.")
    event_name: str = Field(
        description="As CloudTrail names it, e.g. 'DeleteRolePolicy', "
        "'UpdateFunctionConfiguration20150331v2'."
    )
    service: str = Field(description="The event source, e.g. 'iam.amazonaws.com'.")
    identity_arn: str | None = Field(
        default=None,
        description="Who made the call: a user's or assumed-role session's ARN, or the AWS service that "
        "called on the account's behalf.",
    )
    summary: dict[str, Any] = Field(
        default_factory=dict,
        description="What the call asked for, bounded: a policy document written, the configuration fields "
        "changed (`changed_fields`; environment variable names only, never values), the rules, routes or "
        "ACL entries added or removed. A summary too long to show whole is an `excerpt` ending with "
        "'…[truncated N bytes]'.",
    )
    error_code: str | None = omitted_when_null(
        "Only when the call itself failed (nothing changed then).",
    )


class ChangeEventDetail(ChangeEvent):
    """An event with what ``detail`` asks for besides."""

    event_id: str = Field(description="CloudTrail's event id.")
    resources: list[ChangedResource] = Field(default_factory=list, description="As CloudTrail lists them.")
    region: str | None = Field(default=None, description="Where CloudTrail recorded it (IAM: us-east-1).")
    identity_type: str | None = Field(default=None, description="IAMUser, AssumedRole, Root, AWSService, ...")
    access_key_id: str | None = Field(
        default=None, description="The caller's access key, masked: only its first and last 4 characters."
    )
    matched: list[str] = Field(
        default_factory=list, description="Which of the searched resources (see `searched`) it touched."
    )


class RecentChangesResponse(ContractModel):
    """Answer of ``get_recent_changes``."""

    function_name: str
    window_start: str = Field(description="ISO-8601 start of the window searched.")
    window_end: str = Field(description="ISO-8601 end of the window searched (the time of the call).")
    searched: list[str] = Field(
        description="The resources whose events were looked up, e.g. 'role data-processor-role'."
    )
    matched_events: int = Field(
        ge=0,
        description="Distinct changing events found for them in the window (at least this many when "
        "`more_events` is true).",
    )
    more_events: bool = Field(
        default=False,
        description="True when more events matched than were read: older ones beyond `limit` exist.",
    )
    returned_events: int = Field(ge=0)
    events: list[ChangeEventDetail | ChangeEvent] = Field(
        description="Newest first; each with its id, region, caller type, access key, resources and matches "
        "when asked for `detail`."
    )
    note: str = Field(
        description="CloudTrail delivers events minutes after the call: the newest changes may be missing.",
    )
    gaps: Gaps = Field(default_factory=list)


GET_RECENT_CHANGES = ToolDeclaration(
    name="get_recent_changes",
    title="Recent changes (CloudTrail)",
    description=(
        "What changed, when and by whom: CloudTrail events on the function, its versions and aliases, role "
        "and policies, network and event paths, newest first, with what each call asked for. The change "
        "that started a failure is usually here; the newest minutes may not be delivered yet."
    ),
    arguments=GetRecentChangesArgs,
    response=RecentChangesResponse,
    implementation="mcp_server.tools.changes:recent_changes",
    reads=(
        ("cloudtrail", "LookupEvents"),
        ("lambda", "GetFunctionConfiguration"),
        ("lambda", "ListEventSourceMappings"),
        ("lambda", "GetPolicy"),
        ("sns", "ListSubscriptions"),
        ("iam", "ListAttachedRolePolicies"),
        ("iam", "ListRolePolicies"),
        ("iam", "GetRolePolicy"),
        ("iam", "GetPolicy"),
        ("iam", "GetPolicyVersion"),
        ("ec2", "DescribeNetworkAcls"),
        ("ec2", "DescribeRouteTables"),
        ("logs", "FilterLogEvents"),
        ("apigateway", "GetRestApis"),
        ("apigateway", "GetResources"),
        ("apigatewayv2", "GetApis"),
        ("apigatewayv2", "GetIntegrations"),
        ("apigatewayv2", "GetRoutes"),
    ),
    order=50,
)
