"""botocore's service models as the AWS CLI sees them, loaded on first use: service and operation names,
each operation's arguments, and the checks that building and parsing a command share."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


class CommandError(ValueError):
    """A command that cannot be built or is refused; the message says what is wrong and what to do."""


# The CLI names a few services differently from botocore.
_CLI_TO_BOTOCORE = {"s3api": "s3", "configservice": "config", "deploy": "codedeploy"}
BOTOCORE_TO_CLI = {botocore: cli for cli, botocore in _CLI_TO_BOTOCORE.items()}
# Arguments the CLI renames (awscli's argrename customisation), keyed by (service, CLI operation or
# "*", the name xform_name gives); only those for services a Lambda remediation is likely to touch, and
# those that would collide with the global options that parse_command accepts.
_ARG_RENAMES = {
    ("ec2", "*", "--no-egress"): "--ingress",
    ("ec2", "*", "--no-disable-api-termination"): "--enable-api-termination",
    ("ec2", "create-image", "--no-no-reboot"): "--reboot",
    ("sns", "subscribe", "--endpoint"): "--notification-endpoint",
    ("stepfunctions", "send-task-success", "--output"): "--task-output",
    ("opsworks", "*", "--region"): "--stack-region",
    ("elastictranscoder", "*", "--output"): "--job-output",
    ("datapipeline", "*", "--query"): "--objects-query",
}
_REGION = re.compile(r"[a-z]{2,4}(-[a-z]+)+-[0-9]{1,2}")
_SCALAR_TYPES = frozenset({"string", "integer", "long", "float", "double", "timestamp", "blob"})
FILE_PREFIXES = ("file://", "fileb://")


@functools.cache
def _session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@functools.cache
def botocore_services() -> frozenset[str]:
    return frozenset(_session().get_available_services())


@functools.cache
def _service_model(service: str) -> Any:
    return _session().get_service_model(service)


def kebab(name: str) -> str:
    from botocore import xform_name

    return str(xform_name(name, "-"))


@functools.cache
def operations_of(service: str) -> dict[str, str]:
    """The service's operations: CLI name -> botocore name."""
    return {kebab(name): name for name in _service_model(service).operation_names}


@dataclass(frozen=True)
class Arg:
    member: str
    shape: Any
    switch: bool | None = None  # for a boolean member: the value this flag sets


@dataclass(frozen=True)
class Signature:
    input_shape: Any  # None for an operation without input
    args: dict[str, Arg]  # CLI flag -> argument
    flags: dict[str, tuple[str, str | None]]  # member (model order) -> flag, and its negation for a boolean
    required: tuple[str, ...]


@functools.cache
def signature_of(service: str, operation: str) -> Signature:
    shape = _service_model(service).operation_model(operation).input_shape
    cli_operation = kebab(operation)

    def renamed(flag: str) -> str:
        return _ARG_RENAMES.get((service, cli_operation, flag), _ARG_RENAMES.get((service, "*", flag), flag))

    args: dict[str, Arg] = {}
    flags: dict[str, tuple[str, str | None]] = {}
    for member, member_shape in shape.members.items() if shape is not None else ():
        flag = renamed("--" + kebab(member))
        if member_shape.type_name == "boolean":
            negation = renamed("--no-" + kebab(member))
            args[flag] = Arg(member, member_shape, True)
            args[negation] = Arg(member, member_shape, False)
            flags[member] = (flag, negation)
        else:
            args[flag] = Arg(member, member_shape)
            flags[member] = (flag, None)
    required = tuple(shape.required_members) if shape is not None else ()
    return Signature(shape, args, flags, required)


def kind_of(shape: Any) -> str:
    """How the CLI takes a member: a switch, one scalar, a list of scalars, or JSON."""
    if shape.type_name == "boolean":
        return "switch"
    if shape.type_name in _SCALAR_TYPES:
        return "scalar"
    if shape.type_name == "list" and shape.member.type_name in _SCALAR_TYPES:
        return "list"
    return "json"


def validate(where: str, signature: Signature, params: dict[str, Any]) -> None:
    """botocore's own check: types, nested required and unknown members, minimums."""
    from botocore.exceptions import ParamValidationError
    from botocore.validate import validate_parameters

    if signature.input_shape is None:
        return
    try:
        validate_parameters(params, signature.input_shape)
    except ParamValidationError as exc:
        report = str(exc.kwargs.get("report", exc))

        def to_flag(match: re.Match[str]) -> str:
            flags = signature.flags.get(match[2])
            return match[1] + (flags[0] if flags else match[2])

        report = re.sub(r"(parameter (?:in )?|structure )([A-Za-z0-9]+)", to_flag, report)
        raise CommandError(f"{where} refused by botocore's model: {'; '.join(report.splitlines())}") from None


def suggest(word: str, choices: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(choices), n=3)
    return f"; did you mean {' or '.join(matches)}?" if matches else ""


def check_required(where: str, signature: Signature, given: Mapping[str, Any]) -> None:
    missing = [member for member in signature.required if member not in given]
    if missing:
        names = [
            " or ".join(flag for flag in signature.flags[member] if flag is not None) for member in missing
        ]
        raise CommandError(f"{where} is missing required argument(s): {', '.join(names)}")


def check_region(region: str) -> None:
    if not _REGION.fullmatch(region):
        raise CommandError(f"--region {region!r} is not a region name such as us-east-1")
