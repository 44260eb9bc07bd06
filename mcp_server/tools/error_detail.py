"""What an error record says: its type and message, the AWS error code and operation when an AWS SDK raised
it, and the first stack frame in the function's own code.

The SDK shapes recognised, each as its SDK words it (samples and sources in tests/samples/):

- boto3/botocore ``ClientError``: ``An error occurred (<Code>) when calling the <Operation> operation``.
- AWS SDK for JavaScript v3: the error object's ``$metadata`` (and ``$fault``), its ``Code`` or ``name``;
  v2: its ``code`` beside ``statusCode``/``retryable``. Neither names the operation.
- AWS SDK for Java v1: ``(Service: ...; Status Code: 403; Error Code: <Code>; Request ID: ...)``.
- AWS SDK for Go v2: ``operation error <Service>: <Operation>, https response error ... api error <Code>:``;
  v1: ``<Code>: <message>`` then ``status code: 403, request id: ...``.

The frame: stacks are read innermost first (a Python traceback is written outermost first, so it is read
backwards) and frames of the runtime and of libraries are skipped (``/var/runtime``, ``/var/lang``,
``node:internal``, ``node_modules``, ``site-packages``, any Python's ``lib/pythonX.Y/``, the JDK's, the
SDKs', .NET's ``System.``...), so a code error points at the line of the function that broke.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from mcp_server.contract.logs import ErrorDetail

_BOTO = re.compile(r"An error occurred \((?P<code>[^)\s]+)\) when calling the (?P<op>\w+) operation")
_JAVA_V1 = re.compile(r"\(Service: [^;()]+; Status Code: \d+; Error Code: (?P<code>[\w.]+);")
_GO_V2 = re.compile(
    r"operation error (?:[^:,]+): (?P<op>\w+), https response error StatusCode: \d+, RequestID: [^,]*, "
    r"api error (?P<code>\w+):"
)
_GO_V1 = re.compile(r"^(?P<code>[A-Z]\w+): [^\n]*\n\s*status code: \d+, request id:", re.MULTILINE)
_PY_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_PY_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_PY_TRACEBACK = "Traceback (most recent call last):"
# Node.js ``at fn (file:line:col)`` and ``at file:line:col``; .NET ``at M() in file:line N``
_AT_FRAME = re.compile(
    r"^\s*at (?:(?P<fn>.*?) \()?(?P<file>[^\s()]+?):(?P<line>\d+)(?::\d+)?\)?\s*$"
    r"|^\s*at (?P<net>[^\n]*?) in (?P<netfile>[^\n]+?):line (?P<netline>\d+)\s*$"
)
_JAVA_FRAME = re.compile(
    r"^\s*(?:at )?(?P<cls>[\w$.<>]+)\((?P<file>[\w$]+\.(?:java|kt|scala)):(?P<line>\d+)\)"
)
_RUBY_FRAME = re.compile(r"^\s*(?P<file>/[^:\s]+\.rb):(?P<line>\d+):in ")
_LIBRARY_PATHS = (
    "/var/runtime/",
    "/var/lang/",
    "node:internal",
    "internal/",
    "node_modules/",
    "site-packages/",
    "dist-packages/",
    "/opt/python/",
    "/opt/nodejs/",
    "<frozen ",
    "/gems/",
    "/usr/lib/",
    "/botocore/",
    "/boto3/",
)
_LIBRARY_CLASSES = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "lambdainternal.",
    "com.amazonaws.",
    "software.amazon.",
    "com.fasterxml.",
    "System.",
    "Microsoft.",
    "Amazon.",
    "lambda_method",
)


# Any Python installation's standard library (/var/lang/lib/python3.12/ on Lambda, /usr/local/lib/python3.11/
# elsewhere); its site-packages are caught above.
_PY_STDLIB = re.compile(r"/lib/python\d+(\.\d+)?/")


def _library(where: str) -> bool:
    return (
        any(marker in where for marker in _LIBRARY_PATHS)
        or where.startswith(_LIBRARY_CLASSES)
        or _PY_STDLIB.search(where) is not None
    )


def _frame_lines(stack: Any) -> list[str]:
    """The stack as text lines, whatever shape the record gives it in (a string, a list of strings, of
    [file, line, ...] lists as old Python runtimes wrote them, or of Go's {path, line, label} objects)."""
    if isinstance(stack, str):
        return stack.splitlines()
    lines: list[str] = []
    for item in stack if isinstance(stack, list) else []:
        if isinstance(item, str):
            lines += item.splitlines()
        elif isinstance(item, list) and len(item) >= 2:
            lines.append(f'File "{item[0]}", line {item[1]}')
        elif isinstance(item, Mapping) and "path" in item and "line" in item:
            lines.append(f"at {item.get('label', '?')} ({item['path']}:{item['line']})")
    return lines


def _frames(lines: list[str]) -> Iterator[tuple[str, str]]:
    """(where, file:line) of each frame, innermost first; ``where`` is what decides whether it is the
    runtime's or a library's (the path, or Java's and .NET's class)."""
    text = "\n".join(lines)
    marker = text.find(_PY_TRACEBACK)  # after it, frames even where the record's line breaks were lost
    found = _PY_FRAME.finditer(text, marker) if marker >= 0 else (_PY_LINE.match(line) for line in lines)
    python = [(m["file"], f"{m['file']}:{m['line']}") for m in found if m]
    if python:  # "most recent call last": the innermost frame is the last one
        yield from reversed(python)
        return
    for line in lines:
        if node := _AT_FRAME.match(line):
            if node["netfile"]:
                yield node["net"] + " " + node["netfile"], f"{node['netfile']}:{node['netline']}"
            else:
                yield node["file"], f"{node['file'].removeprefix('file://')}:{node['line']}"
        elif java := _JAVA_FRAME.match(line):
            yield java["cls"], f"{java['file']}:{java['line']}"
        elif ruby := _RUBY_FRAME.match(line):
            yield ruby["file"], f"{ruby['file']}:{ruby['line']}"


def own_frame(stack: Any) -> str | None:
    """The innermost frame of the function's own code (``file:line``), runtime and library frames skipped."""
    return next((frame for where, frame in _frames(_frame_lines(stack)) if not _library(where)), None)


def _sdk_object(fields: Mapping[str, Any]) -> str | None:
    """The AWS error code of a serialised SDK for JavaScript error (v3: ``$metadata``; v2: ``code`` with
    ``statusCode``/``retryable``), else None."""
    if isinstance(fields.get("$metadata"), Mapping) or "$fault" in fields:
        code = fields.get("Code") or fields.get("name") or fields.get("errorType")
        return str(code) if code else None
    if isinstance(fields.get("code"), str) and ("statusCode" in fields or "retryable" in fields):
        return str(fields["code"])
    return None


def sdk_code(texts: Iterable[str], fields: Mapping[str, Any] | None = None) -> tuple[str | None, str | None]:
    """(AWS error code, operation) from an SDK's error object or text, else (None, None)."""
    if fields is not None and (code := _sdk_object(fields)):
        return code, None
    for text in texts:
        if boto := _BOTO.search(text):
            return boto["code"], boto["op"]
        if go2 := _GO_V2.search(text):
            return go2["code"], go2["op"]
        if found := _JAVA_V1.search(text) or _GO_V1.search(text):
            return found["code"], None
    return None, None


def detail(
    error_type: str | None,
    message: str | None,
    stack: Any = None,
    fields: Mapping[str, Any] | None = None,
) -> ErrorDetail:
    """The record's detail; the SDK code is looked for in the message, then in the stack's text."""
    texts = [text for text in (message, *(_frame_lines(stack)[:3])) if text]
    code, operation = sdk_code(texts, fields)
    return ErrorDetail(
        type=error_type or None,
        message=message or None,
        code=code,
        operation=operation,
        frame=own_frame(stack),
    )
