"""Read an ``aws <service> <operation> --args ...`` remediation command into botocore parameters, and run it.

The drill compares a diagnosis's first remediation command with the one its scenario expects
(:mod:`chaos.drill.expected_command`), applies it as the operator when it is that one, and then checks, with
a predicate of its own, that the function recovers. This parser is the stage's own: it shares no code with
the diagnosis's command builder (docs/architecture.md, principle 1). It reads the AWS CLI's syntax from
botocore's service models — ``--kebab-case`` options named after the operation's input members
(``xform_name``), booleans as ``--enabled`` / ``--no-enabled``
(https://docs.aws.amazon.com/cli/latest/reference/lambda/update-event-source-mapping.html), integers, lists
as separate words or JSON, structures and maps as JSON or the shorthand ``Key=Value,Key2=Value2``
(https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-shorthand.html; ``aws sqs set-queue-attributes
--attributes VisibilityTimeout=30``) — and refuses what it does not read exactly: anything outside the
allowlist of ``"service operation"`` pairs (the scenario's expected one: a diagnosis must never make the
drill delete a role), unknown options, repeated ones, values the CLI would read from a file, ``--profile``
or ``--endpoint-url`` (the drill applies it as its operator, where the sandbox is), and whatever botocore's
parameter validation refuses.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from botocore import xform_name
from botocore.exceptions import DataNotFoundError, ParamValidationError
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.validate import validate_parameters

_CLI_TO_BOTOCORE = {"s3api": "s3"}  # CLI service names that differ from botocore's
_IGNORED_WITH_VALUE = frozenset({"--output", "--query"})  # how the answer is shown, not what is done
_IGNORED_FLAGS = frozenset({"--no-cli-pager", "--no-paginate"})
_REFUSED_GLOBALS = frozenset({"--profile", "--endpoint-url", "--cli-input-json", "--cli-input-yaml"})
_FILE_PREFIXES = ("file://", "fileb://")


class CommandRefused(ValueError):
    """The command is not one the drill may run, or does not read as the AWS CLI would read it."""


@dataclass(frozen=True)
class AwsCommand:
    service: str  # botocore's name: "lambda", "sqs", "s3"
    operation: str  # the API's: "UpdateEventSourceMapping"
    params: dict[str, Any] = field(default_factory=dict)
    region: str | None = None

    @property
    def method(self) -> str:
        """The boto3 client method: ``update_event_source_mapping``."""
        return str(xform_name(self.operation))


@functools.cache
def _model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def parse_command(text: str, allowed: Collection[str]) -> AwsCommand:
    """The command's service, operation and parameters; CommandRefused (with the reason) otherwise.
    ``allowed``: ``"service operation"`` pairs in the CLI's words, e.g. ``"sqs set-queue-attributes"``."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise CommandRefused(f"the command does not split into words: {error}") from None
    if len(words) < 3 or words[0] != "aws":
        raise CommandRefused(f"not an 'aws <service> <operation>' command: {text!r}")
    wanted = f"{words[1]} {words[2]}"
    if wanted not in allowed:
        raise CommandRefused(
            f"aws {wanted} is not among the operations allowed here ({', '.join(sorted(allowed))})"
        )
    operation = operation_model(words[1], words[2])
    params, region = _arguments(operation, words[3:])
    try:
        validate_parameters(params, operation.input_shape)
    except ParamValidationError as error:
        raise CommandRefused(f"aws {wanted}: {error}") from None
    return AwsCommand(operation.service_model.service_name, operation.name, params, region)


def operation_model(service: str, operation: str) -> OperationModel:
    """botocore's model of ``aws <service> <operation>`` (the CLI's words); CommandRefused if none."""
    try:
        model = _model(_CLI_TO_BOTOCORE.get(service, service))
    except DataNotFoundError as error:  # UnknownServiceError is one
        raise CommandRefused(f"no service {service!r} in botocore: {error}") from None
    operations = {xform_name(name, "-"): name for name in model.operation_names}
    if operation not in operations:
        raise CommandRefused(f"{service} has no operation {operation!r}")
    return model.operation_model(operations[operation])


