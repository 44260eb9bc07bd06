"""Secrets and personal data out of tool answers, incidents and notifications, before any model or person
reads them: the product's one redactor (the MCP server, the supervisor and the notifications call it).

Each value found is replaced by a typed placeholder (``[REDACTED:email]``), so an evidence pointer that
quotes a redacted line still matches the answer, and an answer's ``gaps`` say how many of each kind were
replaced. Detection runs on what a value *says*, not on how it was written:

- a string that is a JSON document (a JSON-format log record) is parsed and each of its strings (keys
  too) redacted (a document inside one too) and written back as a JSON string where it stood, a number
  that is a secret as a quoted placeholder; everything else is kept byte for byte, so the record parses;
- in other text, JSON escapes (``\\n``, ``\\/``, ``\\u00a0``) and URL encoding (``%40``, ``%2F``) are decoded
  for matching, and a placeholder replaces whole escape sequences, never half of one;
- a value whose key names a secret (``password=``, ``"client_secret": ``, ``X-Amz-Security-Token:``; see
  :data:`mcp_server.secret_kinds.SECRET_WORDS`) is replaced whatever its shape, the key kept;
- shapes need context where a shape alone would take a value the diagnosis needs: an AWS secret key (any
  40 characters of base64) only beside an access key id, a card number only when the Luhn check passes and
  nothing alphanumeric touches it, basic auth only when it decodes to ``user:password``.

What each kind looks like is declared in ``mcp_server/secret_kinds.py``. A tool's ``…[truncated N bytes]``
marker is kept out of every match. ``bench/redaction.py`` measures the cost.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from mcp_server.contract.common import Gap
from mcp_server.secret_kinds import (
    KINDS,
    PLACEHOLDER,
    SECRET,
    is_card_number,
    kind_of,
    matches,
    names_a_secret,
    quotes_a_placeholder,
    suspect,
)

__all__ = [
    "KINDS",
    "REDACTION_SOURCE",
    "names_a_secret",
    "quotes_a_placeholder",
    "redact_answer",
    "redact_text",
]

REDACTION_SOURCE: Final[str] = "redaction"
_TRUNCATED = re.compile(r" …\[truncated \d+ bytes\]\Z")  # the logs tool's marker (tools/logs.py)


# --- text: what it says once escapes and URL encoding are decoded ------------------------------------------

_ENCODED = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|[\"\\/bfnrt])|%[0-9A-Fa-f]{2}")
_ESCAPES: Final[dict[str, str]] = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _decode_one(match: re.Match[str]) -> str:
    code = match.group(0)
    if code[0] == "%":
        return chr(int(code[1:], 16))
    if code[1] == "u":
        return chr(int(code[2:], 16))
    return _ESCAPES.get(code[1], code[1])


_SHORT_ESCAPES: Final = tuple(
    ("\\" + code, decoded) for code, decoded in {**_ESCAPES, '"': '"', "/": "/"}.items()
)


def _said(text: str) -> str:
    """``text`` with its escapes and %XX sequences decoded."""
    if "\\" not in text:
        return _ENCODED.sub(_decode_one, text) if "%" in text else text
    if "%" in text or "\\u" in text or "\\\\" in text:
        return _ENCODED.sub(_decode_one, text)
    # Only two-character escapes, none of them a backslash: each replaced in one pass, not a call per escape.
    for escape, character in _SHORT_ESCAPES:
        if escape in text:
            text = text.replace(escape, character)
    return text


def _starts(text: str) -> list[int]:
    """Where each character of ``text`` decoded (escapes and %XX) began in ``text``, and one more entry: its
    end."""
    starts: list[int] = []
    done = 0
    for match in _ENCODED.finditer(text):
        starts.extend(range(done, match.start()))
        starts.append(match.start())
        done = match.end()
    starts.extend(range(done, len(text) + 1))
    return starts


def _redact_plain(text: str, counts: Counter[str]) -> str:
    found = matches(_said(text))
    if not found:
        return text
    starts = _starts(text) if _ENCODED.search(text) else []  # where each character said was written
    parts, done = [], 0
    for start, _, end, kind in sorted(found):
        if starts:  # back to the encoded text: whole escape sequences
            start, end = starts[start], starts[end]
        if start >= done:
            parts += [text[done:start], PLACEHOLDER.format(kind)]
            counts[kind] += 1
            done = end
        elif end > done:  # it overlaps the one just replaced, and goes further: the placeholder takes both
            done = end
    return "".join([*parts, text[done:]])


# --- a JSON document: each string and number by itself, everything else kept as written -------------------

# Below a card number's 13 characters, only an address, a key's value or an encoded one can be a secret.
_SHORT_SECRET = re.compile(r"[@=:%\\]")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Lambda's own lines in text format: ids, numbers and fixed words only (a number is never long enough to be a
# card's, nor has it more than three decimals).
_PLATFORM_LINE = re.compile(
    rf"(?:START RequestId: {_UUID.pattern} Version: (?:\$LATEST|\d{{1,6}})|END RequestId: {_UUID.pattern}"
    rf"|REPORT RequestId: {_UUID.pattern}(?:\t[A-Za-z ]{{1,20}}: \d{{1,9}}(?:\.\d{{1,3}})? (?:ms|MB))+)\t?\n?"
)
# A string as json.dumps(..., ensure_ascii=False) writes it, without building an encoder per call.
_encoded: Final[Callable[[str], str]] = json.encoder.encode_basestring
_LEXEME = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}\[\]:,]|\s+|true|false|null')


def _document(text: str, counts: Counter[str]) -> str | None:
    """A JSON document with each string redacted as the value of its key (the string before the ":" that
    precedes it; an array's items are its key's), and each number that is a secret replaced by a quoted
    placeholder; nothing else of it changes. None when ``text`` is made of anything but JSON's lexemes (a
    Python dict's repr: read as text instead)."""
    lexemes = _LEXEME.findall(text)
    if sum(map(len, lexemes)) != len(text):
        return None
    parts: list[str] = []
    opened: list[str | None] = []  # the key each open object or array is the value of
    key: str | None = None
    following = [""] * len(lexemes)  # the next lexeme that is not white space
    for index in range(len(lexemes) - 2, -1, -1):
        ahead = lexemes[index + 1]
        following[index] = following[index + 1] if ahead.isspace() else ahead
    for lexeme, ahead in zip(lexemes, following, strict=True):
        if lexeme in ("{", "["):
            opened.append(key)
        elif lexeme in ("}", "]"):
            key = opened.pop() if opened else None  # (unbalanced text is scanned all the same)
        elif lexeme[0] == '"' and ahead == ":":
            key, lexeme = _string(lexeme), _redacted_lexeme(lexeme, None, counts)  # a key may be an address
        elif lexeme[0] == '"' or lexeme[0] in "-0123456789":
            lexeme = _redacted_lexeme(lexeme, key, counts)
        parts.append(lexeme)
    return "".join(parts)


