"""The runtimes' own signs in a failed invocation's error record: which runtime error it is, and whether it
shows a setting the function cannot work with. One small named predicate per sign, each tested on a sample
whose source is cited (tests/test_rules_runtimes.py).

A sign that names an environment variable (Python's ``KeyError`` of an environment read, an error that says a
variable is missing) is a configuration error when the function's configuration does not set that variable.
A sign that names none (Node reading a property of ``undefined``, an unset value passed where a string is
needed, an SDK refusing a null or invalid parameter) is one only when the function's environment changed
before the failure with nothing deployed since, and nothing has succeeded since; otherwise it is the code's
own bug. ``configuration.py`` applies this; the signs only read the record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from supervisor.diagnosis.rules.failures import Failure

# Lambda's runtime errors. The Node runtime names its classes 'Runtime.<class>' on their prototype, so its
# text record gives 'Runtime.ImportModuleError'; its JSON record gives the class's constructor name alone
# (aws-lambda-nodejs-runtime-interface-client src/Errors.js and src/LogPatch.js jsonErrorReplacer).
_NODE_RUNTIME_CLASSES = frozenset(
    {
        "ImportModuleError",
        "HandlerNotFound",
        "MalformedHandlerName",
        "UserCodeSyntaxError",
        "MalformedStreamingHandler",
        "InvalidStreamingOperation",
        "NodeJsExit",
        "UnhandledPromiseRejection",
    }
)
_WRAPPED = re.compile(r"(?P<type>[A-Za-z_$][\w$.]*): (?P<message>.*)", re.DOTALL)


def runtime_error(failure: Failure) -> str | None:
    """'Runtime.<name>' when the record is one of Lambda's runtime errors, in either Node format or Python."""
    kind = failure.error_type
    if kind is None:
        return None
    if kind.startswith("Runtime."):
        return kind
    return f"Runtime.{kind}" if kind in _NODE_RUNTIME_CLASSES else None


def thrown(failure: Failure) -> tuple[str | None, str]:
    """(type, message) of what the code threw: inside Node's 'Runtime.UnhandledPromiseRejection', whose
    message is the rejection's reason as a string ('TypeError: ...'), else the record's own."""
    message = _first_line(failure.error_message)
    if runtime_error(failure) == "Runtime.UnhandledPromiseRejection":
        inner = _WRAPPED.fullmatch(message)
        if inner is not None:
            return inner["type"], inner["message"]
    return failure.error_type, message


def _first_line(text: str | None) -> str:
    return (text or "").split("\n", 1)[0].strip()


@dataclass(frozen=True)
class Sign:
    """What a record shows of the function's configuration."""

    name: str  # the predicate that found it
    variable: str | None  # the environment variable it names, when it names one
    shows: str  # what the record shows, in words


Predicate = Callable[[Failure], Sign | None]

# ---------------------------------------------------------------------------------------------- Python
# CPython's KeyError message is the key's repr: os.environ['TABLE_NAME'] unset -> "KeyError: 'TABLE_NAME'".
_KEY = re.compile(r"'([^'\\]+)'")
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")
# The traceback's frames, in the text record or (JSON-escaped) in the JSON record's stackTrace: the read
# itself (os.environ['x']), or os's mapping raising it (Lib/os.py _Environ.__getitem__, '<frozen os>' since
# Python 3.11).
_ENVIRON_READ = re.compile(r"""os\.environ\[\\?["']([^"'\\]+)\\?["']\]""")
_OS_GETITEM = re.compile(r"""(?:<frozen os>|[/\\]os\.py)\\?", line \d+, in __getitem__""")
_NONE = re.compile(r"\bNoneType\b")  # "'NoneType' object has no attribute", "... not NoneType"


def python_key_error(failure: Failure) -> Sign | None:
    """``KeyError: 'NAME'`` with a key shaped like an environment variable, unless the traceback shows it
    read from something else (``event['ORDER_ID']``: the input's key)."""
    kind, message = thrown(failure)
    key = _KEY.fullmatch(message) if kind == "KeyError" else None
    if key is None or not _VARIABLE.fullmatch(key[1]):
        return None
    read = re.compile(rf"""([\w.]+)\[\\?["']{re.escape(key[1])}\\?["']\]""")
    if any(not source.endswith("environ") for source in read.findall(failure.message)):
        return None
    return Sign("python_key_error", key[1], f"KeyError: '{key[1]}'")


def python_environ_read(failure: Failure) -> Sign | None:
    """``KeyError: 'name'`` raised by an ``os.environ[...]`` read of that key, as its traceback shows."""
    kind, message = thrown(failure)
    key = _KEY.fullmatch(message) if kind == "KeyError" else None
    if key is None:
        return None
    reads = set(_ENVIRON_READ.findall(failure.message))
    if key[1] not in reads and not _OS_GETITEM.search(failure.message):
        return None
    return Sign("python_environ_read", key[1], f"os.environ['{key[1]}'] raised KeyError")


def python_none_setting(failure: Failure) -> Sign | None:
    """A ``TypeError`` or ``AttributeError`` on ``None``: what ``os.environ.get`` returns for an unset
    variable ("'NoneType' object has no attribute 'split'", "expected str, ... not NoneType")."""
    kind, message = thrown(failure)
    if kind not in ("TypeError", "AttributeError") or not _NONE.search(message):
        return None
    return Sign("python_none_setting", None, f"{kind} on None: {message}")


