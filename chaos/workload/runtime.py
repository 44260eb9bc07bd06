"""The sandbox's Lambda service: invokes deployed functions in execution environments of their own.

moto stores functions but cannot run them without Docker; this runtime does what the Lambda service
would, through plain boto3 as the ``lambda-service`` identity of the function's account (a function ARN
names its account; a plain name is the first account's):
- fetches the deployed package the way Lambda does (``GetFunction`` → ``Code.Location``) for the
  version or alias invoked, and runs it in an execution environment (a worker process) started on the
  first invocation, reused while warm, replaced when the code or the configuration changes, and reset
  after a timeout or a crash;
- gives the handler the function's environment variables, its role's credentials (``sts:AssumeRole``:
  IAM decides what the code may do) and a context object; enforces the timeout and the memory size;
- throttles by reserved concurrency and by the account's concurrency limit;
- refuses to start an environment whose environment variables it cannot decrypt (a customer managed key
  disabled, pending deletion, gone, or without a grant for the role: ``environment_key.py``);
- routes a VPC function's calls through the VPC emulation (``reachability.py``): a call the subnet's
  routes, network ACL or security groups cannot carry hangs until the function times out;
- writes the platform records (``platform_log.py``: ``INIT_START``/``START``/``END``/``REPORT`` with
  measured duration, memory and init time, ``INIT_REPORT`` for a failed init and its retry in the invoke
  phase, ``Task timed out``, ``Runtime exited with error``; or their JSON events, filtered by level) around
  the function's own output, in the function's ``LoggingConfig``, to its log group with the role's
  credentials (a role that cannot write logs leaves none, as on AWS);
- publishes the ``AWS/Lambda`` metrics. Alarms on them are evaluated by the emulator, not here.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from chaos.workload import metrics
from chaos.workload.egress_proxy import EgressProxy
from chaos.workload.environment import ExecutionEnvironment, RunResult, Spec
from chaos.workload.environment_key import refusal
from chaos.workload.function_state import FUNCTION_STATES_PATH
from chaos.workload.function_state import refusal as state_refusal
from chaos.workload.platform_log import PlatformLog, Report, platform_error_type
from chaos.workload.platform_log import Status as ReportStatus
from chaos.workload.reachability import VpcNetwork

# "throttled" and "refused" (an invocation error, such as a key that cannot decrypt the variables): the code
# never ran, and Lambda records no Invocations.
Status = Literal["succeeded", "failed", "throttled", "refused", "timed_out", "out_of_memory"]
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=5, read_timeout=30)


class RuntimeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SANDBOX_RUNTIME_", extra="ignore")

    account_concurrency_limit: int = Field(
        default=1000, ge=1, description="Concurrent executions the account allows across all functions."
    )
    # Lambda "terminates execution environments every few hours ... even for functions that are invoked
    # continuously" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html): the next
    # invocation after that is a cold start. How long exactly is not published; two hours is our choice.
    environment_lifetime_seconds: float = Field(
        default=7200.0,
        gt=0,
        description="Seconds an execution environment is reused for before Lambda replaces it (AWS: every "
        "few hours).",
    )


class InvokeError(RuntimeError):
    """The Lambda service refused the request itself (no such function or qualifier, say)."""


class _Refused(Exception):
    """No execution environment can start: the Invoke error's type and message."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass
class Invocation:
    function_name: str
    request_id: str
    status: Status
    qualifier: str | None = None
    version: str = "$LATEST"
    result: Any = None
    error: str | None = None  # "<errorType>: <errorMessage>"
    error_type: str | None = None
    duration_ms: float = 0.0
    init_duration_ms: float | None = None  # set on a cold start
    max_memory_mb: int = 0
    logs_written: bool = False
    log_lines: list[str] = field(default_factory=list, repr=False)


@dataclass
class _Warm:
    environment: ExecutionEnvironment
    key: str
    pool: str  # the function's unqualified ARN and version: its environments are reused for it only
    logs: Any  # the role's CloudWatch Logs client
    proxy: EgressProxy | None
    respawn: Callable[[], ExecutionEnvironment]  # a new worker: Lambda's init retried in the invoke phase
    function: str = ""
    stream_ready: bool = False
    started: float = field(default_factory=time.monotonic)

    def close(self) -> None:
        self.environment.kill()
        if self.proxy:
            self.proxy.close()


