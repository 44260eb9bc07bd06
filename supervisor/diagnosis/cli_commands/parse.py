"""``parse_command``: an AWS CLI command, as any model may have written it, read back into botocore names
and boto3 parameters and checked against botocore's model."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from supervisor.diagnosis.cli_commands.service_model import (
    BOTOCORE_TO_CLI,
    FILE_PREFIXES,
    Arg,
    CommandError,
    Signature,
    botocore_services,
    check_region,
    check_required,
    kebab,
    kind_of,
    operations_of,
    signature_of,
    suggest,
    validate,
)
from supervisor.diagnosis.cli_commands.shell_words import split_words


@dataclass(frozen=True)
class ParsedCommand:
    """A checked command: botocore service and operation names and the parameters as boto3 takes them."""

    service: str
    operation: str
    params: dict[str, Any]
    region: str | None = None
    options: dict[str, str | bool] = field(default_factory=dict)  # other global options, e.g. profile


# `aws s3` is the high-level S3 command set, not the API (that is s3api); a few others are not API calls.
_HIGH_LEVEL = {
    "s3": "'aws s3' is the high-level S3 command set (cp, ls, sync, ...), which cannot be checked here; "
    "write the API call with aws s3api <operation> instead (e.g. aws s3api put-bucket-policy)",
    "configure": "'aws configure' changes local CLI settings and is not a remediation command",
    "history": "'aws history' reads local CLI history and is not a remediation command",
    "ddb": "'aws ddb' is a high-level command set; write the API call with aws dynamodb <operation>",
}
_GLOBAL_VALUE_OPTIONS = frozenset({"--region", "--profile", "--output", "--query"})
_GLOBAL_SWITCHES = frozenset({"--no-cli-pager", "--no-paginate"})
_OUTPUT_FORMATS = ("json", "text", "table", "yaml", "yaml-stream")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")  # what argparse takes as a value, not an option


def parse_command(command: str) -> ParsedCommand:
    """Parse and check an AWS CLI command against botocore's model; `CommandError` says what is wrong."""
    tokens = split_words(command)
    if not tokens or tokens[0] != "aws":
        raise CommandError(f"a command must start with 'aws', not {tokens[0] if tokens else 'nothing'!r}")
    options: dict[str, str | bool] = {}
    words, at = _leading_words(tokens, options)
    service, operation, where = _operation(words)
    signature = signature_of(service, operation)
    params = _arguments(tokens, at, where, signature, options)
    check_required(where, signature, params)
    validate(where, signature, params)
    region = options.pop("--region", None)
    return ParsedCommand(
        service,
        operation,
        params,
        region if isinstance(region, str) else None,
        {name.removeprefix("--"): value for name, value in options.items()},
    )


def _leading_words(tokens: list[str], options: dict[str, str | bool]) -> tuple[list[str], int]:
    """The service and operation words (at most two), recording the global options among them; and the
    index of the token after them."""
    words: list[str] = []
    at = 1
    while at < len(tokens) and len(words) < 2:
        if tokens[at].startswith("--"):
            at = _global_option(tokens, at, options)
        else:
            words.append(tokens[at])
            at += 1
    return words, at


def _operation(words: list[str]) -> tuple[str, str, str]:
    """botocore's service and operation for the CLI's words, and the command as messages name it."""
    if not words:
        raise CommandError("no service given; write aws <service> <operation> --argument value ...")
    service = _resolve_service(words[0])
    cli_service = words[0]
    operations = operations_of(service)
    if len(words) < 2:
        raise CommandError(
            f"no operation given after 'aws {cli_service}'; write aws {cli_service} <operation>"
        )
    operation = operations.get(words[1])
    if operation is None:
        if kebab(words[1]) in operations:
            hint = f"; did you mean {kebab(words[1])}? (CLI names are kebab-case)"
        else:
            hint = suggest(words[1], operations)
        raise CommandError(f"unknown operation {words[1]!r} for service {cli_service}{hint}")
    return service, operation, f"aws {cli_service} {words[1]}"


def _arguments(
    tokens: list[str], at: int, where: str, signature: Signature, options: dict[str, str | bool]
) -> dict[str, Any]:
    """The boto3 parameters of the arguments from tokens[at] on, recording the global options among them."""
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
            hint = suggest(flag, signature.args) or (
                f"; its arguments are {', '.join(signature.args)}" if signature.args else "; it takes none"
            )
            raise CommandError(f"unknown argument {flag} for {where}{hint}")
        if arg.member in used:
            clash = "is given twice" if used[arg.member] == flag else f"contradicts {used[arg.member]}"
            raise CommandError(f"{where}: {flag} {clash}; give each argument once")
        values, at = ([inline], at + 1) if has_inline else _values(tokens, at + 1)
        params[arg.member] = _convert(
            flag, arg, values, has_inline=bool(has_inline), pair=signature.flags[arg.member]
        )
        used[arg.member] = flag
    return params


def _values(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The value tokens from tokens[at] up to the next option, and the index of that option."""
    end = at
    while end < len(tokens) and not _looks_like_option(tokens[end]):
        end += 1
    return tokens[at:end], end


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
            f"unknown option {name} before the service and operation{suggest(name, accepted)} "
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
        check_region(value)
    if name == "--output" and value not in _OUTPUT_FORMATS:
        raise CommandError(f"--output {value!r} is not one of {', '.join(_OUTPUT_FORMATS)}")
    if not value:
        raise CommandError(f"{name} needs a non-empty value")
    options[name] = value
    return following


def _resolve_service(cli_service: str) -> str:
    if cli_service in _HIGH_LEVEL:
        raise CommandError(_HIGH_LEVEL[cli_service])
    services = botocore_services()
    cli_names = {BOTOCORE_TO_CLI.get(name, name): name for name in services}
    service = cli_names.get(cli_service)
    if service is None:
        if cli_service in BOTOCORE_TO_CLI:
            hint = f"; the CLI calls it {BOTOCORE_TO_CLI[cli_service]}"
        else:
            hint = suggest(cli_service, cli_names)
        raise CommandError(f"unknown service {cli_service!r}{hint}")
    return service


def _convert(
    flag: str, arg: Arg, values: list[str], *, has_inline: bool, pair: tuple[str, str | None]
) -> Any:
    """The boto3 value of one argument, from the tokens after its flag."""
    kind = kind_of(arg.shape)
    if kind == "switch":
        if has_inline or values:
            raise CommandError(f"{flag} is a switch and takes no value; write {' or '.join(map(str, pair))}")
        return arg.switch
    if not values:
        raise CommandError(f"{flag} needs a value")
    for value in values:
        if value.lower().startswith(FILE_PREFIXES):
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
