"""Exact, copyable AWS CLI commands, built and checked against botocore's service models.

Remediation steps carry CLI commands that are shown, never run. `build_command` renders one from botocore
names and boto3-style parameters; `parse_command` reads one back, as any model may have written it, and
refuses with a reason whatever the CLI would refuse or a shell would read differently: an unknown service,
operation or argument, a missing required argument, a wrong type, a value below botocore's minimum, a
`file://` value, and unquoted shell syntax. The awscli package is not used (it pins botocore); the
models, `xform_name` and `validate_parameters` come from botocore, loaded on first use.
"""

from __future__ import annotations

import decimal
import difflib
import functools
import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

__all__ = ["CommandError", "ParsedCommand", "build_command", "parse_command"]


class CommandError(ValueError):
    """A command that cannot be built or is refused; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class ParsedCommand:
    """A checked command: botocore service and operation names and the parameters as boto3 takes them."""

    service: str
    operation: str
    params: dict[str, Any]
    region: str | None = None
    options: dict[str, str | bool] = field(default_factory=dict)  # other global options, e.g. profile


# The CLI names a few services differently from botocore; `aws s3` itself is the high-level command set.
_CLI_TO_BOTOCORE = {"s3api": "s3", "configservice": "config", "deploy": "codedeploy"}
_BOTOCORE_TO_CLI = {botocore: cli for cli, botocore in _CLI_TO_BOTOCORE.items()}
_HIGH_LEVEL = {
    "s3": "'aws s3' is the high-level S3 command set (cp, ls, sync, ...), which cannot be checked here; "
    "write the API call with aws s3api <operation> instead (e.g. aws s3api put-bucket-policy)",
    "configure": "'aws configure' changes local CLI settings and is not a remediation command",
    "history": "'aws history' reads local CLI history and is not a remediation command",
    "ddb": "'aws ddb' is a high-level command set; write the API call with aws dynamodb <operation>",
}
# Arguments the CLI renames (awscli's argrename customisation), keyed by (service, CLI operation or
# "*", the name xform_name gives); only those for services a Lambda remediation is likely to touch, and
# those that would collide with the global options accepted below.
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
_GLOBAL_VALUE_OPTIONS = frozenset({"--region", "--profile", "--output", "--query"})
_GLOBAL_SWITCHES = frozenset({"--no-cli-pager", "--no-paginate"})
_OUTPUT_FORMATS = ("json", "text", "table", "yaml", "yaml-stream")
_REGION = re.compile(r"[a-z]{2,4}(-[a-z]+)+-[0-9]{1,2}")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")  # what argparse takes as a value, not an option
_SCALAR_TYPES = frozenset({"string", "integer", "long", "float", "double", "timestamp", "blob"})
_FILE_PREFIXES = ("file://", "fileb://")
# Characters a POSIX shell gives a meaning to when unquoted (expansion, globbing, redirection, ...).
_UNQUOTED_SPECIAL = frozenset(";&|<>()$`*?[]{}!\r\n")
_WORD_START_SPECIAL = frozenset("#~")
_DOUBLE_QUOTED_SPECIAL = frozenset("$`!")


# ---- botocore, loaded lazily ----


@functools.cache
def _session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@functools.cache
def _services() -> frozenset[str]:
    return frozenset(_session().get_available_services())


@functools.cache
def _service_model(service: str) -> Any:
    return _session().get_service_model(service)


def _kebab(name: str) -> str:
    from botocore import xform_name

    return str(xform_name(name, "-"))


@functools.cache
def _operations(service: str) -> dict[str, str]:
    """The service's operations: CLI name -> botocore name."""
    return {_kebab(name): name for name in _service_model(service).operation_names}


@dataclass(frozen=True)
class _Arg:
    member: str
    shape: Any
    switch: bool | None = None  # for a boolean member: the value this flag sets


@dataclass(frozen=True)
class _Signature:
    input_shape: Any  # None for an operation without input
    args: dict[str, _Arg]  # CLI flag -> argument
    flags: dict[str, tuple[str, str | None]]  # member (model order) -> flag, and its negation for a boolean
    required: tuple[str, ...]


@functools.cache
def _signature(service: str, operation: str) -> _Signature:
    shape = _service_model(service).operation_model(operation).input_shape
    cli_operation = _kebab(operation)

    def renamed(flag: str) -> str:
        return _ARG_RENAMES.get((service, cli_operation, flag), _ARG_RENAMES.get((service, "*", flag), flag))

    args: dict[str, _Arg] = {}
    flags: dict[str, tuple[str, str | None]] = {}
    for member, member_shape in shape.members.items() if shape is not None else ():
        flag = renamed("--" + _kebab(member))
        if member_shape.type_name == "boolean":
            negation = renamed("--no-" + _kebab(member))
            args[flag] = _Arg(member, member_shape, True)
            args[negation] = _Arg(member, member_shape, False)
            flags[member] = (flag, negation)
        else:
            args[flag] = _Arg(member, member_shape)
            flags[member] = (flag, None)
    required = tuple(shape.required_members) if shape is not None else ()
    return _Signature(shape, args, flags, required)


