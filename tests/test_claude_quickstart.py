"""The README's Claude Desktop quickstart, followed literally: its shell steps run as written (in a
directory of their own, with this checkout's .venv), and the printed entry is spawned exactly as Claude
Desktop would spawn it, over stdio, to answer a tool call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from chaos.sandbox import names
from mcp_server.claude_config import claude_desktop_config, config_warnings

ROOT = Path(__file__).resolve().parents[1]
SHELL_BLOCK = re.compile(r"^[ ]*```sh\n(?P<body>.*?)^[ ]*```", re.MULTILINE | re.DOTALL)


def _quickstart_steps() -> list[str]:
    readme = (ROOT / "docs" / "tools.md").read_text()
    section = readme.split("\n### Claude Desktop\n", 1)[1].split("\n### ", 1)[0]
    section = section.split("Remote SSE server", 1)[0]
    return [textwrap.dedent(match["body"]) for match in SHELL_BLOCK.finditer(section)]


def _run(step: str, cwd: Path) -> str:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step],
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_"))},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{step}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    """A working directory whose .venv is this checkout's; the sandbox it starts is stopped after."""
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    yield tmp_path
    subprocess.run(
        [str(tmp_path / ".venv" / "bin" / "incident-sandbox"), "down"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )


@pytest.fixture
def printed_entry(checkout: Path) -> dict[str, Any]:
    """Steps 1 and 2 as the README writes them: the sandbox up, the entry printed."""
    up, print_config = _quickstart_steps()
    assert "incident-sandbox up --detach" in up
    _run(up, checkout)
    config: dict[str, Any] = json.loads(_run(print_config, checkout))
    entry: dict[str, Any] = config["mcpServers"]["incident-response"]
    assert Path(entry["command"]).is_absolute()
    assert Path(entry["command"]).exists()
    assert entry["env"]["AWS_PROFILE"] == names.MCP_SERVER
    for variable in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        assert Path(entry["env"][variable]).parent == checkout / ".sandbox"
    assert not any("SECRET" in name or "KEY" in name for name in entry["env"])
    return entry


async def test_the_readme_quickstart_answers_a_tool_call(printed_entry: dict[str, Any]) -> None:
    """Step 3: exactly what Claude Desktop runs (the SDK adds only a safe default environment such as
    PATH and HOME, as Claude Desktop does)."""
    params = StdioServerParameters(
        command=printed_entry["command"], args=printed_entry["args"], env=printed_entry["env"]
    )
    async with Client(params) as client:
        result = await client.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["FunctionName"] == names.FUNCTION_NAME


def test_secrets_in_the_environment_are_never_printed() -> None:
    environ = {
        "AWS_PROFILE": "reader",
        "AWS_CONFIG_FILE": "relative/aws-config",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE12",
        "AWS_SECRET_ACCESS_KEY": "not-to-be-copied",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
    }
    entry = claude_desktop_config(environ)["mcpServers"]["incident-response"]
    assert entry["env"] == {
        "AWS_PROFILE": "reader",
        "AWS_CONFIG_FILE": str(Path("relative/aws-config").absolute()),
    }
    [warning] = config_warnings(environ)
    assert "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY not copied" in warning