def cli_options(operation: OperationModel) -> dict[str, str]:
    """The operation's ``--kebab-case`` options, each with the input member it sets."""
    members = operation.input_shape.members if operation.input_shape else {}
    return {f"--{xform_name(name, '-')}": name for name in members}


def _arguments(operation: OperationModel, words: list[str]) -> tuple[dict[str, Any], str | None]:
    members = dict(operation.input_shape.members) if operation.input_shape else {}
    options = cli_options(operation)
    params: dict[str, Any] = {}
    region: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        option, equals, inline = word.partition("=")
        if not option.startswith("--"):
            raise CommandRefused(f"unexpected word {word!r}: every argument is an --option")
        values = [inline] if equals else []
        if not equals:  # the values up to the next option
            while index < len(words) and not words[index].startswith("--"):
                values.append(words[index])
                index += 1
        if option in _REFUSED_GLOBALS:
            raise CommandRefused(f"{option} is not taken: the drill applies the command as its operator")
        if option in _IGNORED_FLAGS or option in _IGNORED_WITH_VALUE:
            continue
        if option == "--region":
            region = _one(option, values)
            continue
        negated = option.startswith("--no-") and f"--{option[5:]}" in options
        name = options.get(f"--{option[5:]}" if negated else option)
        if name is None:
            raise CommandRefused(f"{operation.name} takes no option {option}")
        if name in params:
            raise CommandRefused(f"{option} is given twice")
        params[name] = _value(option, members[name], values, negated)
    return params, region


def _one(option: str, values: list[str]) -> str:
    if len(values) != 1:
        raise CommandRefused(f"{option} takes one value, not {len(values)}")
    if values[0].startswith(_FILE_PREFIXES):
        raise CommandRefused(f"{option} {values[0]!r} would make the CLI read a local file")
    return values[0]


def _value(option: str, shape: Shape, values: list[str], negated: bool) -> Any:
    if shape.type_name == "boolean":
        if values:
            raise CommandRefused(f"{option} is a switch and takes no value (use --no-{option[2:]} for false)")
        return not negated
    if negated:
        raise CommandRefused(f"{option} is not a switch")
    if shape.type_name == "list":
        if len(values) == 1 and values[0].lstrip().startswith("["):
            return _json(option, values[0])
        if not values:
            raise CommandRefused(f"{option} takes at least one value")
        return [_scalar(option, shape.member, v) for v in values]
    text = _one(option, values)
    if shape.type_name in ("structure", "map"):
        return _json(option, text) if text.lstrip().startswith("{") else _shorthand(option, shape, text)
    return _scalar(option, shape, text)


def _scalar(option: str, shape: Shape, text: str) -> Any:
    kind = shape.type_name
    try:
        if kind in ("integer", "long"):
            return int(text)
        if kind in ("float", "double"):
            return float(text)
    except ValueError:
        raise CommandRefused(f"{option} takes a number, not {text!r}") from None
    if kind == "boolean":
        if text.lower() not in ("true", "false"):
            raise CommandRefused(f"{option} takes true or false, not {text!r}")
        return text.lower() == "true"
    if kind in ("string", "timestamp"):
        return text
    raise CommandRefused(f"{option}: a {kind} value is not read here")


def _shorthand(option: str, shape: Shape, text: str) -> dict[str, Any]:
    """``Key=Value,Key2=Value2`` for a map or a structure of scalars (no nesting, no lists)."""
    parsed: dict[str, Any] = {}
    for pair in text.split(","):
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise CommandRefused(f"{option}: expected Key=Value pairs separated by commas, not {text!r}")
        if shape.type_name == "map":
            member = shape.value
        elif key in shape.members:
            member = shape.members[key]
        else:
            raise CommandRefused(f"{option} has no member {key!r}")
        if key in parsed:
            raise CommandRefused(f"{option}: {key} is given twice")
        parsed[key] = _scalar(f"{option} {key}", member, value)
    return parsed


def _json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandRefused(f"{option} is not valid JSON: {error}") from None


def run_command(session: boto3.Session, command: AwsCommand) -> dict[str, Any]:
    """Make the call, as the session's identity (the drill's operator), in the command's region if it
    names one."""
    client = session.client(command.service, region_name=command.region or session.region_name)
    answer: dict[str, Any] = getattr(client, command.method)(**command.params)
    return answer
