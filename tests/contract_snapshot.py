"""What models and MCP hosts are shown, as one JSON document: the tools the server lists (schemas, titles,
descriptions, hints), the specs the supervisor binds, its system prompt and the diagnosis schema.

``tests/golden/contract.json`` holds the committed copy; ``tests/test_contract_snapshot.py`` fails when the
code shows something else. After a deliberate change: ``.venv/bin/python -m tests.contract_snapshot``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import boto3

from mcp_server.aws import AwsClients
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent import prompt
from supervisor.schemas import Diagnosis

GOLDEN = Path(__file__).parent / "golden" / "contract.json"


async def _listed_tools() -> list[dict[str, Any]]:
    settings = ServerSettings(mcp_api_key="k" * 32)
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="ca-central-1")
    tools = await build_server(settings, AwsClients(settings, session)).list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def snapshot() -> dict[str, Any]:
    return {
        "mcp_tools": asyncio.run(_listed_tools()),
        "supervisor_tool_specs": prompt.tool_specs(),
        "system_prompt": prompt.SYSTEM_PROMPT.splitlines(),
        "diagnosis_schema": Diagnosis.model_json_schema(),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    GOLDEN.write_text(render(snapshot()))
    print(f"wrote {GOLDEN}")