def _kind(shape: Any) -> str:
    """How the CLI takes a member: a switch, one scalar, a list of scalars, or JSON."""
    if shape.type_name == "boolean":
        return "switch"
    if shape.type_name in _SCALAR_TYPES:
        return "scalar"
    if shape.type_name == "list" and shape.member.type_name in _SCALAR_TYPES:
        return "list"
    return "json"


def _validate(where: str, signature: _Signature, params: dict[str, Any]) -> None:
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


def _suggest(word: str, choices: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(choices), n=3)
    return f"; did you mean {' or '.join(matches)}?" if matches else ""


def _missing(where: str, signature: _Signature, given: Mapping[str, Any]) -> None:
    missing = [member for member in signature.required if member not in given]
    if missing:
        names = [
            " or ".join(flag for flag in signature.flags[member] if flag is not None) for member in missing
        ]
        raise CommandError(f"{where} is missing required argument(s): {', '.join(names)}")


# ---- building ----


def build_command(
    service: str, operation: str, params: Mapping[str, Any], *, region: str | None = None
) -> str:
    """The AWS CLI command for a botocore operation, checked against the model and quoted for a shell."""
    if service not in _services():
        raise CommandError(f"unknown botocore service {service!r}{_suggest(service, _services())}")
    operations = _operations(service)
    if operation not in operations.values():
        if operation in operations:
            hint = f"; did you mean {operations[operation]}? (botocore names are CamelCase)"
        else:
            hint = _suggest(operation, operations.values())
        raise CommandError(f"unknown operation {operation!r} for botocore service {service}{hint}")
    cli_service = _BOTOCORE_TO_CLI.get(service, service)
    words = ["aws", cli_service, _kebab(operation)]
    where = " ".join(words)
    signature = _signature(service, operation)
    given = dict(params)
    for member in given:
        if member not in signature.flags:
            hint = _suggest(member, signature.flags) or f"; its members are {', '.join(signature.flags)}"
            raise CommandError(f"{where} has no member {member!r}{hint}")
    _missing(where, signature, given)
    _validate(where, signature, given)
    for member, (flag, negation) in signature.flags.items():
        if member in given:
            words.extend(_render(flag, negation, signature.args[flag].shape, given[member]))
    if region is not None:
        _check_region(region)
        words.extend(["--region", region])
    return " ".join(words)


def _render(flag: str, negation: str | None, shape: Any, value: Any) -> list[str]:
    kind = _kind(shape)
    if kind == "switch":
        return [flag] if value else [str(negation)]
    if kind == "scalar":
        text = _scalar_text(flag, shape, value)
        # argparse would take a separate value starting with "-" for an option; "--flag=value" is read right.
        return [shlex.quote(f"{flag}={text}")] if text.startswith("-") else [flag, shlex.quote(text)]
    if kind == "list":
        items = [_scalar_text(flag, shape.member, item) for item in value]
        if items and not any(item.startswith("-") or item.lstrip().startswith("[") for item in items):
            return [flag, *(shlex.quote(item) for item in items)]
        # The CLI also takes a list as JSON, which carries an empty list and awkward items.
        return [flag, shlex.quote(_json(flag, [_plain(item) for item in value]))]
    return [flag, shlex.quote(_json(flag, value))]


def _scalar_text(flag: str, shape: Any, value: Any) -> str:
    kind = shape.type_name
    if kind in ("integer", "long"):
        if isinstance(value, bool):
            raise CommandError(f"{flag} takes an integer, not a boolean ({value!r})")
        return str(int(value))
    if kind in ("float", "double"):
        if not math.isfinite(value):
            raise CommandError(f"{flag} takes a finite number, not {value!r}")
        return str(value) if isinstance(value, decimal.Decimal) else repr(value)
    if kind == "timestamp" and isinstance(value, (datetime, date)):
        return value.isoformat()
    if not isinstance(value, str):
        raise CommandError(f"{flag} takes text here, not {type(value).__name__}")
    if value.lower().startswith(_FILE_PREFIXES):
        raise CommandError(f"{flag} {value!r} would make the CLI read a local file; give the value inline")
    return value


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (datetime, date)) else value


def _json(flag: str, value: Any) -> str:
    def default(item: Any) -> Any:
        if isinstance(item, (datetime, date)):
            return item.isoformat()
        if isinstance(item, decimal.Decimal):
            return int(item) if item == item.to_integral_value() else float(item)
        raise TypeError(f"{type(item).__name__} is not JSON")

    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"{flag}: the value cannot be written as JSON ({exc})") from None


