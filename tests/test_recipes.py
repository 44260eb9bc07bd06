"""The recipes of docs/architecture.md, kept true: a throwaway tool and a throwaway fault class, each one
declaration in a temporary module, appear everywhere they should and nothing else is edited.

Each runs in a fresh interpreter that adds a temporary directory to the registry's package path before
anything reads the registry (registries are read once, at import), so the committed tree stays as it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

THROWAWAY_FAMILY = '''
from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments
from mcp_server.contract.declaration import ToolDeclaration


class GetQueueStateArgs(TargetArguments):
    """Arguments of ``get_queue_state``."""

    minutes: int = Field(default=15, ge=1, le=60, description="How far back.")


class QueueStateResponse(ContractModel):
    function_name: str = Field(description="The function.")
    oldest_message_age_seconds: int | None = Field(default=None, description="The backlog's age.")
    gaps: Gaps = Field(default_factory=list)


GET_QUEUE_STATE = ToolDeclaration(
    name="get_queue_state",
    title="Queue backlog",
    description="The function's SQS event sources and how old their oldest message is.",
    arguments=GetQueueStateArgs,
    response=QueueStateResponse,
    implementation="throwaway_queue_tool:queue_state",
    reads=(("sqs", "GetQueueAttributes"), ("lambda", "ListEventSourceMappings")),
    order=90,
    benchmark_arguments=({}, {"minutes": 60}),
)
'''

THROWAWAY_TOOL = """
from mcp_server.contract.throwaway_queue import QueueStateResponse


def queue_state(ctx, args):
    return QueueStateResponse(function_name=ctx.target.function, oldest_message_age_seconds=42)
"""

TOOL_PROBE = """
import asyncio, json, sys

import mcp_server.contract as contract

contract.__path__.append(sys.argv[1])
sys.path.insert(0, sys.argv[2])

import boto3
from mcp import Client

from deploy.policies import mcp_server_statements
from chaos.sandbox.identities import policy_documents
from chaos.sandbox import names
from docgen.code_tables import tools_table
from evals.record import planned_calls
from evals.tokens import PARTS
from mcp_server.aws import AwsClients
from mcp_server.permissions import ALLOWED_OPERATIONS, required_iam_actions
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent import prompt
from supervisor.schemas import EvidencePointer


async def served():
    settings = ServerSettings(mcp_api_key="k" * 32)
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="ca-central-1")
    async with Client(build_server(settings, AwsClients(settings, session))) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        answer = await client.call_tool("get_queue_state", {"lambda_name": "data-processor", "minutes": 5})
    tool = tools["get_queue_state"]
    return {
        "listed": list(tools),
        "title": tool.title,
        "read_only": tool.annotations.read_only_hint,
        "input": sorted(tool.input_schema["properties"]),
        "output": sorted(tool.output_schema["properties"]),
        "answer": answer.structured_content,
    }


deploy_actions = [a for s in mcp_server_statements() if isinstance(s, dict) for a in s.get("Action", [])]
sandbox_policy = json.loads(policy_documents()[names.MCP_SERVER])
print(json.dumps({
    **asyncio.run(served()),
    "allowlist": ["sqs", "GetQueueAttributes"] in [list(o) for o in ALLOWED_OPERATIONS],
    "iam": "sqs:GetQueueAttributes" in required_iam_actions(),
    "deploy_role": "sqs:GetQueueAttributes" in deploy_actions,
    "sandbox_identity": "sqs:GetQueueAttributes" in sandbox_policy["Statement"][0]["Action"],
    "specs": [spec["function"]["name"] for spec in prompt.diagnostic_specs()],
    "prompt_rule": [line for line in prompt.SYSTEM_PROMPT.splitlines() if line.startswith("2. ")][0],
    "pointer": EvidencePointer(tool="get_queue_state", field="gaps", value="[]", interpretation="x").tool,
    "docs": [line for line in tools_table().splitlines() if "get_queue_state" in line],
    "benchmark": [call for call in planned_calls("f") if call[0] == "get_queue_state"],
    "token_parts": "get_queue_state" in PARTS,
}))
"""


def _probe(tmp_path: Path, probe: str, files: dict[str, str]) -> dict[str, Any]:
    """Write ``files`` (relative path: source) under tmp_path and run ``probe`` with its two directories."""
    for relative, source in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "package"), str(tmp_path / "code")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "AWS_EC2_METADATA_DISABLED": "true"},
    )
    assert result.returncode == 0, result.stderr
    probed: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return probed


def test_adding_a_tool_is_one_declaration_and_its_function(tmp_path: Path) -> None:
    seen = _probe(
        tmp_path,
        TOOL_PROBE,
        {"package/throwaway_queue.py": THROWAWAY_FAMILY, "code/throwaway_queue_tool.py": THROWAWAY_TOOL},
    )
    assert seen["listed"][-1] == "get_queue_state"  # served, in its order
    assert len(seen["listed"]) == 10  # the seven diagnostic tools, get_source_consumers, the history, this
    assert seen["title"] == "Queue backlog"
    assert seen["read_only"] is True
    assert seen["input"] == ["account", "lambda_name", "minutes", "region"]
    assert seen["output"] == ["function_name", "gaps", "oldest_message_age_seconds"]
    assert seen["answer"] == {"function_name": "data-processor", "oldest_message_age_seconds": 42, "gaps": []}
    assert [seen["allowlist"], seen["iam"], seen["deploy_role"], seen["sandbox_identity"]] == [True] * 4
    assert seen["specs"][-1] == "get_queue_state"
    assert "all eight diagnostic tools" in seen["prompt_rule"]
    assert "get_event_sources, get_queue_state). Call one again" in seen["prompt_rule"]
    assert seen["pointer"] == "get_queue_state"
    assert len(seen["docs"]) == 1
    assert "`minutes=15` (≥ 1, ≤ 60)" in seen["docs"][0]
    assert seen["benchmark"] == [
        ["get_queue_state", {"lambda_name": "f"}],
        ["get_queue_state", {"lambda_name": "f", "minutes": 60}],
    ]
    assert seen["token_parts"]


THROWAWAY_CLASS = """
from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import CONFIGURATION_CHANGE, ERRORS

