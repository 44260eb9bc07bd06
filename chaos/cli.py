"""`incident-chaos`: inject and restore faults on a function tagged ``chaos-allowed=true``.

AWS is reached through the standard chain (``AWS_PROFILE``, ``--profile``, ...): the sandbox's
``operator`` profile, or an identity of your own account. Exit status: 0 done, 1 failed, 2 bad usage,
3 refused (no chaos tag, or nothing to break).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import boto3
from botocore.exceptions import BotoCoreError
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from chaos.faults.chaos import Chaos, Fault
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3, TARGETS
from chaos.faults.ledger import Ledger
from chaos.faults.logs import KINDS, inject_lines
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from mcp_server.lambda_names import validate_lambda_name

FAULTS: dict[str, Fault] = {f.name: f for f in (REVOKE_S3, REVOKE_CLOUDWATCH, THROTTLE, BLOCK_EGRESS)}


class ChaosSettings(BaseSettings):
    """Read from CHAOS_<FIELD>, e.g. CHAOS_FUNCTION."""

    model_config = SettingsConfigDict(env_prefix="CHAOS_", extra="ignore")

    function: str = Field(
        default="data-processor", description="Function targeted when --function is not given."
    )
    state_prefix: str = Field(
        default=Ledger.DEFAULT_PREFIX,
        pattern=r"^/[\w./-]+$",
        description="SSM path under which the prior state of each injected fault is saved.",
    )


def _function(value: str) -> str:
    try:
        return validate_lambda_name(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _non_negative(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(
            f"expected a whole number of concurrent executions (0 or more), not {value!r}"
        )
    return int(value)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {value!r}")
    return int(value)


def build_parser(settings: ChaosSettings) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--function",
        type=_function,
        default=settings.function,
        help=f"target function (default {settings.function})",
    )
    common.add_argument("--dry-run", action="store_true", help="print the API calls; change nothing")
    common.add_argument("--profile", help="AWS profile (default: the standard chain, e.g. AWS_PROFILE)")
    common.add_argument("--region", help="AWS region (default: from the profile or environment)")

    parser = argparse.ArgumentParser(
        prog="incident-chaos",
        description="Inject faults into a function tagged chaos-allowed=true; restore them exactly.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    iam = commands.add_parser("iam", help="revoke or restore the execution role's permissions")
    iam_actions = iam.add_subparsers(dest="action", required=True)
    revoke = iam_actions.add_parser("revoke", parents=[common], help="take permissions away from the role")
    revoke.add_argument("--target", choices=sorted(TARGETS), required=True, help="which permissions")
    restore = iam_actions.add_parser("restore", parents=[common], help="put the revoked permissions back")
    restore.add_argument("--target", choices=sorted(TARGETS), default="both", help="which (default both)")

    throttle = commands.add_parser("throttle", parents=[common], help="set the reserved concurrency")
    throttle.add_argument(
        "--concurrency", type=_non_negative, default=0, help="0 throttles all, 1 any overlap"
    )
    commands.add_parser("unthrottle", parents=[common], help="restore the previous reserved concurrency")

    network = commands.add_parser("network", help="block or restore HTTPS egress")
    network_actions = network.add_subparsers(dest="action", required=True)
    network_actions.add_parser("block", parents=[common], help="remove HTTPS egress from the security groups")
    network_actions.add_parser("restore", parents=[common], help="authorize the removed egress rules again")

    logs = commands.add_parser("logs", help="write hostile or high-volume lines into the log group")
    logs_actions = logs.add_subparsers(dest="action", required=True)
    inject = logs_actions.add_parser("inject", parents=[common], help="write the lines (nothing to restore)")
    inject.add_argument("--kind", choices=KINDS, required=True)
    inject.add_argument("--lines", type=_positive, default=2000, help="lines of a flood (default 2000)")

    commands.add_parser("restore", parents=[common], help="restore every fault saved for the function")
    commands.add_parser("status", parents=[common], help="list the faults whose prior state is saved")
    return parser


def run(args: argparse.Namespace, chaos: Chaos) -> int:
    function = args.function
    say = chaos.say
    command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
    if command == "iam revoke":
        for fault in TARGETS[args.target]:
            say(f"{fault.name}: {fault.summary} ({function})")
            chaos.inject(fault, function)
    elif command == "throttle":
        say(f"throttle: reserved concurrency of {function} to {args.concurrency}")
        chaos.inject(THROTTLE, function, concurrency=args.concurrency)
    elif command == "network block":
        say(f"network: {BLOCK_EGRESS.summary} ({function})")
        chaos.inject(BLOCK_EGRESS, function)
    elif command == "logs inject":
        say(f"logs: {args.kind} lines into the log group of {function}")
        written = inject_lines(chaos, function, args.kind, count=args.lines)
        say(f"  {written} lines")
    elif command == "status":
        saved = chaos.ledger.all(function)
        for state in saved:
            where = chaos.ledger.name(function, state.fault)
            say(f"{state.fault}: injected; prior state saved {state.saved_at} in {where}")
        say(f"{len(saved)} fault(s) to restore on {function}" if saved else f"no saved fault on {function}")
        return 0
    else:
        if command == "iam restore":
            faults = TARGETS[args.target]
        elif command == "restore":
            faults = tuple(FAULTS[s.fault] for s in chaos.ledger.all(function) if s.fault in FAULTS)
        else:
            faults = {"unthrottle": (THROTTLE,), "network restore": (BLOCK_EGRESS,)}[command]
        if not faults:
            say(f"nothing to restore on {function}")
        for fault in faults:
            say(f"restore {fault.name} ({function})")
            chaos.restore(fault, function)
    changed = len(chaos.calls)
    if chaos.dry_run:
        say(f"dry run: {changed} call(s) would be made; nothing was changed")
    else:
        say(f"done: {changed} call(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = ChaosSettings()
    except ValidationError as error:
        print(f"incident-chaos: invalid configuration:\n{error}", file=sys.stderr)
        return 2
    args = build_parser(settings).parse_args(argv)
    try:
        session = boto3.Session(profile_name=args.profile, region_name=args.region)
    except BotoCoreError as error:
        print(f"incident-chaos: {error}", file=sys.stderr)
        return 2
    chaos = Chaos(
        session,
        dry_run=args.dry_run,
        say=lambda line: print(line, flush=True),
        state_prefix=settings.state_prefix,
    )
    try:
        return run(args, chaos)
    except ChaosRefused as error:
        print(f"incident-chaos: {error}", file=sys.stderr)
        return 3
    except ChaosError as error:
        print(f"incident-chaos: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
