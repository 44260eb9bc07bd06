"""`incident-sandbox invoke`: traffic for a running sandbox, through its Lambda runtime."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from chaos.sandbox import names, profiles
from chaos.sandbox.events import kinesis_event, sns_event, sqs_event
from chaos.sandbox.sandbox import SandboxError, lambda_accounts, profile_session, read_state
from chaos.workload.async_invocation import AsyncInvoker, AsyncOutcome
from chaos.workload.runtime import Invocation, InvokeError, LocalLambdaRuntime, function_account

MAX_BURST = 100


def default_event(function_name: str, region: str = names.DEFAULT_REGION) -> dict[str, Any]:
    """A healthy event for each world function (a function's ARN names its account, else the first)."""
    name = function_name.rsplit(":function:", 1)[-1].split(":", 1)[0]
    account = function_name.split(":")[4] if function_name.startswith("arn:") else names.ACCOUNT_ID
    if name == names.ORDER_WORKER_FUNCTION:
        return sqs_event(f"arn:aws:sqs:{region}:{account}:{names.ORDERS_QUEUE}", names.order_message())
    if name == names.ORDER_NOTIFIER_FUNCTION:
        return sns_event(f"arn:aws:sns:{region}:{account}:{names.ORDER_EVENTS_TOPIC}", names.order_event())
    if name == names.CLICK_FUNCTION:
        return kinesis_event(f"arn:aws:kinesis:{region}:{account}:stream/{names.CLICK_STREAM}", names.click())
    if name == names.ORDERS_FUNCTION:
        return names.order_request()
    if name == names.REPORT_FUNCTION:
        return names.report_request()
    if name == names.ORDER_INTAKE_FUNCTION:
        return names.order_submission()
    return names.input_event() if name == names.FUNCTION_NAME else {}


def _event(args: argparse.Namespace, region: str) -> Any:
    if args.event is not None:
        try:
            return json.loads(args.event)
        except json.JSONDecodeError as error:
            raise ValueError(f"--event is not valid JSON: {error}") from None
    event = default_event(args.function, region)
    if args.key is not None:
        event["key"] = args.key
    return event


def describe(invocation: Invocation) -> str:
    """One line per invocation, as a person reads a REPORT line."""
    timing = f"{invocation.duration_ms:8.1f} ms"
    if invocation.init_duration_ms is not None:
        timing += f" (cold start, init {invocation.init_duration_ms:.0f} ms)"
    ran = invocation.status not in ("throttled", "refused")
    memory = f"{invocation.max_memory_mb} MB used" if ran else "-"
    line = f"{invocation.request_id}  {invocation.status:<13} {timing:<36} {memory}"
    if invocation.error:
        line += f"\n    {invocation.error[:300]}"
    elif invocation.result is not None:
        line += f"\n    -> {json.dumps(invocation.result)[:300]}"
    if ran and not invocation.logs_written:
        line += "\n    (its log lines could not be written to the log group)"
    return line


def invoke_command(args: argparse.Namespace) -> int:
    if not 1 <= args.burst <= MAX_BURST:
        print(f"incident-sandbox: --burst must be between 1 and {MAX_BURST}", file=sys.stderr)
        return 2
    state = read_state(args.state_dir)
    if state is None:
        raise SandboxError(f"no sandbox running from {args.state_dir}: start one with `incident-sandbox up`")
    try:
        event = _event(args, state["region"])
    except ValueError as error:
        print(f"incident-sandbox: {error}", file=sys.stderr)
        return 2
    env = profiles.sandbox_env(args.state_dir, state["endpoint_url"], state["region"], mcp_api_key="")
    qualifier = f":{args.qualifier}" if args.qualifier else ""
    if args.asynchronous:
        return _invoke_async(args, env, event)
    print(f"invoking {args.function}{qualifier} x{args.burst} with {json.dumps(event)[:200]}", flush=True)
    platform = profile_session(env, names.LAMBDA_SERVICE)
    with LocalLambdaRuntime(platform, accounts=lambda_accounts(env)) as runtime:
        try:
            invocations = runtime.invoke_burst(args.function, event, args.burst, args.qualifier)
        except InvokeError as error:
            print(f"incident-sandbox: {args.function}: {error}", file=sys.stderr)
            return 1
    for invocation in invocations:
        print(describe(invocation))
    return 0 if all(i.status == "succeeded" for i in invocations) else 1


def describe_async(outcome: AsyncOutcome) -> str:
    """One line per turn of an asynchronous event, then one per delivery."""
    line = f"{outcome.request_id or '-':<36}  {outcome.status:<15} attempts {outcome.invoke_count}"
    if outcome.next_attempt_at is not None:
        line += f", next at {datetime.fromtimestamp(outcome.next_attempt_at, UTC):%H:%M:%S} UTC"
    invocation = outcome.invocation
    if outcome.error or (invocation is not None and invocation.error):
        line += f"\n    {(outcome.error or (invocation and invocation.error) or '')[:300]}"
    for delivery in outcome.deliveries:
        result = "delivered" if delivery.delivered else f"NOT delivered: {delivery.error}"
        line += f"\n    {delivery.kind} -> {delivery.target_arn}: {result}"
    return line


def _invoke_async(args: argparse.Namespace, env: dict[str, str], event: Any) -> int:
    """``Invoke`` with ``InvocationType=Event`` as the operator, then the Lambda service's queue run until
    every accepted event is done (retries wait as Lambda waits: 1 and 2 minutes after a function error)."""
    params = {"FunctionName": args.function, "InvocationType": "Event", "Payload": json.dumps(event).encode()}
    params |= {"Qualifier": args.qualifier} if args.qualifier else {}
    print(f"invoking {args.function} asynchronously x{args.burst} with {json.dumps(event)[:200]}", flush=True)
    # the function's own account's operator: a cross-account caller would need a resource-policy statement
    second = function_account(args.function) == names.SECOND_ACCOUNT_ID
    lambda_ = profile_session(env, names.SECOND_OPERATOR if second else names.OPERATOR).client("lambda")
    try:
        for _ in range(args.burst):
            print(f"accepted: HTTP {lambda_.invoke(**params)['StatusCode']}", flush=True)
    except ClientError as error:
        print(f"incident-sandbox: {args.function}: {error}", file=sys.stderr)
        return 1
    service = profile_session(env, names.LAMBDA_SERVICE)
    final: list[AsyncOutcome] = []
    with LocalLambdaRuntime(service, accounts=lambda_accounts(env)) as runtime:
        invoker = AsyncInvoker(runtime, service)
        invoker.collect()
        while (due := invoker.next_due()) is not None:
            time.sleep(max(0.0, due - time.time()))
            for outcome in invoker.pump():
                print(describe_async(outcome), flush=True)
                if outcome.status not in ("retry_scheduled", "throttled", "refused"):
                    final.append(outcome)
    return 0 if final and all(o.status == "succeeded" for o in final) else 1
