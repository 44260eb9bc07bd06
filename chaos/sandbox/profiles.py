"""Write the standard AWS config/credentials files and a sourceable env file for the sandbox."""

from __future__ import annotations

import configparser
import math
import shlex
from pathlib import Path

from chaos.sandbox.emulator_env import LOOKUPS_PER_SECOND
from chaos.sandbox.identities import AccessKey
from supervisor.settings import SupervisorSettings

CONFIG_FILE = "aws-config"
CREDENTIALS_FILE = "aws-credentials"
ENV_FILE = "env"


def _write_ini(path: Path, sections: dict[str, dict[str, str]]) -> None:
    parser = configparser.ConfigParser()
    for name, values in sections.items():
        parser[name] = values
    with path.open("w") as handle:
        parser.write(handle)
    path.chmod(0o600)


def write_profiles(state_dir: Path, endpoint_url: str, region: str, keys: dict[str, AccessKey]) -> None:
    _write_ini(
        state_dir / CONFIG_FILE,
        {f"profile {p}": {"region": region, "endpoint_url": endpoint_url} for p in keys},
    )
    _write_ini(
        state_dir / CREDENTIALS_FILE,
        {
            p: {"aws_access_key_id": k.access_key_id, "aws_secret_access_key": k.secret_access_key}
            for p, k in keys.items()
        },
    )


def sandbox_env(
    state_dir: Path, endpoint_url: str, region: str, mcp_api_key: str, time_scale: float = 1.0
) -> dict[str, str]:
    """The variables that point any AWS SDK or CLI at the sandbox (pick an identity with AWS_PROFILE), and
    the MCP server and the supervisor at the emulator's pace: CloudTrail lookups as many times faster, and
    its delivery bound as many times shorter, as its clock runs."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_CONFIG_FILE": str((state_dir / CONFIG_FILE).resolve()),
        "AWS_SHARED_CREDENTIALS_FILE": str((state_dir / CREDENTIALS_FILE).resolve()),
        "MCP_API_KEY": mcp_api_key,
        "MCP_CLOUDTRAIL_LOOKUPS_PER_SECOND": f"{LOOKUPS_PER_SECOND * time_scale:g}",
        "CLOUDTRAIL_DELIVERY_BOUND_SECONDS": str(delivery_bound(time_scale)),
    }


def delivery_bound(time_scale: float) -> int:
    """The supervisor's CloudTrail delivery bound (``CLOUDTRAIL_DELIVERY_BOUND_SECONDS``, 900 s by default)
    on a sandbox whose clocks run ``time_scale`` times faster than AWS's: the bound divided by the scale."""
    default: int = SupervisorSettings.model_fields["cloudtrail_delivery_bound_seconds"].default
    return math.ceil(default / time_scale)


def write_env_file(state_dir: Path, env: dict[str, str]) -> Path:
    path = state_dir / ENV_FILE
    path.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()))
    path.chmod(0o600)
    return path