def _check_region(region: str) -> None:
    if not _REGION.fullmatch(region):
        raise CommandError(f"--region {region!r} is not a region name such as us-east-1")


# ---- parsing ----


def parse_command(command: str) -> ParsedCommand:
    """Parse and check an AWS CLI command against botocore's model; `CommandError` says what is wrong."""
    tokens = _split(command)
    if not tokens or tokens[0] != "aws":
        raise CommandError(f"a command must start with 'aws', not {tokens[0] if tokens else 'nothing'!r}")
    options: dict[str, str | bool] = {}
    words: list[str] = []
    at = 1
    while at < len(tokens) and len(words) < 2:
        if tokens[at].startswith("--"):
            at = _global_option(tokens, at, options)
        else:
            words.append(tokens[at])
            at += 1
    if not words:
        raise CommandError("no service given; write aws <service> <operation> --argument value ...")
    service = _resolve_service(words[0])
    cli_service = words[0]
    operations = _operations(service)
    if len(words) < 2:
        raise CommandError(
            f"no operation given after 'aws {cli_service}'; write aws {cli_service} <operation>"
        )
    operation = operations.get(words[1])
    if operation is None:
        if _kebab(words[1]) in operations:
            hint = f"; did you mean {_kebab(words[1])}? (CLI names are kebab-case)"
        else:
            hint = _suggest(words[1], operations)
        raise CommandError(f"unknown operation {words[1]!r} for service {cli_service}{hint}")
    where = f"aws {cli_service} {words[1]}"
    signature = _signature(service, operation)
    params: dict[str, Any] = {}
    used: dict[str, str] = {}  # member -> the flag that set it
    while at < len(tokens):
        word = tokens[at]
        if not word.startswith("--") or len(word) == 2:
            raise CommandError(f"{where}: unexpected {word!r}; every value must follow its --argument")
        flag, has_inline, inline = word.partition("=")
        arg = signature.args.get(flag)
        if arg is None:
            if flag in _GLOBAL_VALUE_OPTIONS or flag in _GLOBAL_SWITCHES:
                at = _global_option(tokens, at, options)
                continue
            hint = _suggest(flag, signature.args) or (
                f"; its arguments are {', '.join(signature.args)}" if signature.args else "; it takes none"
            )
            raise CommandError(f"unknown argument {flag} for {where}{hint}")
        if arg.member in used:
            clash = "is given twice" if used[arg.member] == flag else f"contradicts {used[arg.member]}"
            raise CommandError(f"{where}: {flag} {clash}; give each argument once")
        at += 1
        if has_inline:
            values = [inline]
        else:
            end = at
            while end < len(tokens) and not _looks_like_option(tokens[end]):
                end += 1
            values, at = tokens[at:end], end
        params[arg.member] = _convert(
            flag, arg, values, has_inline=bool(has_inline), pair=signature.flags[arg.member]
        )
        used[arg.member] = flag
    _missing(where, signature, params)
    _validate(where, signature, params)
    region = options.pop("--region", None)
    return ParsedCommand(
        service,
        operation,
        params,
        region if isinstance(region, str) else None,
        {name.removeprefix("--"): value for name, value in options.items()},
    )


def _split(command: str) -> list[str]:
    """shlex-split, refusing anything a POSIX shell would not pass through literally."""
    kept: list[str] = []
    quote = ""
    at = 0
    while at < len(command):
        char = command[at]
        following = command[at + 1] if at + 1 < len(command) else ""
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote == '"':
            if char == "\\" and following == "\n":
                at += 2  # line continuation
                continue
            if char == "\\" and following in ('"', "\\"):
                kept.append(char + following)
                at += 2
                continue
            if char in _DOUBLE_QUOTED_SPECIAL:
                raise _shell_error(char, at, "inside double quotes")
            quote = "" if char == '"' else quote
        elif char == "\\":
            if following == "\n":
                at += 2  # line continuation
                continue
            if following in _UNQUOTED_SPECIAL:
                raise _shell_error(following, at + 1, "after a backslash")
            kept.append(char + following)
            at += 2
            continue
        elif char in "'\"":
            quote = char
        elif char in _UNQUOTED_SPECIAL or (
            char in _WORD_START_SPECIAL and (at == 0 or command[at - 1] in " \t\n")
        ):
            raise _shell_error(char, at, "unquoted")
        kept.append(char)
        at += 1
    if quote:
        raise CommandError(f"unbalanced {quote} quote in the command; close it (or use build_command)")
    try:
        return shlex.split("".join(kept))
    except ValueError as exc:
        raise CommandError(f"the command cannot be split into words ({exc}); check its quoting") from None


