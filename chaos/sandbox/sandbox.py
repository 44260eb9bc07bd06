"""Start, provision and stop the embedded AWS sandbox; the Python API behind `incident-sandbox`."""

from __future__ import annotations

import configparser
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session

from chaos.sandbox import identities, names, profiles, world
from chaos.sandbox.emulator_env import (
    ALARM_INTERVAL_ENV,
    AWS_DELAYS,
    CLOUDTRAIL_DELAY_ENV,
    TIME_SCALE_ENV,
    UNPATCHED_ENV,
)
from chaos.workload.function_state import FUNCTION_STATES_PATH
from chaos.workload.function_urls import Caller, FunctionUrls
from chaos.workload.runtime import LocalLambdaRuntime

STATE_FILE = "sandbox.json"
LOG_FILE = "emulator.log"
START_TIMEOUT_SECONDS = 20.0
MAX_TIME_SCALE = 500.0  # its MCP server is paced at 2 lookups a second times this: at most 1,000
MAX_CLOUDTRAIL_DELAY = 86_400.0  # a fixed delivery delay of at most a day


class SandboxError(RuntimeError):
    """The sandbox could not be started, reached or stopped."""


@dataclass
class Sandbox:
    state_dir: Path
    endpoint_url: str
    region: str
    world: world.World
    emulator_pid: int
    env: dict[str, str] = field(repr=False)
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    def session(self, profile: str) -> boto3.Session:
        """A boto3 session for one sandbox identity, configured only through the AWS config files."""
        return profile_session(self.env, profile)

    def lambda_accounts(self) -> dict[str, boto3.Session]:
        """The Lambda service of every account but the first: ``LocalLambdaRuntime(accounts=...)``."""
        return lambda_accounts(self.env)

    def function_urls(self, runtime: LocalLambdaRuntime) -> FunctionUrls:
        """Function URLs, served by the Lambda service through ``runtime``: an ``AWS_IAM`` one knows the
        holder of every sandbox key (as IAM does) and reads a caller's own policies in its account."""
        credentials = configparser.ConfigParser()
        credentials.read(self.env["AWS_SHARED_CREDENTIALS_FILE"])
        callers = {
            credentials[p]["aws_access_key_id"]: Caller(
                identities.user_arn(p), credentials[p]["aws_secret_access_key"]
            )
            for p in credentials.sections()
        }
        return FunctionUrls(runtime, self.session(names.LAMBDA_SERVICE), callers, self.lambda_accounts())

    def is_alive(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        return _pid_alive(self.emulator_pid)

    def set_cloudtrail_delay(self, seconds: float | None) -> None:
        """From now on, CloudTrail events reach ``LookupEvents`` ``seconds`` after their call (0: at once;
        None: each after a delay drawn as AWS's, the default)."""
        body = AWS_DELAYS if seconds is None else str(seconds)
        self._control("/_sandbox/cloudtrail/delivery-delay", body.encode())

    def reset_cloudwatch(self) -> None:
        """Forget every metric datapoint and put every alarm back to INSUFFICIENT_DATA, silently: a fresh
        start for the next drill scenario or test (on AWS, alarms would need their period to pass)."""
        self._control("/_sandbox/cloudwatch/reset")

    def evaluate_alarms(self) -> None:
        """Evaluate every alarm now, and return once its notifications are published: what the traffic so
        far has put in CloudWatch has been judged (the emulator's own pass runs only every second)."""
        self._control("/_sandbox/cloudwatch/evaluate-alarms")

    def declare_idle(self, function_arn: str) -> None:
        """The function was idle for weeks: Lambda reclaims its VPC network interfaces and it is Inactive
        (the sandbox cannot wait weeks; chaos/sandbox/extensions/lambda_vpc.py)."""
        self._control(f"{FUNCTION_STATES_PATH}{function_arn}", b'{"idle": true}')

    def set_interface_quota(self, quota: int | None) -> None:
        """The network interfaces an account may have per Region (None: AWS's default, 5,000); lowered, no
        new interface is made past it, Lambda's included (chaos/sandbox/extensions/lambda_vpc.py)."""
        self._control("/_sandbox/ec2/network-interface-quota", json.dumps(quota).encode())

    def _control(self, path: str, body: bytes = b"") -> None:
        """A request to the emulator's own control endpoints (``/_sandbox/...``)."""
        request = urllib.request.Request(  # noqa: S310 - loopback URL we built
            f"{self.endpoint_url}{path}", data=body, method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=5):  # noqa: S310
            pass

    def stop(self) -> None:
        if self._process is not None:
            _stop_process(self._process)
        else:
            _terminate(self.emulator_pid)
        (self.state_dir / STATE_FILE).unlink(missing_ok=True)


@functools.cache
def _shared_loader() -> botocore.loaders.Loader:
    """One loader of botocore's service models for every session here: each session would otherwise read
    and parse them again for its first client (measured: 175 ms of CPU for a session and two clients,
    47 ms with the loader shared)."""
    return botocore.loaders.create_loader()


def profile_session(env: dict[str, str], profile: str) -> boto3.Session:
    core = botocore.session.Session()
    core.register_component("data_loader", _shared_loader())
    core.set_config_variable("config_file", env["AWS_CONFIG_FILE"])
    core.set_config_variable("credentials_file", env["AWS_SHARED_CREDENTIALS_FILE"])
    core.set_config_variable("profile", profile)
    return boto3.Session(botocore_session=core)


def lambda_accounts(env: dict[str, str]) -> dict[str, boto3.Session]:
    """Account id -> the session of the Lambda service identity in that account, for every account but the
    first (whose Lambda service is the runtime's own ``platform``)."""
    return {names.SECOND_ACCOUNT_ID: profile_session(env, names.SECOND_LAMBDA_SERVICE)}


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_ready(process: subprocess.Popen[bytes], endpoint_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text()[-2000:]
            raise SandboxError(f"the emulator exited with status {process.returncode}; its log ends:\n{tail}")
        try:
            with urllib.request.urlopen(f"{endpoint_url}/moto-api/", timeout=1):  # noqa: S310 - loopback URL we built
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.05)
    raise SandboxError(
        f"the emulator did not answer on {endpoint_url} within {START_TIMEOUT_SECONDS:.0f}s (log: {log_path})"
    )


def _bootstrap_iam(endpoint_url: str, region: str, account: str | None = None) -> Any:
    """An IAM client for the unauthenticated window before enforcement; ``account`` picks the emulated
    account (moto's ``x-moto-account-id`` header), else the default one."""
    client = boto3.client(
        "iam",
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",  # noqa: S106 - unauthenticated window before enforcement
    )
    if account is not None:

        def add_header(request: Any, **_: Any) -> None:
            request.headers["x-moto-account-id"] = account

        client.meta.events.register("before-sign.iam.*", add_header)
    return client


def _enforce_iam(endpoint_url: str) -> None:
    """From now on every request must be signed by a sandbox identity and is authorized against its policy."""
    request = urllib.request.Request(  # noqa: S310 - loopback URL we built
        f"{endpoint_url}/moto-api/reset-auth",
        data=b"0",
        method="POST",
        headers={"Content-Type": "text/plain"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
        if response.status != 200:
            raise SandboxError(f"could not enable IAM enforcement: HTTP {response.status}")


def _spawn_emulator(
    host: str,
    port: int,
    log_path: Path,
    unpatched: bool,
    alarm_interval_seconds: float | None,
    time_scale: float,
    cloudtrail_delay: float | None,
) -> subprocess.Popen[bytes]:
    """The emulator process, in a session of its own, without the caller's AWS settings; its output
    goes to ``log_path``."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    child_env[UNPATCHED_ENV] = "1" if unpatched else "0"
    child_env[TIME_SCALE_ENV] = str(time_scale)
    child_env.pop(CLOUDTRAIL_DELAY_ENV, None)
    if cloudtrail_delay is not None:
        child_env[CLOUDTRAIL_DELAY_ENV] = str(cloudtrail_delay)
    if alarm_interval_seconds is not None:
        child_env[ALARM_INTERVAL_ENV] = str(alarm_interval_seconds)
    with log_path.open("wb") as log:
        return subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            [sys.executable, "-m", "chaos.sandbox.emulator", "--host", host, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            start_new_session=True,
        )


def start_sandbox(
    state_dir: Path | str = ".sandbox",
    *,
    region: str = names.DEFAULT_REGION,
    host: str = "127.0.0.1",
    port: int | None = None,
    unpatched: bool = False,
    alarm_interval_seconds: float | None = None,
    time_scale: float = 1.0,
    cloudtrail_delay: float | None = None,
) -> Sandbox:
    """Start the emulator, create the identities, enforce IAM, provision the world and write the files.
    ``alarm_interval_seconds``: how often the emulator evaluates alarms (its default: every second);
    ``time_scale``: how many times faster than AWS the emulator's clocks run (1: AWS's own);
    ``cloudtrail_delay``: a fixed CloudTrail delivery delay in seconds (None: each event's drawn as AWS's,
    divided by the time scale)."""
    if not 1 <= time_scale <= MAX_TIME_SCALE:
        raise SandboxError(f"the time scale must be between 1 and {MAX_TIME_SCALE:g}, not {time_scale:g}")
    if cloudtrail_delay is not None and not 0 <= cloudtrail_delay <= MAX_CLOUDTRAIL_DELAY:
        raise SandboxError(
            f"the CloudTrail delivery delay must be between 0 and {MAX_CLOUDTRAIL_DELAY:g} seconds, "
            f"not {cloudtrail_delay:g} (leave it out for AWS's)"
        )
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    existing = read_state(state_dir)
    if existing and _pid_alive(int(existing["emulator_pid"])):
        raise SandboxError(
            f"a sandbox is already running from {state_dir} (pid {existing['emulator_pid']}); "
            "stop it with `incident-sandbox down` or pick another --state-dir"
        )
    port = port or _free_port(host)
    endpoint_url = f"http://{host}:{port}"
    log_path = state_dir / LOG_FILE
    process = _spawn_emulator(
        host, port, log_path, unpatched, alarm_interval_seconds, time_scale, cloudtrail_delay
    )
    try:
        _wait_ready(process, endpoint_url, log_path)
        keys = identities.bootstrap(
            _bootstrap_iam(endpoint_url, region),
            _bootstrap_iam(endpoint_url, region, names.SECOND_ACCOUNT_ID),
        )
        _enforce_iam(endpoint_url)
        profiles.write_profiles(state_dir, endpoint_url, region, keys)
        files_env = profiles.sandbox_env(state_dir, endpoint_url, region, mcp_api_key="")
        provisioned = world.provision(
            profile_session(files_env, names.OPERATOR), profile_session(files_env, names.SECOND_OPERATOR)
        )
        env = profiles.sandbox_env(state_dir, endpoint_url, region, provisioned.mcp_api_key, time_scale)
        sandbox = Sandbox(state_dir, endpoint_url, region, provisioned, process.pid, env, process)
    except BaseException:
        _stop_process(process)
        raise
    profiles.write_env_file(state_dir, sandbox.env)
    (state_dir / STATE_FILE).write_text(
        json.dumps(
            {
                "endpoint_url": endpoint_url,
                "region": region,
                "emulator_pid": process.pid,
                "world": sandbox.world.as_dict(),
            },
            indent=2,
        )
    )
    return sandbox


def read_state(state_dir: Path | str) -> dict[str, Any] | None:
    path = Path(state_dir) / STATE_FILE
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _stop_process(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _terminate(pid: int, timeout: float = 5.0) -> None:
    """Stop an emulator started by another process (``incident-sandbox up --detach``)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def stop_sandbox(state_dir: Path | str = ".sandbox") -> bool:
    """Stop the sandbox started from ``state_dir``; False if none was running."""
    state = read_state(state_dir)
    path = Path(state_dir) / STATE_FILE
    if state is None:
        return False
    pid = int(state["emulator_pid"])
    running = _pid_alive(pid)
    if running:
        _terminate(pid)
    path.unlink(missing_ok=True)
    return running


@contextmanager
def running_sandbox(
    state_dir: Path | str = ".sandbox",
    *,
    region: str = names.DEFAULT_REGION,
    unpatched: bool = False,
    time_scale: float = 1.0,
    cloudtrail_delay: float | None = None,
) -> Iterator[Sandbox]:
    """``with running_sandbox(tmp) as sandbox:`` — started and provisioned; stopped on exit."""
    sandbox = start_sandbox(
        state_dir,
        region=region,
        unpatched=unpatched,
        time_scale=time_scale,
        cloudtrail_delay=cloudtrail_delay,
    )
    try:
        yield sandbox
    finally:
        sandbox.stop()