class _SecretNumber(Exception):
    """A number of a parsed document is a secret: its placeholder must be written lexeme by lexeme."""


def _spliced(text: str, counts: Counter[str]) -> str | None:
    """A JSON document redacted as :func:`_document` does, faster: parsed, redacted as a value, and each
    changed string written back where its usual encoding stands in ``text``; when one is written otherwise
    (``\\/``, ``\\u`` escapes) or a number is a secret, by :func:`_document`. None when ``text`` is no JSON
    document."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    found: Counter[str] = Counter()
    changes: list[tuple[str, str]] = []
    try:
        redacted = _redacted_document(parsed, found, None, changes)
    except _SecretNumber:
        return _document(text, counts)
    if not found:
        return text
    spliced = text
    for before, after in changes:
        written = _encoded(before)
        if written not in spliced:
            return _document(text, counts)
        spliced = spliced.replace(written, _encoded(after))
    if json.loads(spliced) != redacted:  # an encoding that also stood elsewhere: lexeme by lexeme instead
        return _document(text, counts)
    counts.update(found)
    return spliced


def _redacted_document(
    value: Any, counts: Counter[str], key: str | None, changes: list[tuple[str, str]]
) -> Any:
    """A parsed JSON document redacted as :func:`_redacted` does, its keys too (a key may be an address);
    ``changes`` gains (string, redacted) for each string changed, in document order. Raises
    :class:`_SecretNumber` at a number under a key that names a secret, or a card number."""
    if isinstance(value, str):
        redacted = _redacted(value, counts, key)
        if redacted != value:
            changes.append((value, redacted))
        return redacted
    if isinstance(value, dict):
        result = {}
        for name, item in value.items():
            written = redact_text(name, counts)
            if written != name:
                changes.append((name, written))
            result[written] = _redacted_document(item, counts, name, changes)
        return result
    if isinstance(value, list):
        return [_redacted_document(item, counts, key, changes) for item in value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if (key is not None and names_a_secret(key)) or is_card_number(str(value)):
        raise _SecretNumber
    return value


def _string(lexeme: str) -> str:
    """A JSON string lexeme's value (decoded only when it holds an escape)."""
    return json.loads(lexeme) if "\\" in lexeme else lexeme[1:-1]


