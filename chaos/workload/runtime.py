"""A small local Lambda runtime: runs a function's real handler in-process, the way Lambda would.

What the emulator enforces itself: IAM. Each invocation runs with credentials from ``sts:AssumeRole``
on the function's execution role, so S3 reads and CloudWatch Logs writes succeed or fail by the
role's policies. What this runtime emulates, because moto cannot run Lambda without Docker:
- reserved concurrency (0 throttles every invocation; N throttles invocations beyond N in flight);
- VPC egress: with no HTTPS egress in the function's security groups, the handler's AWS calls go to a
  loopback listener that never answers, so the invocation hits its timeout;
- the platform log lines (``START``/``END``/``REPORT``, ``Task timed out``), written to the function's
  log group with the role's credentials (a role that cannot write logs leaves none, as on AWS);
- the function's Errors/Throttles alarms, published to SNS in CloudWatch's format when they enter ALARM.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import boto3
import botocore.session
from botocore.exceptions import ClientError

from chaos.egress import allows_https_egress
from chaos.loopback import BlackHole
from chaos.workload import alarms, data_processor

Handler = Callable[..., Any]
Status = Literal["succeeded", "failed", "throttled", "timed_out"]


@dataclass
class Invocation:
    function_name: str
    request_id: str
    status: Status
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    logs_written: bool = False
    alarm_message_id: str | None = None
    log_lines: list[str] = field(default_factory=list, repr=False)


@dataclass
class _Context:
    """The parts of Lambda's context object a handler commonly uses."""

    function_name: str
    aws_request_id: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    deadline: float

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class _NoEgressSession:
    """The role's session as seen from a VPC with no egress: every client goes into the black hole."""

    def __init__(self, session: boto3.Session, black_hole_url: str) -> None:
        self._session = session
        self._black_hole_url = black_hole_url
        self.region_name = session.region_name

    def client(self, service_name: str, **kwargs: Any) -> Any:
        return self._session.client(service_name, **{**kwargs, "endpoint_url": self._black_hole_url})


class _LineCapture(logging.Handler):
    """Collects, in Lambda's format, the log records of one invocation thread."""

    def __init__(self, thread_name: str, request_id: str) -> None:
        super().__init__(level=logging.INFO)
        self._thread_name = thread_name
        self._request_id = request_id
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.threadName == self._thread_name:
            stamp = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            self.lines.append(f"[{record.levelname}]\t{stamp}\t{self._request_id}\t{record.getMessage()}\n")


def _with_credentials(platform: boto3.Session, credentials: dict[str, Any]) -> boto3.Session:
    """A session configured like ``platform`` (same config file and profile, hence the same region and
    endpoint) but signing with the assumed role's temporary credentials."""
    core = botocore.session.Session()
    for variable in ("config_file", "credentials_file", "profile", "region"):
        core.set_config_variable(variable, platform._session.get_config_variable(variable))
    core.set_credentials(
        credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"]
    )
    return boto3.Session(botocore_session=core)


