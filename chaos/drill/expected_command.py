"""The remediation command an incident expects first, and how the drill compares a diagnosis's with it.

A scenario states the AWS CLI operation and the parameters that undo what its injector did, by their CLI
options (``--function-version``): each a value, or one resolved when the scenario runs, from what the
injector saved before its change (``saved``: its ledger entry's prior state) or the exact name of one of
the stage's resources (``named``). The declaration is read against botocore's service model, as the
stage's own parser reads a command (:mod:`chaos.drill.apply_command`): an operation that does not exist,
an option it does not take or a value of the wrong type is refused when the scenario is declared.

A diagnosis's command is read by that parser and compared parameter by parameter; a parameter the scenario
does not state is not compared. Where AWS accepts several forms of one value, they compare as the same:

- Lambda's ``--function-name`` takes a name, an ARN or a partial ARN, each with or without a version or
  alias (https://docs.aws.amazon.com/cli/latest/reference/lambda/add-permission.html): equal when they name
  the same function and qualifier, in the account and region the stage runs in;
- an IAM policy document is JSON (https://docs.aws.amazon.com/cli/latest/reference/iam/put-role-policy.html):
  compared parsed, keys in any order;
- EC2 ``--ip-permissions`` (https://docs.aws.amazon.com/cli/latest/reference/ec2/authorize-security-group-egress.html):
  the rules in any order, a protocol by name or number, and the empty lists EC2 shows in a rule it
  describes left out;
- anything else: the same value of the same type (a structure read from JSON or the shorthand alike).

The command's ``--region``, where it gives one, must be the stage's: elsewhere the names are other
resources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from chaos.drill.apply_command import AwsCommand, CommandRefused, cli_options, operation_model
from chaos.faults.chaos import Fault

if TYPE_CHECKING:
    from botocore.model import Shape

# Resources a diagnosis must list in affected_resources, resolved to exact names for the incident's function.
Resource = Literal[
    "function",
    "role",
    "security-group",
    "network-acl",
    "route-table",
    "subnet",  # the private subnet data-processor runs in (its id)
    "table",
    "bucket",
    "queue",  # the function's source queue (its SQS event source mapping)
    "dead-letter-queue",  # the source queue's redrive target, or the function's asynchronous DLQ
    "topic",  # the SNS topic that invokes the function
    "key",  # the KMS key of the function's environment variables (its ARN)
    "api",  # the REST API in front of the function (arn:aws:apigateway:<region>::/restapis/<id>)
    "stream",  # the Kinesis stream the function reads (its ARN)
    "stream-mapping",  # the UUID of the function's Kinesis event source mapping
]

_JSON_DOCUMENTS = frozenset({("iam", "PolicyDocument"), ("iam", "AssumeRolePolicyDocument")})
_FUNCTION_NAME = ("lambda", "FunctionName")
_IP_PERMISSIONS = ("ec2", "IpPermissions")
_PROTOCOL_NUMBERS = {"1": "icmp", "6": "tcp", "17": "udp", "58": "icmpv6"}
_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "timestamp": (str,),
    "blob": (str, bytes),
    "integer": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "boolean": (bool,),
}
_SHOWN_CHARACTERS = 200


@dataclass(frozen=True)
class Named:
    """The exact name of one of the stage's resources for the incident's function (its security group's
    id, its role), known when the scenario runs."""

    resource: Resource


@dataclass(frozen=True)
class Saved:
    """What ``fault``'s injector saved before its change (its ledger entry's prior state), at ``path``."""

    fault: str
    path: tuple[str | int | Named, ...]


def named(resource: Resource) -> Named:
    return Named(resource)


def saved(fault: Fault, *path: str | int | Named) -> Saved:
    return Saved(fault.name, path)


class Unresolved(LookupError):
    """An expected value the stage does not know (nothing saved there): a fault of the scenario, not of
    the diagnosis."""


@dataclass(frozen=True)
class Known:
    """What the stage knows when it compares: the injectors' saved prior states by fault name, the exact
    names of its resources, and the account and region it runs in."""

    saved: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    names: Mapping[Resource, str] = field(default_factory=dict)
    account: str | None = None
    region: str | None = None


@dataclass(frozen=True)
class Command:
    """The remediation command an incident expects first: ``operation`` in the CLI's words
    (``"lambda update-alias"``) and the parameters that matter by option (``{"--function-version": ...}``),
    each a value, a ``saved`` one or a ``named`` one. Refused (ValueError) unless botocore's model of the
    operation takes each option with a value of that type."""

    operation: str
    params: Mapping[str, object] = field(default_factory=dict)
    members: Mapping[str, str] = field(init=False, repr=False, compare=False)  # option -> input member

    def __post_init__(self) -> None:
        words = self.operation.split()
        if len(words) != 2:
            raise ValueError(
                f"an operation is 'service operation' in the CLI's words, not {self.operation!r}"
            )
        try:
            model = operation_model(*words)
        except CommandRefused as error:
            raise ValueError(f"aws {self.operation}: {error}") from None
        options = cli_options(model)
        for option, value in self.params.items():
            if option not in options:
                raise ValueError(f"aws {self.operation} takes no option {option}")
            member = options[option]
            shape = model.input_shape.members[member]
            why = _refused(shape, value, json_document=(model.service_model.service_name, member))
            if why:
                raise ValueError(f"aws {self.operation} {option}: {why}")
        object.__setattr__(self, "members", {option: options[option] for option in self.params})


def _refused(shape: Shape, value: object, json_document: tuple[str, str] | None = None) -> str | None:
    """Why ``value`` cannot be a value of ``shape`` (None when it can, or when it is known only at run
    time)."""
    if isinstance(value, (Saved, Named)):
        return None
    kind = shape.type_name
    if kind == "string" and json_document in _JSON_DOCUMENTS and isinstance(value, Mapping):
        return None  # a document written as a mapping
    if kind in ("structure", "map"):
        if not isinstance(value, Mapping):
            return f"is a {kind} (a mapping), not {value!r}"
        for key, item in value.items():
            if kind == "structure" and key not in shape.members:
                return f"has no member {key!r}"
            member = shape.members[key] if kind == "structure" else shape.value
            if why := _refused(member, item):
                return f"{key} {why}"
        return None
    if kind == "list":
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            return f"is a list, not {value!r}"
        return next(
            (f"[{n}] {why}" for n, item in enumerate(value) if (why := _refused(shape.member, item))), None
        )
    allowed = _SCALARS.get(kind, ())
    if isinstance(value, bool) is not (kind == "boolean") or not isinstance(value, allowed):
        return f"is of type {kind}, not {value!r}"
    return None


def resolve(value: object, known: Known) -> object:
    """The expected value, ``saved`` and ``named`` ones looked up; Unresolved when the stage has none."""
    if isinstance(value, Named):
        if value.resource not in known.names:
            raise Unresolved(f"the stage has no {value.resource} for this function")
        return known.names[value.resource]
    if isinstance(value, Saved):
        node: object = known.saved.get(value.fault)
        if node is None:
            raise Unresolved(f"no state saved by {value.fault}")
        for step in value.path:
            key = resolve(step, known)
            in_list = isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node)
            if in_list or (isinstance(node, Mapping) and key in node):
                node = node[key]  # type: ignore[index]
            else:
                path = ".".join(str(resolve(s, known)) for s in value.path)
                raise Unresolved(f"{value.fault} saved nothing at {path}")
        return node
    if isinstance(value, Mapping):
        return {key: resolve(item, known) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(item, known) for item in value]
    return value


def differences(given: AwsCommand, expected: Command, known: Known) -> list[str]:
    """Each stated parameter the command does not give as expected (``--function-version 1, expected 3``);
    none when it gives every one. The operation is taken to be the expected one already."""
    problems = []
    if given.region and known.region and given.region != known.region:
        problems.append(f"--region {given.region}, expected {known.region}")
    for option, member in expected.members.items():
        try:
            wanted = resolve(expected.params[option], known)
        except Unresolved as error:
            problems.append(f"{option} cannot be compared: {error}")
            continue
        if member not in given.params:
            problems.append(f"{option} not given, expected {shown(wanted)}")
        elif not same((given.service, member), given.params[member], wanted, known):
            found, wants = shown(given.params[member]), shown(wanted)
            if found == wants:  # "5" and 5: shown as JSON, so the difference is seen
                found, wants = json.dumps(given.params[member], default=str), json.dumps(wanted, default=str)
            problems.append(f"{option} {found}, expected {wants}")
    return problems


def same(parameter: tuple[str, str], given: object, wanted: object, known: Known) -> bool:
    """Whether ``given`` is ``wanted`` as AWS reads ``parameter`` (botocore's service and member names)."""
    if parameter in _JSON_DOCUMENTS:
        return _equal(_parsed(given), _parsed(wanted))
    if parameter == _FUNCTION_NAME:
        return _function(given, known) == _function(wanted, known)
    if parameter == _IP_PERMISSIONS:
        return _rules(given) == _rules(wanted)
    return _equal(given, wanted)


def _equal(one: object, other: object) -> bool:
    """Equal values of equal types: ``True`` is not ``1``, a list is compared in order."""
    if isinstance(one, Mapping) and isinstance(other, Mapping):
        return one.keys() == other.keys() and all(_equal(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(_equal(a, b) for a, b in zip(one, other, strict=True))
    if isinstance(one, bool) or isinstance(other, bool) or type(one) is type(other):
        return type(one) is type(other) and one == other
    return isinstance(one, (int, float)) and isinstance(other, (int, float)) and one == other


def _parsed(document: object) -> object:
    """A JSON document given as text, parsed (text that is not JSON stays text, equal to nothing else)."""
    if isinstance(document, str):
        try:
            return json.loads(document)
        except json.JSONDecodeError:
            return document
    return document


_FUNCTION = re.compile(
    r"(?:arn:aws[a-zA-Z-]*:lambda:(?P<region>[a-z0-9-]+):(?P<arn_account>\d{12}):function:"
    r"|(?P<account>\d{12}):function:)?(?P<name>[A-Za-z0-9_-]+)(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]+))?"
)


def _function(value: object, known: Known) -> tuple[str, str | None, str | None, str | None]:
    """The function a ``FunctionName`` value names: (name, qualifier, account, region), the account and
    region the stage's where the value does not give them."""
    match = _FUNCTION.fullmatch(str(value))
    if match is None:
        return (str(value), None, None, None)
    account = match["arn_account"] or match["account"] or known.account
    return (match["name"], match["qualifier"], account, match["region"] or known.region)


def _rules(value: object) -> object:
    """Security group rules as a sorted list, each without its empty lists, its protocol by name."""
    if not isinstance(value, list):
        return value
    rules = []
    for rule in value:
        if not isinstance(rule, Mapping):
            return value
        kept: dict[str, object] = {k: v for k, v in rule.items() if v not in ([], None)}
        protocol = str(kept.get("IpProtocol", "")).lower()
        kept["IpProtocol"] = _PROTOCOL_NUMBERS.get(protocol, protocol)
        for key, items in kept.items():
            if isinstance(items, list):
                kept[key] = sorted(items, key=_canonical)
        rules.append(kept)
    return sorted(rules, key=_canonical)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def shown(value: object) -> str:
    """A value as a detail shows it: text as it is, a structure as compact JSON, cut at 200 characters."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 1] + "…"