def _redacted_lexeme(lexeme: str, key: str | None, counts: Counter[str]) -> str:
    """A string or number lexeme of a JSON document, redacted; the same lexeme when nothing was."""
    if lexeme[0] != '"':
        kind = SECRET if key is not None and names_a_secret(key) else None
        if kind is None and is_card_number(lexeme):
            kind = "card_number"
        if kind is None:
            return lexeme
        counts[kind] += 1
        return json.dumps(PLACEHOLDER.format(kind))
    value = _string(lexeme)
    redacted = _redacted(value, counts, key)
    return lexeme if redacted == value else json.dumps(redacted, ensure_ascii=False)


def _holds_nothing(text: str) -> bool:
    """Most strings of an answer are names, times, ids and Lambda's own lines: they hold nothing (each
    pattern only tried where the text's first characters allow it)."""
    if len(text) < 13:
        return text.isalnum() or not _SHORT_SECRET.search(text)
    if text[4:5] == "-" and text[10:11] == "T":
        return len(text) <= 32 and _is_time(text)  # longer, its fraction of a second could be a card number
    if len(text) == 36 and text[8:9] == "-":
        return _UUID.fullmatch(text) is not None  # a request id, an event id
    return text[:3] in ("STA", "END", "REP") and _PLATFORM_LINE.fullmatch(text) is not None


def _is_time(text: str) -> bool:
    """An ISO 8601 date and time."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def redact_text(text: str, counts: Counter[str]) -> str:
    """``text`` with every secret replaced by its placeholder; ``counts`` gains one per replacement."""
    if _holds_nothing(text):
        return text
    marker = _TRUNCATED.search(text) if text.endswith(" bytes]") else None
    body = text[: marker.start()] if marker else text
    stripped = body.strip()
    redacted = None
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        if '\\"' not in body and not suspect(_said(body)):
            return text  # what every string of it says, read at once: nothing to look at closer
        redacted = _spliced(body, counts)
    if redacted is None:
        redacted = _redact_plain(body, counts)
    return redacted + (marker.group(0) if marker else "")


def _redacted(value: Any, counts: Counter[str], key: str | None = None) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        if key is not None and names_a_secret(key) and value and not quotes_a_placeholder(value):
            kind = kind_of(value)
            counts[kind] += 1
            return PLACEHOLDER.format(kind)
        return redact_text(value, counts)
    if isinstance(value, dict):
        return {k: _redacted(item, counts, k) for k, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, counts, key) for item in value]
    return value


def redaction_gap(counts: Counter[str]) -> Gap:
    replaced = ", ".join(f"{counts[kind]} {kind}" for kind in KINDS if counts[kind])
    return Gap(
        source=REDACTION_SOURCE,
        meaning=f"Replaced before any model reads the answer: {replaced}. The placeholders "
        "([REDACTED:<kind>]) stand where the values were; the values are not recoverable from this answer.",
    )


Answer = TypeVar("Answer", bound=BaseModel)


def redact_answer(answer: Answer) -> Answer:
    """``answer`` with every string redacted, and a gap that counts what was replaced; the same object
    when nothing was."""
    counts: Counter[str] = Counter()
    data = _redacted(answer.model_dump(mode="json", by_alias=True), counts)
    if not counts:
        return answer
    data["gaps"] = [*data.get("gaps", []), redaction_gap(counts).model_dump(mode="json")]
    return type(answer).model_validate(data)