def _shell_error(char: str, at: int, how: str) -> CommandError:
    return CommandError(
        f"{how} {char!r} at position {at}: a shell would not read it literally; put the value in single "
        "quotes (build_command quotes every value)"
    )


def _looks_like_option(token: str) -> bool:
    """Whether argparse (and so the CLI) reads the token as an option rather than a value."""
    if token.startswith("--") and " " not in token.partition("=")[0]:
        return True  # "--flag" or "--flag=value", even with spaces in the value
    return (
        token.startswith("-")
        and len(token) > 1
        and " " not in token
        and not _NEGATIVE_NUMBER.fullmatch(token)
    )


def _global_option(tokens: list[str], at: int, options: dict[str, str | bool]) -> int:
    """Record the global option at tokens[at] and return the index after it."""
    name, has_inline, inline = tokens[at].partition("=")
    if name not in _GLOBAL_VALUE_OPTIONS and name not in _GLOBAL_SWITCHES:
        accepted = sorted(_GLOBAL_VALUE_OPTIONS | _GLOBAL_SWITCHES)
        raise CommandError(
            f"unknown option {name} before the service and operation{_suggest(name, accepted)} "
            f"(global options accepted: {', '.join(accepted)})"
        )
    if name in options:
        raise CommandError(f"{name} given twice; give it once")
    if name in _GLOBAL_SWITCHES:
        if has_inline:
            raise CommandError(f"{name} is a switch and takes no value")
        options[name] = True
        return at + 1
    if has_inline:
        value, following = inline, at + 1
    elif at + 1 < len(tokens) and not _looks_like_option(tokens[at + 1]):
        value, following = tokens[at + 1], at + 2
    else:
        raise CommandError(f"{name} needs a value")
    if name == "--region":
        _check_region(value)
    if name == "--output" and value not in _OUTPUT_FORMATS:
        raise CommandError(f"--output {value!r} is not one of {', '.join(_OUTPUT_FORMATS)}")
    if not value:
        raise CommandError(f"{name} needs a non-empty value")
    options[name] = value
    return following


def _resolve_service(cli_service: str) -> str:
    if cli_service in _HIGH_LEVEL:
        raise CommandError(_HIGH_LEVEL[cli_service])
    services = _services()
    cli_names = {_BOTOCORE_TO_CLI.get(name, name): name for name in services}
    service = cli_names.get(cli_service)
    if service is None:
        if cli_service in _BOTOCORE_TO_CLI:
            hint = f"; the CLI calls it {_BOTOCORE_TO_CLI[cli_service]}"
        else:
            hint = _suggest(cli_service, cli_names)
        raise CommandError(f"unknown service {cli_service!r}{hint}")
    return service


def _convert(
    flag: str, arg: _Arg, values: list[str], *, has_inline: bool, pair: tuple[str, str | None]
) -> Any:
    """The boto3 value of one argument, from the tokens after its flag."""
    kind = _kind(arg.shape)
    if kind == "switch":
        if has_inline or values:
            raise CommandError(f"{flag} is a switch and takes no value; write {' or '.join(map(str, pair))}")
        return arg.switch
    if not values:
        raise CommandError(f"{flag} needs a value")
    for value in values:
        if value.lower().startswith(_FILE_PREFIXES):
            raise CommandError(
                f"{flag} {value!r} would make the CLI read a local file; give the value inline"
            )
    if kind == "scalar":
        if len(values) > 1:
            raise CommandError(
                f"{flag} takes one value, got {len(values)} ({' '.join(values)}); quote a value with spaces"
            )
        return _scalar(flag, arg.shape, values[0])
    if kind == "list":
        if len(values) == 1 and values[0].lstrip().startswith("["):
            return _load_json(flag, arg.shape, values[0])
        return [_scalar(flag, arg.shape.member, value) for value in values]
    if len(values) > 1:
        raise CommandError(f"{flag} takes one JSON value, got {len(values)} words; quote the JSON")
    return _load_json(flag, arg.shape, values[0])


def _scalar(flag: str, shape: Any, token: str) -> Any:
    kind = shape.type_name
    if kind in ("integer", "long"):
        if not _INTEGER.fullmatch(token):
            raise CommandError(f"{flag} takes an integer, not {token!r}; write e.g. {flag} 30")
        return int(token)
    if kind in ("float", "double"):
        try:
            number = float(token)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise CommandError(f"{flag} takes a number, not {token!r}")
        return number
    return token


def _load_json(flag: str, shape: Any, token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError as exc:
        example = '\'[{"Key":"value"}]\'' if shape.type_name == "list" else '\'{"Key":"value"}\''
        raise CommandError(
            f"{flag} takes a {shape.type_name} and {token!r} is not JSON ({exc}); use JSON, e.g. "
            f"{flag} {example} (the CLI's shorthand syntax is not accepted)"
        ) from None