# ------------------------------------------------------------------------------------------------ Node
# V8's TypeError for a property read on undefined (src/common/message-template.h
# NonObjectPropertyLoadWithProperty, "Cannot read properties of % (reading '%')"; before V8 9.3: "Cannot read
# property '%' of %"): process.env.TABLE_NAME unset reads as undefined.
_UNDEFINED_READ = re.compile(
    r"Cannot read properties of (?:undefined|null) \(reading '([^']*)'\)"
    r"|Cannot read property '([^']*)' of (?:undefined|null)"
)
# Node's ERR_INVALID_ARG_TYPE (lib/internal/errors.js): 'The "path" argument must be of type string ...
# Received undefined'.
_UNDEFINED_ARGUMENT = re.compile(
    r'The "([^"]+)" (?:argument|property) must be .*\. Received (?:undefined|null)$'
)


def node_undefined_read(failure: Failure) -> Sign | None:
    """``TypeError: Cannot read properties of undefined (reading 'x')``: a value that is not set, read."""
    kind, message = thrown(failure)
    read = _UNDEFINED_READ.search(message) if kind == "TypeError" else None
    if read is None:
        return None
    return Sign("node_undefined_read", None, f"TypeError: {message}")


def node_undefined_argument(failure: Failure) -> Sign | None:
    """``TypeError [ERR_INVALID_ARG_TYPE]: The "x" argument must be of type string. Received undefined``."""
    kind, message = thrown(failure)
    argument = _UNDEFINED_ARGUMENT.search(message) if kind == "TypeError" else None
    if argument is None:
        return None
    return Sign("node_undefined_argument", None, f"TypeError: {message}")


# ----------------------------------------------------------------------------------------- any runtime
_NAMED = re.compile(
    r"process\.env(?:\.|\[\\?[\"'])(?P<env>[A-Za-z_]\w*)"
    r"|os\.(?:environ(?:\.get\(|\[)|getenv\()\\?[\"'](?P<py>[A-Za-z_]\w*)"
    r"|(?i:environment variable):? [\"'`]?(?P<named>[A-Z_][A-Za-z0-9_]*)"
    r"|\b(?!ERR_)(?P<var>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b"
)
_MISSING = re.compile(
    r"\b(?:is not set|not set|is missing|missing|is undefined|undefined|is required|required|not defined"
    r"|is empty|unset|not configured)\b",
    re.IGNORECASE,
)


def variable_named_missing(failure: Failure) -> Sign | None:
    """An error whose message names an environment variable (``process.env.X``, ``os.environ['X']``, an
    upper-snake name) and says it is missing: 'TABLE_NAME is not set', 'Missing environment variable X'."""
    message = thrown(failure)[1]
    named = _NAMED.search(message)
    if named is None or not _MISSING.search(message) or _UNDEFINED_READ.search(message):
        return None  # 'Cannot read properties of undefined (reading 'X_Y')': what holds X_Y is unset
    variable = named["env"] or named["py"] or named["named"] or named["var"]
    return Sign("variable_named_missing", variable, failure.summary)


# ------------------------------------------------------------------------------------------------ SDKs
# AWS's validation message for a missing or invalid request member (a DynamoDB ValidationException, any SDK):
# "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be
# null". The AWS SDK for JavaScript v3 sends an unset TableName as no member at all.
_SERVICE_VALIDATION = re.compile(r"Value (null|'[^']*') at '([\w.]+)' failed to satisfy constraint: ([^;]*)")
# botocore/validate.py: "Invalid type for parameter TableName, value: None, type: <class 'NoneType'>, ...",
# "Invalid length for parameter Bucket, value: 0, valid min length: 1", in a ParamValidationError.
_BOTO_VALIDATION = re.compile(
    r"Invalid (?:type|length) for parameter (\w+), value: (None|0|)(?:,|$)|Missing required parameter in "
    r'input: "(\w+)"'
)


def sdk_rejected_parameter(failure: Failure) -> Sign | None:
    """AWS refused a request member that is null or invalid (``ValidationException``)."""
    if failure.error_code != "ValidationException" and thrown(failure)[0] != "ValidationException":
        return None
    found = _SERVICE_VALIDATION.search(failure.text)
    if found is None:
        return None
    value, member, constraint = found.groups()
    return Sign("sdk_rejected_parameter", None, f"AWS refused {member}={value}: {constraint.rstrip('.')}")


def boto_param_validation(failure: Failure) -> Sign | None:
    """boto3 refused a parameter before sending it: ``None``, empty or missing (``ParamValidationError``)."""
    if thrown(failure)[0] != "ParamValidationError":
        return None
    found = _BOTO_VALIDATION.search(failure.text)
    if found is None:
        return None
    member = found[1] or found[3]
    return Sign("boto_param_validation", None, f"boto3 refused the parameter {member} ({failure.summary})")


NAMING: tuple[Predicate, ...] = (python_environ_read, python_key_error, variable_named_missing)
UNNAMED: tuple[Predicate, ...] = (
    node_undefined_read,
    node_undefined_argument,
    python_none_setting,
    sdk_rejected_parameter,
    boto_param_validation,
)


def read(failure: Failure) -> Sign | None:
    """The first sign the record shows: one that names a variable before one that does not."""
    if failure.kind not in ("error_record", "init_error"):
        return None
    for predicate in (*NAMING, *UNNAMED):
        sign = predicate(failure)
        if sign is not None:
            return sign
    return None
