"""The published tool contract (mcp_server.contract) and the supervisor's schemas."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from mcp_server.contract import (
    LAMBDA_NAME_PATTERN,
    AttachedPolicy,
    FunctionMetricsResponse,
    GetFunctionMetricsArgs,
    GetIAMStateArgs,
    GetLambdaConfigArgs,
    GetNetworkStateArgs,
    GetRecentChangesArgs,
    GetRecentLogsArgs,
    IAMStateResponse,
    LambdaConfigResponse,
    LogEvent,
    LogsResponse,
    NetworkAcl,
    NetworkAclEntry,
    NetworkStateResponse,
    PermissionsBoundary,
    RecentChangesResponse,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
    VpcConfig,
    function_name_of,
)
from mcp_server.contract.event_sources import EventSourcesResponse, GetEventSourcesArgs
from mcp_server.contract.registry import TOOL_NAMES, TOOLS, ToolName
from supervisor.schemas import (
    AgentError,
    Diagnosis,
    DiagnosisSubmission,
    EvidencePointer,
    PointerCheck,
    RemediationStep,
    TokenUsage,
    ToolProvider,
    Verification,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
ARN = "arn:aws:lambda:ca-central-1:123456789012:function:data-processor"
EXPECTED_TOOLS = {
    "get_recent_logs",
    "get_iam_state",
    "get_lambda_config",
    "get_network_state",
    "get_recent_changes",
    "get_function_metrics",
    "get_event_sources",
}
LAMBDA_ARG_MODELS = [
    GetRecentLogsArgs,
    GetIAMStateArgs,
    GetLambdaConfigArgs,
    GetNetworkStateArgs,
    GetRecentChangesArgs,
    GetFunctionMetricsArgs,
]

VALID_NAMES = [
    "data-processor",
    "a" * 64,
    "A_b-9",
    ARN,
    f"{ARN}:$LATEST",
    f"{ARN}:prod",
    f"{ARN}:7",
    "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:fn",
    "arn:aws-cn:lambda:cn-north-1:123456789012:function:fn",
]
INVALID_NAMES = [
    "../etc",
    "a" * 65,
    "a" * 200,
    "",
    "data\x00processor",
    "data-processor\n",
    "a b",
    " data-processor",
    "data.processor",
    "arn:aws:s3:::bucket",
    "arn:aws:iam::123456789012:role/x",
    "arn:aws:lambda:ca-central-1:123:function:x",
    "arn:aws:lambda:ca-central-1:123456789012:function:",
    "arn:aws:lambda:ca-central-1:123456789012:function:data-processor\n",
    "arn:aws:lambda:ca-central-1:123456789012:function:fn:$latest",
    "arn:aws:lambda:ca-central-1:123456789012:function:fn:",
    f"arn:aws:lambda:ca-central-1:123456789012:function:fn:{'a' * 129}",
    f"arn:aws:lambda:ca-central-1:123456789012:function:{'a' * 65}",
    "arn:aws:lambda:ca-central-1:123456789012:layer:fn",
    "arn:evil:lambda:ca-central-1:123456789012:function:fn",
    "arn:aws:lambda:Central:123456789012:function:fn",
]


# --------------------------------------------------------------------------- tool names


def test_tool_names_match_literal_and_both_registries() -> None:
    assert set(TOOL_NAMES) == EXPECTED_TOOLS
    assert len(TOOL_NAMES) == 7
    # A run's answers may also hold the function's history, which the graph reads itself (never offered).
    assert set(get_args(ToolName)) == EXPECTED_TOOLS | {"get_incident_history"}
    assert set(TOOLS) == EXPECTED_TOOLS


def test_registries_map_each_tool_to_its_model() -> None:
    expected_args = {
        "get_recent_logs": GetRecentLogsArgs,
        "get_iam_state": GetIAMStateArgs,
        "get_lambda_config": GetLambdaConfigArgs,
        "get_network_state": GetNetworkStateArgs,
        "get_recent_changes": GetRecentChangesArgs,
        "get_function_metrics": GetFunctionMetricsArgs,
        "get_event_sources": GetEventSourcesArgs,
    }
    expected_responses = {
        "get_recent_logs": LogsResponse,
        "get_iam_state": IAMStateResponse,
        "get_lambda_config": LambdaConfigResponse,
        "get_network_state": NetworkStateResponse,
        "get_recent_changes": RecentChangesResponse,
        "get_function_metrics": FunctionMetricsResponse,
        "get_event_sources": EventSourcesResponse,
    }
    assert expected_args == {name: tool.arguments for name, tool in TOOLS.items()}
    assert expected_responses == {name: tool.response for name, tool in TOOLS.items()}


# --------------------------------------------------------------------------- lambda_name


@pytest.mark.parametrize("model", LAMBDA_ARG_MODELS)
@pytest.mark.parametrize("name", VALID_NAMES)
def test_valid_lambda_names_accepted(model: type[BaseModel], name: str) -> None:
    assert model.model_validate({"lambda_name": name}).model_dump()["lambda_name"] == name


@pytest.mark.parametrize("model", LAMBDA_ARG_MODELS)
@pytest.mark.parametrize("name", INVALID_NAMES)
def test_invalid_lambda_names_rejected(model: type[BaseModel], name: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        model.model_validate({"lambda_name": name})
    assert excinfo.value.errors()[0]["loc"] == ("lambda_name",)


def test_lambda_name_error_says_what_is_valid() -> None:
    with pytest.raises(ValidationError) as excinfo:
        GetIAMStateArgs(lambda_name="../etc")
    message = excinfo.value.errors()[0]["msg"]
    assert "1-64 characters" in message
    assert "arn:" in message
    assert "function:<name>" in message


def test_lambda_name_must_be_a_string() -> None:
    with pytest.raises(ValidationError):
        GetIAMStateArgs.model_validate({"lambda_name": 123})


def test_lambda_name_is_required() -> None:
    with pytest.raises(ValidationError):
        GetLambdaConfigArgs.model_validate({})


def test_json_schema_publishes_description_and_anchored_pattern() -> None:
    prop = GetNetworkStateArgs.model_json_schema()["properties"]["lambda_name"]
    assert "name or ARN" in prop["description"]
    assert prop["pattern"].startswith("^")
    assert prop["pattern"].endswith("$")
    assert "?P<" not in prop["pattern"]  # named groups are Python-only syntax


def test_lambda_name_pattern_is_exported_as_text() -> None:
    assert isinstance(LAMBDA_NAME_PATTERN, str)
    assert "function:" in LAMBDA_NAME_PATTERN


@pytest.mark.parametrize(
    ("lambda_name", "expected"),
    [
        ("data-processor", "data-processor"),
        (ARN, "data-processor"),
        (f"{ARN}:$LATEST", "data-processor"),
        (f"{ARN}:prod", "data-processor"),
        (f"{ARN}:12", "data-processor"),
    ],
)
def test_function_name_of(lambda_name: str, expected: str) -> None:
    assert function_name_of(lambda_name) == expected


@pytest.mark.parametrize("bad", ["../etc", "", "arn:aws:s3:::bucket", "fn\n"])
def test_function_name_of_rejects_invalid_names(bad: str) -> None:
    with pytest.raises(ValueError, match="lambda_name must be"):
        function_name_of(bad)


# --------------------------------------------------------------------------- argument models


@pytest.mark.parametrize("model", LAMBDA_ARG_MODELS)
def test_extra_argument_rejected(model: type[BaseModel]) -> None:
    with pytest.raises(ValidationError) as excinfo:
        model.model_validate({"lambda_name": "data-processor", "function": "data-processor"})
    assert excinfo.value.errors()[0]["type"] == "extra_forbidden"


@pytest.mark.parametrize("model", LAMBDA_ARG_MODELS)
def test_every_argument_field_is_described(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{name} has no description"


def test_recent_logs_defaults() -> None:
    args = GetRecentLogsArgs(lambda_name="data-processor")
    assert (args.minutes, args.limit, args.filter_pattern) == (30, 50, None)


@pytest.mark.parametrize(("minutes", "ok"), [(0, False), (1, True), (1440, True), (1441, False), (-5, False)])
def test_recent_logs_minutes_bounds(minutes: int, ok: bool) -> None:
    payload = {"lambda_name": "data-processor", "minutes": minutes}
    if ok:
        assert GetRecentLogsArgs.model_validate(payload).minutes == minutes
    else:
        with pytest.raises(ValidationError):
            GetRecentLogsArgs.model_validate(payload)


@pytest.mark.parametrize(("limit", "ok"), [(0, False), (1, True), (1000, True), (1001, False)])
def test_recent_logs_limit_bounds(limit: int, ok: bool) -> None:
    payload = {"lambda_name": "data-processor", "limit": limit}
    if ok:
        assert GetRecentLogsArgs.model_validate(payload).limit == limit
    else:
        with pytest.raises(ValidationError):
            GetRecentLogsArgs.model_validate(payload)


def test_recent_logs_filter_pattern() -> None:
    assert GetRecentLogsArgs(lambda_name="fn", filter_pattern="ERROR").filter_pattern == "ERROR"
    assert GetRecentLogsArgs(lambda_name="fn", filter_pattern="x" * 1024).filter_pattern == "x" * 1024
    with pytest.raises(ValidationError):
        GetRecentLogsArgs(lambda_name="fn", filter_pattern="x" * 1025)
    with pytest.raises(ValidationError, match="NUL"):
        GetRecentLogsArgs(lambda_name="fn", filter_pattern="ERR\x00OR")


# --------------------------------------------------------------------------- logs response


def test_log_event_valid_and_invalid() -> None:
    event = LogEvent(timestamp="2024-05-01T12:00:00.123+00:00", message="boom", log_stream="2024/05/01/x")
    assert event.timestamp == "2024-05-01T12:00:00.123+00:00"
    assert LogEvent(timestamp="2024-05-01T12:00:00Z", message="m").log_stream is None
    for bad in ["yesterday", "1714564800000", "", "2024-13-01T00:00:00"]:
        with pytest.raises(ValidationError):
            LogEvent(timestamp=bad, message="m")
    with pytest.raises(ValidationError):
        LogEvent.model_validate({"timestamp": "2024-05-01T12:00:00Z", "message": "m", "level": "ERROR"})


def test_logs_response_valid_and_invalid() -> None:
    response = LogsResponse.model_validate(
        {
            "log_group": "/aws/lambda/data-processor",
            "events": [{"timestamp": "2024-05-01T12:00:00+00:00", "message": "AccessDenied"}],
            "matched_events": 3,
            "returned_events": 1,
            "dropped_events": 2,
        }
    )
    assert response.events[0].message == "AccessDenied"
    assert (response.error, response.note, response.truncated_messages) == (None, None, 0)
    missing = LogsResponse(log_group="/aws/lambda/x", events=[], note="log group does not exist")
    assert missing.note == "log group does not exist"
    with pytest.raises(ValidationError):
        LogsResponse.model_validate({"events": []})  # log_group missing
    with pytest.raises(ValidationError):
        LogsResponse(log_group="g", events=[], matched_events=-1)
    with pytest.raises(ValidationError):
        LogsResponse.model_validate({"log_group": "g", "events": [], "invented": True})
    with pytest.raises(ValidationError):
        LogsResponse.model_validate({"log_group": "g", "events": [{"timestamp": "now", "message": "m"}]})


# --------------------------------------------------------------------------- IAM response


def test_iam_state_response_valid_and_invalid() -> None:
    document: dict[str, Any] = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"}],
    }
    response = IAMStateResponse.model_validate(
        {
            "role_name": "data-processor-role",
            "role_arn": "arn:aws:iam::123456789012:role/data-processor-role",
            "inline_policies": {"data-processor-access": document},
            "attached_policies": [
                {
                    "policy_name": "AWSLambdaBasicExecutionRole",
                    "policy_arn": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
                    "default_version_id": "v1",
                    "document": document,
                }
            ],
            "permissions_boundary": {"type": "Policy", "arn": "arn:aws:iam::123456789012:policy/b"},
        }
    )
    assert response.inline_policies["data-processor-access"]["Statement"][0]["Effect"] == "Deny"
    assert isinstance(response.attached_policies[0], AttachedPolicy)
    boundary = PermissionsBoundary(type="Policy", arn="arn:aws:iam::123456789012:policy/b")
    assert response.permissions_boundary == boundary
    assert AttachedPolicy(policy_name="p", policy_arn="a").document is None
    with pytest.raises(ValidationError):  # attached_policies missing
        IAMStateResponse.model_validate({"role_name": "r", "inline_policies": {}})
    with pytest.raises(ValidationError):  # a policy document must be an object
        IAMStateResponse.model_validate(
            {"role_name": "r", "inline_policies": {"p": "not a dict"}, "attached_policies": []}
        )
    with pytest.raises(ValidationError):
        AttachedPolicy.model_validate({"policy_name": "p"})  # policy_arn missing
    with pytest.raises(ValidationError):
        PermissionsBoundary.model_validate({"type": "Policy"})  # arn missing


# --------------------------------------------------------------------------- Lambda config response


def test_lambda_config_response_valid_and_invalid() -> None:
    response = LambdaConfigResponse.model_validate(
        {
            "FunctionName": "data-processor",
            "FunctionArn": ARN,
            "Runtime": "python3.12",
            "MemorySize": 128,
            "Timeout": 30,
            "ReservedConcurrentExecutions": 0,
            "VpcConfig": {"SubnetIds": ["subnet-1"], "SecurityGroupIds": ["sg-1"], "VpcId": "vpc-1"},
        }
    )
    assert response.ReservedConcurrentExecutions == 0
    assert isinstance(response.VpcConfig, VpcConfig)
    assert response.VpcConfig.SubnetIds == ["subnet-1"]
    minimal = LambdaConfigResponse(FunctionName="data-processor")
    assert minimal.ReservedConcurrentExecutions is None
    assert minimal.VpcConfig is None
    assert VpcConfig().SubnetIds == []
    with pytest.raises(ValidationError):
        LambdaConfigResponse.model_validate({"Runtime": "python3.12"})  # FunctionName missing
    with pytest.raises(ValidationError):
        LambdaConfigResponse.model_validate({"FunctionName": "f", "function_name": "f"})  # wrong casing
    with pytest.raises(ValidationError):
        LambdaConfigResponse.model_validate({"FunctionName": "f", "MemorySize": "lots"})
    with pytest.raises(ValidationError):
        LambdaConfigResponse.model_validate({"FunctionName": "f", "ReservedConcurrentExecutions": -1})
    with pytest.raises(ValidationError):
        VpcConfig.model_validate({"subnet_ids": []})


# --------------------------------------------------------------------------- network response


def _network_payload() -> dict[str, Any]:
    rule = {"ip_protocol": "tcp", "from_port": 443, "to_port": 443, "ipv4_ranges": ["0.0.0.0/0"]}
    return {
        "function_name": "data-processor",
        "in_vpc": True,
        "vpc_id": "vpc-1",
        "security_groups": [
            {"group_id": "sg-1", "group_name": "lambda", "vpc_id": "vpc-1", "ingress": [], "egress": [rule]}
        ],
        "subnets": [
            {
                "subnet_id": "subnet-1",
                "vpc_id": "vpc-1",
                "cidr_block": "10.0.1.0/24",
                "availability_zone": "ca-central-1a",
                "network_acl": {
                    "network_acl_id": "acl-1",
                    "entries": [
                        {
                            "rule_number": 100,
                            "protocol": "-1",
                            "rule_action": "deny",
                            "egress": True,
                            "cidr_block": "0.0.0.0/0",
                        }
                    ],
                },
            }
        ],
        "https_egress_allowed": True,
    }


def test_network_state_response_valid() -> None:
    response = NetworkStateResponse.model_validate(_network_payload())
    assert isinstance(response.security_groups[0], SecurityGroup)
    assert isinstance(response.security_groups[0].egress[0], SecurityGroupRule)
    assert response.security_groups[0].egress[0].prefix_list_ids == []
    assert isinstance(response.subnets[0], Subnet)
    acl = response.subnets[0].network_acl
    assert isinstance(acl, NetworkAcl)
    assert isinstance(acl.entries[0], NetworkAclEntry)
    assert acl.entries[0].rule_action == "deny"
    assert acl.entries[0].port_from is None
    outside = NetworkStateResponse(function_name="fn", in_vpc=False)
    assert (outside.security_groups, outside.subnets, outside.https_egress_allowed) == ([], [], None)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda p: p.pop("in_vpc"),
        lambda p: p.update(extra_field=1),
        lambda p: p["security_groups"][0].pop("egress"),
        lambda p: p["security_groups"][0]["egress"][0].update(from_port="https"),
        lambda p: p["security_groups"][0]["egress"][0].pop("to_port"),
        lambda p: p["subnets"][0]["network_acl"]["entries"][0].update(rule_action="block"),
        lambda p: p["subnets"][0]["network_acl"]["entries"][0].update(rule_number=0),
        lambda p: p["subnets"][0]["network_acl"]["entries"][0].pop("cidr_block"),
        lambda p: p["subnets"][0].pop("network_acl"),
        lambda p: p["subnets"][0]["network_acl"].pop("network_acl_id"),
    ],
)
def test_network_state_response_invalid(corrupt: Any) -> None:
    payload = _network_payload()
    corrupt(payload)
    with pytest.raises(ValidationError):
        NetworkStateResponse.model_validate(payload)


# --------------------------------------------------------------------------- Diagnosis


def _diagnosis_payload() -> dict[str, Any]:
    return {
        "root_cause": "The execution role's inline policy denies s3:GetObject.",
        "fault_types": ["permission_loss"],
        "affected_resources": ["data-processor", "data-processor-role"],
        "severity": "high",
        "evidence": [
            {
                "tool": "get_iam_state",
                "field": "inline_policies.data-processor-access.Statement.0.Effect",
                "value": "Deny",
                "interpretation": "The role is explicitly denied the read it needs.",
            },
            {
                "tool": "get_recent_logs",
                "field": "events.3.message",
                "value": "AccessDenied",
                "interpretation": "Invocations fail on the denied call.",
            },
        ],
        "remediation_plan": [
            {
                "action": "Restore s3:GetObject",
                "details": "Change the statement's Effect back to Allow.",
                "evidence_basis": [0, 1],
                "risk_level": "medium",
                "requires_approval": True,
            }
        ],
        "confidence": 0.8,
    }


def test_diagnosis_valid() -> None:
    diagnosis = DiagnosisSubmission.model_validate(_diagnosis_payload())
    assert diagnosis.fault_types == ["permission_loss"]
    assert isinstance(diagnosis.evidence[0], EvidencePointer)
    assert isinstance(diagnosis.remediation_plan[0], RemediationStep)
    assert diagnosis.remediation_plan[0].evidence_basis == [0, 1]
    assert DiagnosisSubmission.model_validate_json(diagnosis.model_dump_json()) == diagnosis


def test_accepted_diagnosis_carries_its_verification() -> None:
    with pytest.raises(ValidationError, match="verification"):
        Diagnosis.model_validate(_diagnosis_payload())
    verification = Verification(
        pointers=[
            PointerCheck(index=0, verified=True, reason=""),
            PointerCheck(index=1, verified=False, reason="x"),
        ],
        unsupported_fault_types=[],
        refinement_turns=1,
        claimed_confidence=0.8,
    )
    diagnosis = Diagnosis.model_validate(_diagnosis_payload() | {"verification": verification})
    assert (diagnosis.verification.passed, diagnosis.verification.verified_count) == (False, 1)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d.update(fault_types=["disk_full"]),
        lambda d: d.update(fault_types=["throttling", "throttling"]),
        lambda d: d.update(fault_types=[]),
        lambda d: d.update(severity="catastrophic"),
        lambda d: d.update(root_cause=""),
        lambda d: d.update(confidence=1.5),
        lambda d: d.update(confidence=-0.1),
        lambda d: d.pop("confidence"),
        lambda d: d.update(verification={}),  # set by the code, never by the model
        lambda d: d["evidence"][0].update(value=""),
        lambda d: d["evidence"][0].update(supports="disk_full"),
        lambda d: d["remediation_plan"][0].update(risk_level="extreme"),
        lambda d: d["remediation_plan"][0].update(evidence_basis=[-1]),
        lambda d: d["remediation_plan"][0].update(evidence_basis=[2]),  # only two evidence pointers
        lambda d: d["evidence"][0].update(tool="get_everything"),
        lambda d: d["evidence"][0].update(field=""),
        lambda d: d["evidence"][0].update(field="events..message"),
        lambda d: d["evidence"][0].update(field=".events"),
        lambda d: d["evidence"][0].pop("interpretation"),
    ],
)
def test_diagnosis_invalid(corrupt: Any) -> None:
    payload = _diagnosis_payload()
    corrupt(payload)
    with pytest.raises(ValidationError):
        DiagnosisSubmission.model_validate(payload)


def test_diagnosis_accepts_several_distinct_fault_types() -> None:
    payload = _diagnosis_payload()
    payload["fault_types"] = ["permission_loss", "network_block"]
    assert DiagnosisSubmission.model_validate(payload).fault_types == ["permission_loss", "network_block"]


def test_token_usage() -> None:
    usage = TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert usage.total_tokens == 15
    with pytest.raises(ValidationError):
        TokenUsage(prompt_tokens=-1, completion_tokens=0, total_tokens=0)
    with pytest.raises(ValidationError):
        TokenUsage.model_validate({"prompt_tokens": 1, "completion_tokens": 1})


# --------------------------------------------------------------------------- ToolProvider, AgentError


class _FakeProvider:
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return "{}"


class _NotAProvider:
    async def invoke(self, name: str) -> str:
        return "{}"


def test_tool_provider_is_runtime_checkable() -> None:
    assert isinstance(_FakeProvider(), ToolProvider)
    assert not isinstance(_NotAProvider(), ToolProvider)
    assert not isinstance(object(), ToolProvider)


def test_agent_error() -> None:
    error = AgentError("mcp_connection", "cannot reach http://localhost:8080/mcp")
    assert str(error) == "[mcp_connection] cannot reach http://localhost:8080/mcp"
    assert error.category == "mcp_connection"
    assert error.message == "cannot reach http://localhost:8080/mcp"
    assert isinstance(error, Exception)
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - round-trips our own object
    assert str(copy) == str(error)
    assert copy.category == "mcp_connection"
    with pytest.raises(AgentError, match=r"^\[config\] missing MCP_URL$"):
        raise AgentError("config", "missing MCP_URL")


# --------------------------------------------------------------------------- import weight


@pytest.mark.parametrize("module", ["mcp_server", "mcp_server.contract"])
def test_contract_import_is_light(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('mcp', 'boto3', 'botocore', 'langchain_core') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    pythonpath = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": pythonpath}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


# --------------------------------------------------------------------------- supervisor settings


def test_supervisor_settings_read_shared_names_and_prefixed_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from supervisor.settings import SupervisorSettings

    monkeypatch.setenv("MCP_SERVER_URL", "http://mcp.internal:8080/mcp")
    monkeypatch.setenv("MAX_TOKENS_PER_INCIDENT", "5000")
    monkeypatch.setenv("SUPERVISOR_RECURSION_LIMIT", "7")
    monkeypatch.setenv("RECURSION_LIMIT", "99")  # unprefixed generic names are not ours
    settings = SupervisorSettings()
    assert (settings.mcp_transport, settings.max_tokens_per_incident, settings.recursion_limit) == (
        "http",
        5000,
        7,
    )
    assert SupervisorSettings(recursion_limit=5).recursion_limit == 5  # field names work in code


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mcp_server_url": "localhost:8080"}, "MCP_SERVER_URL must be an http(s) URL"),
        ({"supervisor_model": "claude"}, "SUPERVISOR_MODEL must be 'rules' or 'provider:model'"),
        ({"recursion_limit": 1}, "greater than or equal to 3"),
    ],
)
def test_supervisor_settings_reject_bad_values(overrides: dict[str, Any], message: str) -> None:
    from supervisor.settings import SupervisorSettings

    with pytest.raises(ValidationError, match=re.escape(message)):
        SupervisorSettings(**overrides)