def _with_credentials(platform: boto3.Session, credentials: dict[str, Any]) -> boto3.Session:
    """A session configured like ``platform`` (same config file and profile, hence region and endpoint)
    but signing with the assumed role's temporary credentials. It shares ``platform``'s data loader, whose
    cache keeps botocore's service models and endpoint rules: a session of its own would parse them again
    for its first client (0.15 s of CPU each; an execution environment's start makes one)."""
    core = botocore.session.Session()
    core.register_component("data_loader", platform._session.get_component("data_loader"))
    for variable in ("config_file", "credentials_file", "profile", "region"):
        core.set_config_variable(variable, platform._session.get_config_variable(variable))
    core.set_credentials(
        credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"]
    )
    return boto3.Session(botocore_session=core)


def assumed_role_session(platform: boto3.Session, role_arn: str, session_name: str) -> boto3.Session:
    """What the Lambda service acts with on a function's behalf (its pollers, its deliveries to
    destinations and dead-letter queues): the function's role, assumed by ``platform``."""
    credentials = platform.client("sts", config=_CLIENT_CONFIG).assume_role(
        RoleArn=role_arn, RoleSessionName=session_name
    )["Credentials"]
    return _with_credentials(platform, credentials)


def _environment_key(config: dict[str, Any]) -> str:
    """What makes Lambda replace an environment: the version's code or any setting the runtime sees."""
    keys = ("FunctionArn", "Version", "CodeSha256", "Handler", "Runtime", "MemorySize", "Timeout", "Role")
    material = {k: config.get(k) for k in keys} | {
        k: config.get(k)
        for k in ("Environment", "VpcConfig", "LoggingConfig", "EphemeralStorage", "LastModified")
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


def metric_time(
    writing: datetime, written: datetime, ingested: Callable[[], datetime], logged: bool
) -> datetime:
    """The time of an invocation's metrics: in the minute CloudWatch Logs took its lines in, whose
    IncomingLogEvents the log-silence alarm reads beside Invocations. A write that began before a minute
    boundary and ended after it may have landed on either side, so then the ingestion time is read back."""
    if not logged or int(writing.timestamp()) // 60 == int(written.timestamp()) // 60:
        return written
    return ingested()


def _last_ingestion(platform: _Platform, spec: Spec) -> datetime:
    streams = platform.logs.describe_log_streams(
        logGroupName=spec.log_group, logStreamNamePrefix=spec.log_stream
    )["logStreams"]
    stream = next(s for s in streams if s["logStreamName"] == spec.log_stream)
    return datetime.fromtimestamp(stream["lastIngestionTime"] / 1000, UTC)


@dataclass(frozen=True)
class _Platform:
    """The Lambda service of one account: its session and the clients it reads and publishes with."""

    session: boto3.Session
    lambda_: Any
    cloudwatch: Any
    logs: Any
    kms: Any
    network: VpcNetwork

    @classmethod
    def of(cls, session: boto3.Session) -> _Platform:
        ec2 = session.client("ec2", config=_CLIENT_CONFIG)
        return cls(
            session,
            session.client("lambda", config=_CLIENT_CONFIG),
            session.client("cloudwatch", config=_CLIENT_CONFIG),
            session.client("logs", config=_CLIENT_CONFIG),
            session.client("kms", config=_CLIENT_CONFIG),
            VpcNetwork(ec2, session.region_name or ""),
        )


def function_account(function_name: str) -> str | None:
    """The account a function ARN (or partial ARN ``<account>:function:<name>``) names; None for a name."""
    parts = function_name.split(":")
    if function_name.startswith("arn:") and len(parts) >= 7:
        return parts[4]
    if len(parts) >= 3 and parts[1] == "function":
        return parts[0]
    return None


class LocalLambdaRuntime:
    """``platform`` is the session the Lambda service acts with (the sandbox's ``lambda-service``);
    ``accounts`` maps every other account id to its own Lambda service's session. A function is always run
    by its account's Lambda service: that account's package, role, log group and metrics."""

    def __init__(
        self,
        platform: boto3.Session,
        settings: RuntimeSettings | None = None,
        accounts: Mapping[str, boto3.Session] | None = None,
    ) -> None:
        self._settings = settings or RuntimeSettings()
        self._default = _Platform.of(platform)
        self._accounts = {account: _Platform.of(session) for account, session in (accounts or {}).items()}
        endpoint = urlsplit(self._default.lambda_.meta.endpoint_url)
        self._endpoint_url = f"{endpoint.scheme}://{endpoint.netloc}"
        self._upstream = (endpoint.hostname or "127.0.0.1", endpoint.port or 80)
        self._lock = threading.Lock()
        self._in_flight: dict[str, dict[str, int]] = {}  # account → function → invocations in flight
        self._warm: dict[str, list[_Warm]] = {}  # function ARN with version → idle environments
        self._created = 0
        # Told of every invocation that ran or was throttled, whoever asked for it (a caller, a poller).
        self.observers: list[Callable[[Invocation], None]] = []

    def retire(self, function_name: str) -> None:
        """End the environments kept warm for the function, as Lambda does once their lifetime is over: its
        next invocation is a cold start."""
        with self._lock:
            retired = [w for pool in self._warm.values() for w in pool if w.function == function_name]
            for pool in self._warm.values():
                pool[:] = [w for w in pool if w.function != function_name]
        for warm in retired:
            warm.close()

    def close(self) -> None:
        with self._lock:
            pools, self._warm = list(self._warm.values()), {}
        for pool in pools:
            for warm in pool:
                warm.close()

    def __enter__(self) -> LocalLambdaRuntime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def sessions(self) -> list[boto3.Session]:
        """The Lambda service identity of every account it runs functions in, the first account's first."""
        return [self._default.session, *(platform.session for platform in self._accounts.values())]

    def session_for(self, function_name: str) -> boto3.Session:
        """The Lambda service identity of the function's account (what assumes its role for a delivery)."""
        return self._platform_for(function_name).session

    def _platform_for(self, function_name: str) -> _Platform:
        account = function_account(function_name)
        return self._accounts.get(account, self._default) if account else self._default

    def invoke(
        self, function_name: str, event: Any, qualifier: str | None = None, request_id: str | None = None
    ) -> Invocation:
        """``request_id``: the one the platform gave the event (an asynchronous event keeps its own through
        every attempt); a new one otherwise. Every observer is told of the invocation."""
        invocation = self._invoke(function_name, event, qualifier, request_id or str(uuid.uuid4()))
        for observer in self.observers:
            observer(invocation)
        return invocation

    def _invoke(self, function_name: str, event: Any, qualifier: str | None, request_id: str) -> Invocation:
        platform = self._platform_for(function_name)
        function = self._get_function(platform, function_name, qualifier)
        config = function["Configuration"]
        name = config["FunctionName"]
        account = config["FunctionArn"].split(":")[4]
        if not self._admit(platform, account, name):
            metrics.publish(
                platform.cloudwatch,
                function_name=name,
                qualifier=qualifier,
                at=datetime.now(UTC),
                throttled=True,
            )
            return Invocation(
                name,
                request_id,
                "throttled",
                qualifier,
                config["Version"],
                error="TooManyRequestsException: Rate Exceeded.",
                error_type="TooManyRequestsException",
            )
        try:
            return self._invoke_admitted(platform, function, event, request_id, qualifier)
        finally:
            with self._lock:
                self._in_flight[account][name] -= 1

    def invoke_burst(
        self, function_name: str, event: Any, count: int, qualifier: str | None = None
    ) -> list[Invocation]:
        """``count`` concurrent invocations, as a traffic burst would send them."""
        with ThreadPoolExecutor(max_workers=count) as pool:
            return list(pool.map(lambda _: self.invoke(function_name, event, qualifier), range(count)))

    @staticmethod
    def _get_function(platform: _Platform, function_name: str, qualifier: str | None) -> dict[str, Any]:
        params = {"FunctionName": function_name} | ({"Qualifier": qualifier} if qualifier else {})
        try:
            function: dict[str, Any] = platform.lambda_.get_function(**params)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            raise InvokeError(f"{code}: {error.response.get('Error', {}).get('Message', error)}") from None
        wanted, found = (
            function_account(function_name),
            function["Configuration"]["FunctionArn"].split(":")[4],
        )
        if wanted is not None and wanted != found:  # moto answers with its caller's account's copy
            raise InvokeError(
                f"the sandbox's Lambda service has no identity in account {wanted}: it cannot run "
                f"{function_name} (pass that account's lambda-service session in accounts=)"
            )
        return function

    def _admit(self, platform: _Platform, account: str, name: str) -> bool:
        """Reserved concurrency caps the function; the account limit caps everything in flight in its
        account."""
        reserved = platform.lambda_.get_function_concurrency(FunctionName=name).get(
            "ReservedConcurrentExecutions"
        )
        with self._lock:
            flying = self._in_flight.setdefault(account, {})
            in_flight = flying.get(name, 0)
            if reserved is not None and in_flight >= reserved:
                return False
            if sum(flying.values()) >= self._settings.account_concurrency_limit:
                return False
            flying[name] = in_flight + 1
            return True

    def _invoke_admitted(
        self,
        platform: _Platform,
        function: dict[str, Any],
        event: Any,
        request_id: str,
        qualifier: str | None,
    ) -> Invocation:
        config = function["Configuration"]
        name = config["FunctionName"]
        try:
            if (state_refused := state_refusal(config)) is not None:
                self._attempted(config)
                raise _Refused(*state_refused)
            warm, cold = self._acquire(platform, function)
        except _Refused as refused:
            error, kind, version = f"{refused.error_type}: {refused}", refused.error_type, config["Version"]
            return Invocation(name, request_id, "refused", qualifier, version, error=error, error_type=kind)
        log = PlatformLog(warm.environment.spec)
        started_at = datetime.now(UTC)
        lines = self._init_phase(log, warm.environment, "init", started_at) if cold else []
        init_ms = warm.environment.init_ms if cold else None
        if warm.environment.init_error is not None:  # Lambda retries a failed init in the invoke phase
            warm.environment.kill()
            warm.environment = warm.respawn()
            lines += self._init_phase(log, warm.environment, "invoke", datetime.now(UTC))
            init_ms = None if warm.environment.init_error else warm.environment.init_ms
        environment, invoked_at = warm.environment, datetime.now(UTC)
        if environment.init_error is not None:
            run = RunResult("failed", error=environment.init_error, duration_ms=environment.init_ms)
        else:
            unqualified = ":".join(config["FunctionArn"].split(":")[:7])
            invoked_arn = f"{unqualified}:{qualifier}" if qualifier else unqualified
            run = environment.run(request_id, event, invoked_arn)
        concurrent = self._in_flight.get(config["FunctionArn"].split(":")[4], {}).get(name, 1)
        invocation = self._outcome(config, request_id, qualifier, run, environment, init_ms)
        lines += self._invocation_lines(log, invocation, run, environment, invoked_at)
        invocation.log_lines = lines
        writing = datetime.now(UTC)
        invocation.logs_written = self._write_logs(warm, lines, started_at)
        metrics.publish(
            platform.cloudwatch,
            function_name=name,
            qualifier=qualifier,
            # When the logs arrived, not when the run started: CloudWatch Logs counts IncomingLogEvents at
            # ingestion, and a run that starts before a minute boundary would otherwise put its Invocations
            # in one minute and its log events in the next, which the log-silence alarm reads as silence.
            at=metric_time(
                writing,
                datetime.now(UTC),
                lambda: _last_ingestion(platform, warm.environment.spec),
                bool(invocation.logs_written and lines),
            ),
            throttled=False,
            failed=invocation.status != "succeeded",
            duration_ms=invocation.duration_ms,
            concurrent=concurrent,
        )
        self._release(warm)
        return invocation

    @staticmethod
    def _init_phase(
        log: PlatformLog, environment: ExecutionEnvironment, phase: str, at: datetime
    ) -> list[str]:
        """What an init phase leaves: ``INIT_START`` (the first attempt only), the init's own output, and its
        end (``INIT_REPORT`` when it failed)."""
        began = at - timedelta(milliseconds=environment.init_ms)
        lines = log.init_start(began) if phase == "init" else []
        lines += log.application(environment.init_lines, environment.init_levels)
        error = environment.init_error
        status: ReportStatus = "timeout" if environment.init_timed_out else "error" if error else "success"
        error_type = "Runtime.OutOfMemory" if environment.out_of_memory else (error or {}).get("errorType")
        return lines + log.init_done(at, phase, environment.init_ms, status, error_type)

    def _outcome(
        self,
        config: dict[str, Any],
        request_id: str,
        qualifier: str | None,
        run: RunResult,
        environment: ExecutionEnvironment,
        init_ms: float | None,
    ) -> Invocation:
        memory_size = int(config.get("MemorySize", 128))
        status: Status = "failed"
        error_type: str | None = None
        error: str | None = None
        if run.outcome == "succeeded":
            status = "succeeded"
        elif run.outcome == "failed" and run.error:
            error_type, error = (
                run.error["errorType"],
                f"{run.error['errorType']}: {run.error['errorMessage']}",
            )
        elif run.outcome == "timed_out":
            status, error_type = "timed_out", "Sandbox.Timedout"
            error = f"Task timed out after {environment.spec.timeout_seconds:.2f} seconds"
        else:
            status = "out_of_memory" if run.outcome == "out_of_memory" else "failed"
            error_type, error = "Runtime.ExitError", f"Runtime exited with error: {run.exit_detail}"
        peak = memory_size if status == "out_of_memory" else min(environment.max_memory_mb(), memory_size)
        return Invocation(
            config["FunctionName"],
            request_id,
            status,
            qualifier,
            config["Version"],
            result=run.value,
            error=error,
            error_type=error_type,
            duration_ms=run.duration_ms,
            init_duration_ms=init_ms,
            max_memory_mb=peak,
        )

    @staticmethod
    def _invocation_lines(
        log: PlatformLog,
        invocation: Invocation,
        run: RunResult,
        environment: ExecutionEnvironment,
        started_at: datetime,
    ) -> list[str]:
        """START, the function's output, END and REPORT (or their JSON events), with what ended it."""
        request_id, ended = invocation.request_id, datetime.now(UTC)
        init_error = environment.init_error
        report = _report(invocation, run, environment)
        lines = log.start(started_at, request_id)
        if init_error and init_error["errorType"] == "Runtime.ExitError" and not environment.init_timed_out:
            lines += log.fault(
                request_id, init_error["errorMessage"], "Runtime.ExitError"
            )  # its runtime exited
        lines += log.application(run.lines, run.levels)
        if run.outcome == "timed_out":
            lines += log.timed_out(ended, request_id)
        lines += log.end(ended, report, _produced_bytes(run)) + log.report(ended, report)
        if run.outcome in ("crashed", "out_of_memory"):
            lines += log.fault(
                request_id, f"Runtime exited with error: {run.exit_detail}", "Runtime.ExitError"
            )
        return lines

    def _attempted(self, config: dict[str, Any]) -> None:
        """Tell Lambda an inactive function was invoked: it starts connecting it to its VPC again."""
        if config.get("State") != "Inactive":
            return
        arn = ":".join(config["FunctionArn"].split(":")[:7])
        url = f"{self._endpoint_url}{FUNCTION_STATES_PATH}{arn}"
        request = urllib.request.Request(url, data=b'{"invoked": true}', method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - the emulator's own endpoint
            pass

    def _acquire(self, platform: _Platform, function: dict[str, Any]) -> tuple[_Warm, bool]:
        """A warm environment for this exact version and configuration, or a new one (a cold start)."""
        config = function["Configuration"]
        pool_key = f"{':'.join(config['FunctionArn'].split(':')[:7])}:{config['Version']}"
        key = _environment_key(config)
        stale: list[_Warm] = []
        with self._lock:
            pool = self._warm.setdefault(pool_key, [])
            retired = time.monotonic() - self._settings.environment_lifetime_seconds
            stale = [w for w in pool if w.key != key or not w.environment.alive or w.started < retired]
            pool[:] = [w for w in pool if w not in stale]
            warm = pool.pop() if pool else None
            if warm is None:
                self._created += 1
            index = self._created
        for old in stale:
            old.close()
        if warm is not None:
            return warm, False
        return self._start(platform, function, key, pool_key, index), True

    def _release(self, warm: _Warm) -> None:
        if not warm.environment.alive:
            warm.close()
            return
        with self._lock:
            self._warm.setdefault(warm.pool, []).append(warm)

    def _start(self, platform: _Platform, function: dict[str, Any], key: str, pool: str, index: int) -> _Warm:
        config = function["Configuration"]
        name, version = config["FunctionName"], config["Version"]
        if (refused := refusal(platform.kms, config.get("KMSKeyArn"), config["Role"])) is not None:
            raise _Refused(*refused)
        credentials = platform.session.client("sts", config=_CLIENT_CONFIG).assume_role(
            RoleArn=config["Role"], RoleSessionName=name
        )["Credentials"]
        role = _with_credentials(platform.session, credentials)
        with urllib.request.urlopen(function["Code"]["Location"], timeout=30) as response:  # noqa: S310
            package = response.read()
        vpc = config.get("VpcConfig") or {}
        proxy = None
        endpoint_url = self._endpoint_url
        if vpc.get("SubnetIds"):
            subnet_index = index % len(vpc["SubnetIds"])
            proxy = EgressProxy(
                self._upstream,
                lambda service: platform.network.verdict(vpc, service, subnet_index).reachable,
            )
            endpoint_url = proxy.url
        logging_config = config.get("LoggingConfig") or {}
        log_group = logging_config.get("LogGroup") or f"/aws/lambda/{name}"
        spec = Spec(
            function_name=name,
            version=version,
            handler=config["Handler"],
            memory_mb=int(config.get("MemorySize", 128)),
            timeout_seconds=float(config.get("Timeout", 3)),
            variables=dict((config.get("Environment") or {}).get("Variables") or {}),
            log_group=log_group,
            log_stream=f"{datetime.now(UTC):%Y/%m/%d}/[{version}]{uuid.uuid4().hex}",
            region=platform.session.region_name or "",
            runtime=config.get("Runtime") or "python3.12",
            log_format=logging_config.get("LogFormat") or "Text",
            application_log_level=logging_config.get("ApplicationLogLevel"),
            system_log_level=logging_config.get("SystemLogLevel"),
            ephemeral_mb=int((config.get("EphemeralStorage") or {}).get("Size") or 512),
        )
        secrets = {k: str(v) for k, v in credentials.items()}

        def respawn() -> ExecutionEnvironment:
            # "Lambda retries the Init phase at the time of the first function invocation with the configured
            # function timeout" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html)
            return ExecutionEnvironment(spec, package, secrets, endpoint_url, init_limit=spec.timeout_seconds)

        first = ExecutionEnvironment(spec, package, secrets, endpoint_url)
        return _Warm(first, key, pool, role.client("logs", config=_CLIENT_CONFIG), proxy, respawn, name)

    def _write_logs(self, warm: _Warm, lines: list[str], started_at: datetime) -> bool:
        """Write with the role's credentials; a denied write loses the lines, as on AWS."""
        spec = warm.environment.spec
        start_ms = int(started_at.timestamp() * 1000)
        now_ms = max(start_ms, int(time.time() * 1000))
        events = [
            {"timestamp": start_ms if i == 0 else now_ms, "message": line} for i, line in enumerate(lines)
        ]
        for _ in range(2):  # a stream deleted under a warm environment is created again, as Lambda does
            try:
                if not warm.stream_ready:
                    try:
                        warm.logs.create_log_stream(
                            logGroupName=spec.log_group, logStreamName=spec.log_stream
                        )
                    except ClientError as error:
                        if error.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
                            raise
                    warm.stream_ready = True
                if events:  # levels can leave nothing to write
                    warm.logs.put_log_events(
                        logGroupName=spec.log_group, logStreamName=spec.log_stream, logEvents=events
                    )
            except ClientError as error:
                gone = error.response.get("Error", {}).get("Code") == "ResourceNotFoundException"
                if not (gone and warm.stream_ready):
                    return False
                warm.stream_ready = False
            else:
                return True
        return False


def _report(invocation: Invocation, run: RunResult, environment: ExecutionEnvironment) -> Report:
    """How the platform states the invocation's end: a function error is a completed invocation (its error
    is the function's record); a timeout, a runtime exit or a failed init is the platform's."""
    status: ReportStatus = "error"
    shown: str | None = None
    if environment.init_error is not None:
        posted = "Runtime.OutOfMemory" if environment.out_of_memory else environment.init_error["errorType"]
        shown = "Runtime.Unknown" if environment.init_timed_out else platform_error_type(posted)
    elif run.outcome == "out_of_memory":
        shown = "Runtime.OutOfMemory"
    elif run.outcome == "crashed":
        shown = "Runtime.ExitError"
    else:
        status = "timeout" if run.outcome == "timed_out" else "success"
    return Report(
        invocation.request_id,
        invocation.duration_ms,
        invocation.max_memory_mb,
        status,
        shown,
        invocation.init_duration_ms,
    )


def _produced_bytes(run: RunResult) -> int:
    """The size of what the runtime answered: its response, or its error document."""
    if run.outcome == "succeeded":
        return len(json.dumps(run.value).encode())
    return len(json.dumps(run.error).encode()) if run.outcome == "failed" and run.error else 0
