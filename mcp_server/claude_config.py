"""The Claude Desktop entry (``claude_desktop_config.json``) that runs this server over stdio: absolute
paths, and the AWS configuration of the calling environment — never its secrets."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SERVER_NAME = "incident-response"
# What selects the AWS identity; Claude Desktop starts servers with almost no environment. Not
# AWS_ENDPOINT_URL: a profile carries its endpoint, and the sandbox's port changes when it restarts.
CONFIG_VARIABLES = ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION")
FILE_VARIABLES = ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")
SECRET_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def server_command(python: str = sys.executable) -> list[str]:
    """The ``incident-mcp-server`` script beside this Python (not resolved: a venv's python is a link)."""
    script = Path(python).absolute().parent / "incident-mcp-server"
    if script.exists():
        return [str(script)]
    return [str(Path(python).absolute()), "-m", "mcp_server.cli"]


def claude_desktop_config(environ: Mapping[str, str], python: str = sys.executable) -> dict[str, Any]:
    env = {name: environ[name] for name in CONFIG_VARIABLES if environ.get(name)}
    for name in FILE_VARIABLES:
        if environ.get(name):
            env[name] = str(Path(environ[name]).expanduser().absolute())
    command, *args = server_command(python)
    entry = {"command": command, "args": [*args, "--transport", "stdio"], "env": env}
    return {"mcpServers": {SERVER_NAME: entry}}


def config_warnings(environ: Mapping[str, str]) -> list[str]:
    """What the user should know about the printed entry."""
    warnings = []
    secrets = [name for name in SECRET_VARIABLES if environ.get(name)]
    if secrets:
        warnings.append(
            f"{', '.join(secrets)} not copied into the config (secrets do not belong in a JSON file): "
            "use a profile (AWS_PROFILE) instead"
        )
    if not any(environ.get(name) for name in (*CONFIG_VARIABLES, *FILE_VARIABLES)):
        warnings.append("no AWS_* configuration in this environment: the server will use the default chain")
    return warnings
