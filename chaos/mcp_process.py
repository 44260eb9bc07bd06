"""Run ``incident-mcp-server`` (or ``incident-console``) as a separate process on a free loopback port
(drill and tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chaos.loopback import LOOPBACK, free_port, wait_healthy

STATE_FILE = "mcp-server.json"
CONSOLE_STATE_FILE = "console.json"  # the incident console left by incident-drill --keep-running


@dataclass
class ServerProcess:
    url: str
    pid: int
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _inherited(env: dict[str, str]) -> dict[str, str]:
    """Our environment for the child; where ``env`` names an AWS profile, without AWS keys, which botocore
    would take over the profile (a Bedrock fake's throwaway keys, or a user's own)."""
    named = "AWS_PROFILE" in env
    return {key: value for key, value in os.environ.items() if not (named and key in _KEYS)}


def start_server(
    env: dict[str, str],
    log_path: Path,
    *args: str,
    detach: bool = False,
    module: str = "mcp_server.cli",
    host: str = LOOPBACK,
) -> ServerProcess:
    """Start the server (``module``: the MCP server, or ``console.cli``) on ``host`` (a loopback
    address) with ``env`` added to ours and wait until /healthz answers. ``detach`` puts it in its own
    session, so it outlives the caller (``--keep-running``)."""
    port = free_port()
    bind = ["--host", host] if host != LOOPBACK else []
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            [sys.executable, "-m", module, *bind, "--port", str(port), *args],
            env={**_inherited(env), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=detach,
        )
    server = ServerProcess(f"http://{host}:{port}", process.pid, log_path, process)
    try:
        wait_healthy(server.url, alive=lambda: process.poll() is None)
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def server_process(
    env: dict[str, str], log_path: Path, *args: str, module: str = "mcp_server.cli", host: str = LOOPBACK
) -> Iterator[ServerProcess]:
    server = start_server(env, log_path, *args, module=module, host=host)
    try:
        yield server
    finally:
        server.stop()


def record(server: ServerProcess, state_dir: Path, name: str = STATE_FILE) -> None:
    """Note a server left running (``incident-drill --keep-running``) so that ``incident-sandbox down``
    stops it with the sandbox."""
    (state_dir / name).write_text(json.dumps({"pid": server.pid, "url": server.url}))


def stop_recorded(state_dir: Path, name: str = STATE_FILE) -> bool:
    """Stop the server recorded in ``state_dir``; False if none was recorded or it had already exited."""
    path = state_dir / name
    if not path.exists():
        return False
    pid = int(json.loads(path.read_text())["pid"])
    path.unlink()
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True
