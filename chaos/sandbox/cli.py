"""`incident-sandbox`: start, stop and check the embedded AWS sandbox."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from chaos.mcp_process import CONSOLE_STATE_FILE, stop_recorded
from chaos.sandbox import names
from chaos.sandbox.invoke import invoke_command
from chaos.sandbox.sandbox import Sandbox, SandboxError, read_state, start_sandbox, stop_sandbox


def _usage(sandbox: Sandbox) -> str:
    env_file = (sandbox.state_dir / "env").resolve()
    return f"""\
sandbox ready at {sandbox.endpoint_url} (region {sandbox.region}, emulator pid {sandbox.emulator_pid})

Use it from another shell with any AWS SDK or CLI:
  source {env_file}
  AWS_PROFILE=operator aws lambda get-function-configuration --function-name {names.FUNCTION_NAME}

Send traffic, then break something with incident-chaos and send it again:
  incident-sandbox invoke {names.FUNCTION_NAME}
  incident-sandbox invoke {names.ORDERS_FUNCTION} --qualifier {names.ORDERS_ALIAS} --burst 3

Profiles: operator (admin), mcp-server (read-only diagnostics), supervisor (incident tables + MCP key),
          watchdog (incident-state query and update), lambda-service (the sandbox's stand-in for Lambda),
          second-operator (admin of the second account, {names.SECOND_ACCOUNT_ID}),
          second-lambda-service (the second account's stand-in for Lambda)
World:    functions {", ".join(names.FUNCTIONS)} (each with its role, log group and
          Errors, Throttles and log-silence alarms), topic {names.TOPIC_NAME},
          tables {names.STATE_TABLE} and {names.CONTEXT_TABLE},
          queue {names.ORDERS_QUEUE} -> {names.ORDER_WORKER_FUNCTION} (DLQ {names.ORDERS_DLQ}), topic
          {names.ORDER_EVENTS_TOPIC} -> {names.ORDER_NOTIFIER_FUNCTION} (DLQ {names.ORDER_NOTIFIER_DLQ}),
          stream {names.CLICK_STREAM} -> {names.CLICK_FUNCTION},
          SecureString {names.MCP_KEY_PARAMETER} (also exported as MCP_API_KEY);
          in the second account a copy of {names.ORDERS_FUNCTION} and the role {names.READ_ONLY_ROLE}
"""


def _up(args: argparse.Namespace) -> int:
    sandbox = start_sandbox(
        args.state_dir,
        region=args.region,
        port=args.port,
        time_scale=args.time_scale,
        cloudtrail_delay=args.cloudtrail_delay,
    )
    print(_usage(sandbox), flush=True)
    if args.detach:
        print(f"Running in the background; stop it with: incident-sandbox down --state-dir {args.state_dir}")
        return 0
    print("Press Ctrl-C to stop.", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(0.5):
        if not sandbox.is_alive():
            print("the emulator stopped", file=sys.stderr)
            break
    sandbox.stop()
    print("sandbox stopped")
    return 0


def _down(args: argparse.Namespace) -> int:
    if stop_recorded(args.state_dir):
        print(f"MCP server left by incident-drill --keep-running in {args.state_dir} stopped")
    if stop_recorded(args.state_dir, CONSOLE_STATE_FILE):
        print(f"incident console left by incident-drill --keep-running in {args.state_dir} stopped")
    if stop_sandbox(args.state_dir):
        print(f"sandbox in {args.state_dir} stopped")
    else:
        print(f"no sandbox running from {args.state_dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    state = read_state(args.state_dir)
    if state is None:
        print(f"no sandbox state in {args.state_dir}")
        return 1
    print(f"sandbox at {state['endpoint_url']} (emulator pid {state['emulator_pid']})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-sandbox", description="The embedded AWS sandbox (moto, IAM enforced)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start and provision the sandbox; stays up until interrupted")
    up.add_argument("--region", default=names.DEFAULT_REGION)
    up.add_argument("--port", type=int, default=None, help="loopback port (default: a free one)")
    up.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="N",
        help="run the emulator's clocks (CloudTrail's lookup rate and delivery delays) N times faster "
        "than AWS's (1 to 500; default 1: AWS's own)",
    )
    up.add_argument(
        "--cloudtrail-delay",
        type=float,
        default=None,
        metavar="SECONDS",
        help="deliver every CloudTrail event this many seconds after its call (0: at once; default: each "
        "after a delay drawn as AWS's, 1 to 9 minutes divided by the time scale)",
    )
    up.add_argument("--detach", action="store_true", help="leave it running in the background and return")
    up.set_defaults(run=_up)
    commands.add_parser(
        "down", help="stop a sandbox started in the background (and a kept MCP server and console)"
    ).set_defaults(run=_down)
    commands.add_parser("status", help="show the running sandbox, if any").set_defaults(run=_status)
    invoke = commands.add_parser(
        "invoke", help="invoke a sandbox function through the sandbox's Lambda runtime and show each result"
    )
    invoke.add_argument("function", help=f"function name or ARN (e.g. {', '.join(names.FUNCTIONS)})")
    payload = invoke.add_mutually_exclusive_group()
    payload.add_argument("--event", help="the event, as JSON (default: a typical event for the function)")
    payload.add_argument("--key", help=f"for {names.FUNCTION_NAME}: the input object key to process")
    invoke.add_argument(
        "--burst", type=int, default=1, help="concurrent invocations (default 1, at most 100)"
    )
    invoke.add_argument("--qualifier", help="a version number or alias name (default $LATEST)")
    invoke.add_argument(
        "--async",
        dest="asynchronous",
        action="store_true",
        help="invoke with InvocationType=Event as the operator, then run the queued events (retries, "
        "destinations, dead-letter queue) until done",
    )
    invoke.set_defaults(run=invoke_command)
    for command in commands.choices.values():
        command.add_argument(
            "--state-dir", type=Path, default=Path(".sandbox"), help="where files go (default .sandbox/)"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except SandboxError as error:
        print(f"incident-sandbox: {error}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