class LocalLambdaRuntime:
    """Invokes functions of the sandbox with their real handler; ``platform`` plays the Lambda service."""

    def __init__(
        self, platform: boto3.Session, *, handler: Handler = data_processor.handler, alarm_topic_arn: str
    ) -> None:
        self._platform = platform
        self._handler = handler
        self._topic_arn = alarm_topic_arn
        self._lambda = platform.client("lambda")
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._alarm_state: dict[tuple[str, alarms.Metric], str] = {}
        self._log_streams: dict[str, str] = {}
        self._black_hole: BlackHole | None = None

    def close(self) -> None:
        if self._black_hole:
            self._black_hole.close()
            self._black_hole = None

    def __enter__(self) -> LocalLambdaRuntime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def invoke(self, function_name: str, event: dict[str, Any]) -> Invocation:
        request_id = str(uuid.uuid4())
        config = self._lambda.get_function_configuration(FunctionName=function_name)
        reserved = self._lambda.get_function_concurrency(FunctionName=function_name).get(
            "ReservedConcurrentExecutions"
        )
        with self._lock:
            in_flight = self._in_flight.get(function_name, 0)
            throttled = reserved is not None and in_flight >= reserved
            if not throttled:
                self._in_flight[function_name] = in_flight + 1
        if throttled:
            invocation = Invocation(
                function_name, request_id, "throttled", error="TooManyRequestsException: Rate Exceeded."
            )
            invocation.alarm_message_id = self._record_metric(config, "Throttles", breached=True)
            return invocation
        try:
            return self._run(config, event, request_id)
        finally:
            with self._lock:
                self._in_flight[function_name] -= 1

    def invoke_burst(self, function_name: str, event: dict[str, Any], count: int) -> list[Invocation]:
        """``count`` concurrent invocations, as a traffic burst would send them."""
        with ThreadPoolExecutor(max_workers=count) as pool:
            return list(pool.map(lambda _: self.invoke(function_name, event), range(count)))

    def _role_sessions(
        self, config: dict[str, Any]
    ) -> tuple[boto3.Session | _NoEgressSession, boto3.Session]:
        """(the handler's session, the platform's session for log shipping), both as the function's role."""
        credentials = self._platform.client("sts").assume_role(
            RoleArn=config["Role"], RoleSessionName=config["FunctionName"]
        )["Credentials"]
        role = _with_credentials(self._platform, credentials)
        if not self._egress_blocked(config):
            return role, role
        if self._black_hole is None:
            self._black_hole = BlackHole()
        # Lambda ships logs outside the function's VPC, so only the handler loses its network.
        return _NoEgressSession(role, self._black_hole.url), role

    def _egress_blocked(self, config: dict[str, Any]) -> bool:
        group_ids = config.get("VpcConfig", {}).get("SecurityGroupIds") or []
        if not group_ids:
            return False
        groups = self._platform.client("ec2").describe_security_groups(GroupIds=group_ids)["SecurityGroups"]
        return not any(allows_https_egress(group) for group in groups)

    def _run(self, config: dict[str, Any], event: dict[str, Any], request_id: str) -> Invocation:
        name, timeout = config["FunctionName"], float(config.get("Timeout", 3))
        handler_session, role_session = self._role_sessions(config)
        invocation = Invocation(name, request_id, "succeeded")
        context = _Context(name, request_id, config["FunctionArn"], config.get("MemorySize", 128), 0.0)
        outcome: dict[str, Any] = {}

        def run_handler() -> None:
            try:
                outcome["result"] = self._handler(event, context, session=handler_session)
            except Exception as error:
                outcome["error"] = error

        worker = threading.Thread(target=run_handler, name=f"lambda-{request_id}", daemon=True)
        capture = _LineCapture(worker.name, request_id)
        started = time.monotonic()
        context.deadline = started + timeout
        root = logging.getLogger()
        root.addHandler(capture)
        try:
            worker.start()
            worker.join(timeout)
        finally:
            root.removeHandler(capture)
        invocation.duration_ms = (time.monotonic() - started) * 1000
        lines = [f"START RequestId: {request_id} Version: $LATEST\n", *capture.lines]
        if worker.is_alive():
            invocation.status = "timed_out"
            invocation.error = f"Task timed out after {timeout:.2f} seconds"
            lines.append(f"{_now_stamp()} {request_id} {invocation.error}\n")
        elif "error" in outcome:
            error = outcome["error"]
            invocation.status = "failed"
            invocation.error = f"{type(error).__name__}: {error}"
            trace = "".join(traceback.format_exception(error))
            lines.append(f"[ERROR] {invocation.error}\n{trace}")
        else:
            invocation.result = outcome.get("result")
        billed = max(1, int(invocation.duration_ms + 0.999))
        lines.append(f"END RequestId: {request_id}\n")
        lines.append(
            f"REPORT RequestId: {request_id}\tDuration: {invocation.duration_ms:.2f} ms\t"
            f"Billed Duration: {billed} ms\t"
            f"Memory Size: {context.memory_limit_in_mb} MB\tMax Memory Used: 78 MB\t"
            + ("Status: timeout\n" if invocation.status == "timed_out" else "\n")
        )
        invocation.log_lines = lines
        invocation.logs_written = self._write_logs(name, role_session, lines)
        invocation.alarm_message_id = self._record_metric(
            config, "Errors", breached=invocation.status != "succeeded"
        )
        if invocation.status != "succeeded":
            self._record_metric(config, "Throttles", breached=False)
        return invocation

    def _write_logs(self, function_name: str, session: boto3.Session, lines: list[str]) -> bool:
        """Write with the role's credentials; a denied write loses the lines, as on AWS."""
        logs = session.client("logs")
        group = f"/aws/lambda/{function_name}"
        stream = self._log_streams.get(function_name)
        now_ms = int(time.time() * 1000)
        try:
            if stream is None:
                stream = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
                logs.create_log_stream(logGroupName=group, logStreamName=stream)
                self._log_streams[function_name] = stream
            logs.put_log_events(
                logGroupName=group,
                logStreamName=stream,
                logEvents=[{"timestamp": now_ms, "message": line} for line in lines],
            )
        except ClientError:
            return False
        return True

    def _record_metric(self, config: dict[str, Any], metric: alarms.Metric, *, breached: bool) -> str | None:
        """Move the function's alarm for ``metric``; publish when it enters ALARM. Returns the MessageId."""
        key = (config["FunctionName"], metric)
        with self._lock:
            previous = self._alarm_state.get(key, "OK")
            self._alarm_state[key] = "ALARM" if breached else "OK"
        if not breached or previous == "ALARM":
            return None
        arn_parts = config["FunctionArn"].split(":")
        subject, message = alarms.alarm_message(
            function_name=config["FunctionName"],
            metric=metric,
            value=1.0,
            topic_arn=self._topic_arn,
            region=arn_parts[3],
            account_id=arn_parts[4],
            now=datetime.now(UTC),
        )
        response = self._platform.client("sns").publish(
            TopicArn=self._topic_arn, Subject=subject, Message=json.dumps(message)
        )
        message_id: str = response["MessageId"]
        return message_id


def _now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