QUEUE_BACKLOG = FaultClass(
    name="queue_backlog",
    description="messages wait in the function's queue longer than it can work them off",
    corroboration=((ERRORS,), (CONFIGURATION_CHANGE,)),
    check="throwaway_backlog_check:check",
    order=95,
    precedence=45,
)
"""

THROWAWAY_CHECK = """
CHECKED = []


def check(c):
    CHECKED.append(c.name)
    return None
"""

CLASS_PROBE = """
import json, sys

import supervisor.faults as faults

faults.__path__.append(sys.argv[1])
sys.path.insert(0, sys.argv[2])

import throwaway_backlog_check
from chaos.drill.scenarios import SCENARIOS
from docgen.code_tables import corroboration_table, fault_classes_table
from evals.definitions import DEFINITIONS
from supervisor.agent import prompt
from supervisor.diagnosis.corroboration import POLICY
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.diagnose import verdicts
from pydantic import TypeAdapter
from supervisor.faults.registry import BY_PRECEDENCE, FAULT_TYPES, FaultType
from supervisor.schemas import DiagnosisSubmission

schema = DiagnosisSubmission.model_json_schema()
verdicts(Conversation(function_name="data-processor", alarm={}))
drilled = {f for s in SCENARIOS for e in s.expected for f in e.fault_types}
cased = {f for d in DEFINITIONS for f in d.faults}
print(json.dumps({
    "fault_types": list(FAULT_TYPES),
    "accepted": TypeAdapter(FaultType).validate_python("queue_backlog"),
    "in_submit_schema": "queue_backlog" in json.dumps(schema),
    "precedence": [f.name for f in BY_PRECEDENCE],
    "checked": throwaway_backlog_check.CHECKED,
    "policy": [s.tool for group in POLICY["queue_backlog"] for s in group],
    "prompt": [l for l in prompt.SUBMIT_GUIDE.splitlines() if l.startswith("- queue_backlog:")],
    "docs": [l for l in corroboration_table().splitlines() if "queue_backlog" in l],
    "classes_table": [l for l in fault_classes_table().splitlines() if "queue_backlog" in l],
    "not_drilled": sorted(set(FAULT_TYPES) - {"unknown"} - drilled),
    "not_in_corpus": sorted(set(FAULT_TYPES) - {"unknown"} - cased),
}))
"""


def test_adding_a_fault_class_is_one_declaration_and_its_check(tmp_path: Path) -> None:
    seen = _probe(
        tmp_path,
        CLASS_PROBE,
        {"package/queue_backlog.py": THROWAWAY_CLASS, "code/throwaway_backlog_check.py": THROWAWAY_CHECK},
    )
    assert seen["fault_types"][-2:] == ["queue_backlog", "unknown"]  # listed in its order, unknown last
    assert seen["accepted"] == "queue_backlog"
    assert seen["in_submit_schema"]
    assert seen["precedence"].index("queue_backlog") == seen["precedence"].index("dependency_failure") + 1
    assert seen["checked"] == ["data-processor"]  # the rules brain ran its check
    assert seen["policy"] == ["get_function_metrics", "get_recent_changes"]
    assert seen["prompt"] == [  # its line among the fault types, and its corroboration
        "- queue_backlog: messages wait in the function's queue longer than it can work them off",
        # both sources are named in full at their first mention, earlier in the policy
        "- queue_backlog: get_function_metrics errors above 0 AND a Lambda configuration change in "
        "get_recent_changes",
    ]
    assert len(seen["docs"]) == 1
    assert " **and** " in seen["docs"][0]
    checked = seen["precedence"].index("queue_backlog") + 1  # its place in the rules brain's order
    assert seen["classes_table"] == [
        "| `queue_backlog` | messages wait in the function's queue longer than it can work them off | "
        f"{checked} | `throwaway_backlog_check` |"
    ]
    # The completeness checks now ask for what the recipe says comes with a class: a scenario and a case.
    assert seen["not_drilled"] == ["queue_backlog"]
    assert seen["not_in_corpus"] == ["queue_backlog"]
