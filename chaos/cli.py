"""`incident-chaos`: inject and restore faults on a function tagged ``chaos-allowed=true``.

AWS is reached through the standard chain (``AWS_PROFILE``, ``--profile``, ...): the sandbox's
``operator`` profile, or an identity of your own account. Exit status: 0 done, 1 failed, 2 bad usage,
3 refused (no chaos tag, or nothing to break).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import TypeAlias

import boto3
from botocore.exceptions import BotoCoreError
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from chaos.faults import deploy
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.config import (
    APPLICATION_LEVELS,
    CONFIG_ENV,
    CONFIG_LOGGING,
    CONFIG_MEMORY,
    CONFIG_TIMEOUT,
    LOG_FORMATS,
    SYSTEM_LEVELS,
)
from chaos.faults.dependency import DEPENDENCY_REMOVE
from chaos.faults.deploy import DEPLOY_BAD_CODE
from chaos.faults.environment_key import KEY_DISABLE, STATES
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.event_sources import ESM_DELETE, ESM_DISABLE, MAX_VISIBILITY_SECONDS, QUEUE_VISIBILITY
from chaos.faults.function_copy import FUNCTION_COPY
from chaos.faults.iam import (
    IAM_BOUNDARY,
    IAM_DENY,
    IAM_NARROW,
    IAM_REVOKE,
    IAM_TOUCH,
    REVOKE_CLOUDWATCH,
    REVOKE_S3,
    TARGETS,
)
from chaos.faults.invoke_paths import ASYNC_DLQ_REMOVE, ASYNC_RETRIES, PERMISSION_REMOVE, SNS_UNSUBSCRIBE
from chaos.faults.ledger import Ledger
from chaos.faults.logs import KINDS, inject_lines
from chaos.faults.network import NETWORK_BLOCK
from chaos.faults.streams import STREAM_POISON
from chaos.faults.throttle import THROTTLE
from chaos.faults.vpc_capacity import SUBNET_FULL, VPC_ATTACH
from mcp_server.lambda_names import validate_lambda_name

IAM_FAULTS = (REVOKE_S3, REVOKE_CLOUDWATCH, IAM_REVOKE, IAM_NARROW, IAM_DENY, IAM_BOUNDARY, IAM_TOUCH)
DEPLOY_FAULTS = (DEPLOY_BAD_CODE, FUNCTION_COPY)
CONFIG_FAULTS = (CONFIG_TIMEOUT, CONFIG_MEMORY, CONFIG_ENV, CONFIG_LOGGING)
EVENT_PATH_FAMILIES: dict[str, tuple[Fault, ...]] = {
    "esm": (ESM_DISABLE, ESM_DELETE),
    "queue": (QUEUE_VISIBILITY,),
    "permission": (PERMISSION_REMOVE,),
    "sns": (SNS_UNSUBSCRIBE,),
    "async": (ASYNC_DLQ_REMOVE, ASYNC_RETRIES),
    "stream": (STREAM_POISON,),
}
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        *IAM_FAULTS,
        THROTTLE,
        *NETWORK_BLOCK.values(),
        *CONFIG_FAULTS,
        *DEPLOY_FAULTS,
        DEPENDENCY_REMOVE,
        KEY_DISABLE,
        VPC_ATTACH,
        SUBNET_FULL,
        *(fault for family in EVENT_PATH_FAMILIES.values() for fault in family),
    )
}
# What a family's `restore` puts back: every fault of the family that has saved state.
FAMILIES: dict[str, tuple[Fault, ...]] = {
    "iam restore": IAM_FAULTS,
    "network restore": tuple(NETWORK_BLOCK.values()),
    "config restore": CONFIG_FAULTS,
    "deploy restore": DEPLOY_FAULTS,
    "dependency restore": (DEPENDENCY_REMOVE,),
    "key restore": (KEY_DISABLE,),
    "vpc restore": (SUBNET_FULL, VPC_ATTACH),
    "unthrottle": (THROTTLE,),
    **{f"{family} restore": faults for family, faults in EVENT_PATH_FAMILIES.items()},
}


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


def _assignment(value: str) -> tuple[str, str]:
    name, sep, assigned = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {value.split('=')[0]!r}...")
    return name, assigned


def _arn(value: str) -> str:
    if not value.startswith("arn:"):
        raise argparse.ArgumentTypeError(
            f"expected an ARN such as arn:aws:s3:::other-bucket/*, not {value!r}"
        )
    return value


def _ranged(low: int, high: int, what: str) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if not value.isdigit() or not low <= int(value) <= high:
            raise argparse.ArgumentTypeError(f"expected {what} from {low} to {high}, not {value!r}")
        return int(value)

    return parse


_STATEMENT_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")  # Lambda's StatementId pattern and length
_TOPIC = re.compile(r"^([A-Za-z0-9_-]{1,256}|arn:aws[A-Za-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256})$")


def _statement_id(value: str) -> str:
    if not _STATEMENT_ID.match(value):
        raise argparse.ArgumentTypeError(
            f"expected a statement id (letters, digits, - and _, at most 100), not {value!r}"
        )
    return value


def _topic(value: str) -> str:
    if not _TOPIC.match(value):
        raise argparse.ArgumentTypeError(f"expected an SNS topic name or ARN, not {value!r}")
    return value


def _action(value: str) -> str:
    if ":" not in value and value != "*":
        raise argparse.ArgumentTypeError(f"expected an IAM action such as s3:GetObject, not {value!r}")
    return value


# The subcommands are added one family at a time; ``common`` carries the options every action takes.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _common_options(settings: ChaosSettings) -> argparse.ArgumentParser:
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
    return common


def _add_iam(commands: Commands, common: argparse.ArgumentParser) -> None:
    iam = commands.add_parser("iam", help="change or restore the execution role's permissions")
    iam_actions = iam.add_subparsers(dest="action", required=True)
    revoke = iam_actions.add_parser("revoke", parents=[common], help="take permissions away from the role")
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--target", choices=sorted(TARGETS), help="which permissions")
    which.add_argument(
        "--action",
        dest="iam_action",
        type=_action,
        help="take this action out of the inline Allow statements, e.g. dynamodb:PutItem",
    )
    narrow = iam_actions.add_parser(
        "narrow", parents=[common], help="keep the role's S3 grants (or an action's) but on another resource"
    )
    narrow.add_argument("--to-resource", type=_arn, required=True, help="e.g. arn:aws:s3:::other-bucket/*")
    narrow.add_argument(
        "--action", dest="iam_action", type=_action, help="this action's grants instead of S3's"
    )
    deny = iam_actions.add_parser("deny", parents=[common], help="add an explicit Deny of an action")
    deny.add_argument("--action", dest="iam_action", type=_action, required=True, help="e.g. s3:GetObject")
    boundary = iam_actions.add_parser(
        "boundary", parents=[common], help="set a permissions boundary that excludes an action"
    )
    boundary.add_argument("--exclude", type=_action, required=True, help="e.g. s3:GetObject")
    iam_actions.add_parser(
        "touch",
        parents=[common],
        help="put every inline policy of the role again unchanged (a recorded change, no new permission)",
    )
    restore = iam_actions.add_parser("restore", parents=[common], help="put the role's permissions back")
    restore.add_argument("--target", choices=sorted(TARGETS), help="only these revoked permissions")


def _add_throttle(commands: Commands, common: argparse.ArgumentParser) -> None:
    throttle = commands.add_parser("throttle", parents=[common], help="set the reserved concurrency")
    throttle.add_argument(
        "--concurrency", type=_non_negative, default=0, help="0 throttles all, 1 any overlap"
    )
    commands.add_parser("unthrottle", parents=[common], help="restore the previous reserved concurrency")


def _add_network(commands: Commands, common: argparse.ArgumentParser) -> None:
    network = commands.add_parser("network", help="block or restore HTTPS egress")
    network_actions = network.add_subparsers(dest="action", required=True)
    block = network_actions.add_parser("block", parents=[common], help="block HTTPS egress from the VPC")
    block.add_argument(
        "--via",
        choices=sorted(NETWORK_BLOCK),
        default="sg",
        help="sg: remove the security groups' HTTPS egress (default); nacl: a network ACL deny before the "
        "allow; route: remove the subnets' default route to the NAT gateway",
    )
    network_actions.add_parser("restore", parents=[common], help="put back what was blocked")


def _add_config(commands: Commands, common: argparse.ArgumentParser) -> None:
    config = commands.add_parser("config", help="change or restore the function's configuration")
    config_actions = config.add_subparsers(dest="action", required=True)
    timeout = config_actions.add_parser("timeout", parents=[common], help="set the timeout")
    timeout.add_argument("--seconds", type=_positive, required=True)
    memory = config_actions.add_parser("memory", parents=[common], help="set the memory size")
    memory.add_argument("--mb", type=_positive, required=True)
    env = config_actions.add_parser(
        "env", parents=[common], help="unset or set an environment variable (values are never printed)"
    )
    change = env.add_mutually_exclusive_group(required=True)
    change.add_argument("--unset", metavar="NAME")
    change.add_argument("--set", dest="assign", type=_assignment, metavar="NAME=VALUE")
    logging = config_actions.add_parser(
        "logging", parents=[common], help="set the log format or log levels (levels only with JSON)"
    )
    logging.add_argument("--format", dest="log_format", choices=LOG_FORMATS)
    logging.add_argument("--application-level", choices=APPLICATION_LEVELS)
    logging.add_argument(
        "--system-level", choices=SYSTEM_LEVELS, help="above INFO, no start and report records are written"
    )
    config_actions.add_parser("restore", parents=[common], help="put the configuration back")


def _add_deploy(commands: Commands, common: argparse.ArgumentParser) -> None:
    deploy_parser = commands.add_parser("deploy", help="deploy broken code, or restore the code")
    deploy_actions = deploy_parser.add_subparsers(dest="action", required=True)
    bad = deploy_actions.add_parser(
        "bad-code", parents=[common], help="a broken build; moves the function's aliases to it"
    )
    bad.add_argument("--kind", choices=deploy.KINDS, required=True)
    deploy_actions.add_parser(
        "copy",
        parents=[common],
        help="deploy the function's code as <function>-copy with a new role that grants only log writes",
    )
    deploy_actions.add_parser(
        "restore", parents=[common], help="code, versions and aliases as they were; no copy left"
    )


def _add_dependency(commands: Commands, common: argparse.ArgumentParser) -> None:
    dependency = commands.add_parser("dependency", help="remove or restore what the function calls")
    dependency_actions = dependency.add_subparsers(dest="action", required=True)
    remove = dependency_actions.add_parser(
        "remove", parents=[common], help="delete the table or bucket the function's environment names"
    )
    which = remove.add_mutually_exclusive_group(required=True)
    which.add_argument("--table", action="store_true", help="the table named by TABLE_NAME")
    which.add_argument(
        "--bucket", action="store_true", help="the bucket named by INPUT_BUCKET or REPORT_BUCKET"
    )
    dependency_actions.add_parser("restore", parents=[common], help="recreate it with every item or object")


def _add_key(commands: Commands, common: argparse.ArgumentParser) -> None:
    key = commands.add_parser("key", help="make the environment variables' KMS key unusable, or restore it")
    key_actions = key.add_subparsers(dest="action", required=True)
    disable = key_actions.add_parser(
        "disable",
        parents=[common],
        help="disable the key (or schedule its deletion, or revoke the role's grant): no new environment "
        "starts",
    )
    disable.add_argument(
        "--state",
        choices=STATES,
        default="disabled",
        help="disabled (default), pending-deletion (7 days), or grant-revoked (the role's decrypt grants)",
    )
    key_actions.add_parser(
        "restore", parents=[common], help="cancel the deletion, enable the key and make its grants again"
    )


def _add_vpc(commands: Commands, common: argparse.ArgumentParser) -> None:
    vpc = commands.add_parser("vpc", help="attach the function to a VPC, fill its subnets, or restore them")
    vpc_actions = vpc.add_subparsers(dest="action", required=True)
    attach = vpc_actions.add_parser(
        "attach", parents=[common], help="attach it to another function's subnets, with a group of its own"
    )
    attach.add_argument("--into", required=True, help="the function whose subnets it joins")
    vpc_actions.add_parser(
        "fill",
        parents=[common],
        help="take every free address of its subnets: Lambda cannot connect it again",
    )
    vpc_actions.add_parser(
        "restore", parents=[common], help="free the addresses taken, and detach it if it was attached"
    )


def _add_logs(commands: Commands, common: argparse.ArgumentParser) -> None:
    logs = commands.add_parser("logs", help="write hostile or high-volume lines into the log group")
    logs_actions = logs.add_subparsers(dest="action", required=True)
    inject = logs_actions.add_parser("inject", parents=[common], help="write the lines (nothing to restore)")
    inject.add_argument("--kind", choices=KINDS, required=True)
    inject.add_argument("--lines", type=_positive, default=2000, help="lines of a flood (default 2000)")


def _add_event_paths(commands: Commands, common: argparse.ArgumentParser) -> None:
    esm = commands.add_parser("esm", help="disable or delete the function's SQS event source mapping")
    esm_actions = esm.add_subparsers(dest="action", required=True)
    esm_actions.add_parser("disable", parents=[common], help="Enabled=false: the queue backs up")
    esm_actions.add_parser("delete", parents=[common], help="delete the mapping (restore creates it again)")
    esm_actions.add_parser("restore", parents=[common], help="enable or create the mapping again")
    queue = commands.add_parser("queue", help="change the visibility timeout of the function's mapped queue")
    queue_actions = queue.add_subparsers(dest="action", required=True)
    visibility = queue_actions.add_parser("visibility", parents=[common], help="set VisibilityTimeout")
    visibility.add_argument(
        "--seconds", type=_ranged(0, MAX_VISIBILITY_SECONDS, "a whole number of seconds"), required=True
    )
    queue_actions.add_parser("restore", parents=[common], help="put the visibility timeout back")
    permission = commands.add_parser("permission", help="remove a caller's invoke permission")
    permission_actions = permission.add_subparsers(dest="action", required=True)
    remove = permission_actions.add_parser(
        "remove",
        parents=[common],
        help="remove a statement of the resource-based policy of the function or one of its aliases",
    )
    remove.add_argument(
        "--statement-id", type=_statement_id, help="default: the only statement, or the only SNS one"
    )
    permission_actions.add_parser("restore", parents=[common], help="add the statement back")
    sns = commands.add_parser("sns", help="unsubscribe the function from an SNS topic")
    sns_actions = sns.add_subparsers(dest="action", required=True)
    unsubscribe = sns_actions.add_parser(
        "unsubscribe", parents=[common], help="remove its lambda subscription"
    )
    unsubscribe.add_argument("--topic", type=_topic, help="name or ARN (default: its only topic)")
    sns_actions.add_parser("restore", parents=[common], help="subscribe the function again")
    async_ = commands.add_parser("async", help="change the function's asynchronous invocation settings")
    async_actions = async_.add_subparsers(dest="action", required=True)
    async_actions.add_parser("dlq-remove", parents=[common], help="remove its dead-letter queue")
    retries = async_actions.add_parser(
        "retries", parents=[common], help="set retry attempts and/or maximum event age"
    )
    retries.add_argument("--attempts", type=_ranged(0, 2, "a number of retry attempts"))
    retries.add_argument("--max-age", type=_ranged(60, 21600, "a whole number of seconds"))
    async_actions.add_parser("restore", parents=[common], help="put the settings back")
    stream = commands.add_parser("stream", help="write a bad record to the stream the function reads")
    stream_actions = stream.add_subparsers(dest="action", required=True)
    stream_actions.add_parser(
        "poison", parents=[common], help="a record that is not JSON, on the first shard of its Kinesis stream"
    )
    stream_actions.add_parser("restore", parents=[common], help="put the mapping's retry settings back")


def build_parser(settings: ChaosSettings) -> argparse.ArgumentParser:
    common = _common_options(settings)
    parser = argparse.ArgumentParser(
        prog="incident-chaos",
        description="Inject faults into a function tagged chaos-allowed=true; restore them exactly.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        _add_iam,
        _add_throttle,
        _add_network,
        _add_config,
        _add_deploy,
        _add_dependency,
        _add_key,
        _add_vpc,
        _add_logs,
        _add_event_paths,
    ):
        add(commands, common)
    commands.add_parser("restore", parents=[common], help="restore every fault saved for the function")
    commands.add_parser("status", parents=[common], help="list the faults whose prior state is saved")
    return parser


Injection = tuple[Fault, dict[str, object]]
INJECTIONS: dict[str, Callable[[argparse.Namespace], Injection]] = {
    "iam narrow": lambda a: (
        IAM_NARROW,
        {"to_resource": a.to_resource} | ({"action": a.iam_action} if a.iam_action else {}),
    ),
    "iam deny": lambda a: (IAM_DENY, {"action": a.iam_action}),
    "iam boundary": lambda a: (IAM_BOUNDARY, {"exclude": a.exclude}),
    "iam touch": lambda a: (IAM_TOUCH, {}),
    "network block": lambda a: (NETWORK_BLOCK[a.via], {}),
    "config timeout": lambda a: (CONFIG_TIMEOUT, {"seconds": a.seconds}),
    "config memory": lambda a: (CONFIG_MEMORY, {"mb": a.mb}),
    "config env": lambda a: (CONFIG_ENV, {"unset": a.unset, "set_": a.assign}),
    "config logging": lambda a: (
        CONFIG_LOGGING,
        {
            "log_format": a.log_format,
            "application_level": a.application_level,
            "system_level": a.system_level,
        },
    ),
    "deploy bad-code": lambda a: (DEPLOY_BAD_CODE, {"kind": a.kind}),
    "deploy copy": lambda a: (FUNCTION_COPY, {}),
    "dependency remove": lambda a: (DEPENDENCY_REMOVE, {"table": a.table, "bucket": a.bucket}),
    "key disable": lambda a: (KEY_DISABLE, {"state": a.state}),
    "vpc attach": lambda a: (VPC_ATTACH, {"into": a.into}),
    "vpc fill": lambda a: (SUBNET_FULL, {}),
    "esm disable": lambda a: (ESM_DISABLE, {}),
    "esm delete": lambda a: (ESM_DELETE, {}),
    "queue visibility": lambda a: (QUEUE_VISIBILITY, {"seconds": a.seconds}),
    "permission remove": lambda a: (PERMISSION_REMOVE, {"statement_id": a.statement_id}),
    "sns unsubscribe": lambda a: (SNS_UNSUBSCRIBE, {"topic": a.topic}),
    "async dlq-remove": lambda a: (ASYNC_DLQ_REMOVE, {}),
    "async retries": lambda a: (ASYNC_RETRIES, {"attempts": a.attempts, "max_age": a.max_age}),
    "stream poison": lambda a: (STREAM_POISON, {}),
}


def run(args: argparse.Namespace, chaos: Chaos) -> int:
    function = args.function
    say = chaos.say
    command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
    if command == "iam revoke" and args.iam_action:
        say(f"{IAM_REVOKE.name}: {args.iam_action} taken out of the role's inline policies ({function})")
        chaos.inject(IAM_REVOKE, function, action=args.iam_action)
    elif command == "iam revoke":
        for fault in TARGETS[args.target]:
            say(f"{fault.name}: {fault.summary} ({function})")
            chaos.inject(fault, function)
    elif command == "throttle":
        say(f"throttle: reserved concurrency of {function} to {args.concurrency}")
        chaos.inject(THROTTLE, function, concurrency=args.concurrency)
    elif command in INJECTIONS:
        fault, params = INJECTIONS[command](args)
        say(f"{fault.name}: {fault.summary} ({function})")
        chaos.inject(fault, function, **params)
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
        if command == "iam restore" and args.target:
            faults = TARGETS[args.target]
        else:
            injected = {s.fault for s in chaos.ledger.all(function)}
            family = FAMILIES.get(command, tuple(FAULTS.values()))
            faults = tuple(f for f in family if f.name in injected)
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
    parser = build_parser(settings)
    args = parser.parse_args(argv)
    if (args.command, getattr(args, "action", None)) == ("async", "retries") and (
        args.attempts is None and args.max_age is None
    ):
        parser.error("async retries: give --attempts, --max-age or both")
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
