"""Secrets and personal data out of tool answers, incidents and notifications, before any model or person
reads them: the product's one redactor (the MCP server, the supervisor and the notifications call it).

Each value found is replaced by a typed placeholder (``[REDACTED:email]``), so an evidence pointer that
quotes a redacted line still matches the answer, and an answer's ``gaps`` say how many of each kind were
replaced. Detection runs on what a value *says*, not on how it was written:

- a string that is a JSON document (a JSON-format log record) is read token by token: each string is
  decoded, redacted (a document inside it too) and written back as a JSON string, a number that is a secret
  becomes a quoted placeholder, everything else is kept byte for byte, so the record still parses;
- in other text, JSON escapes (``\\n``, ``\\/``, ``\\u00a0``) and URL encoding (``%40``, ``%2F``) are decoded
  for matching, and a placeholder replaces whole escape sequences, never half of one;
- a value whose key names a secret (``password=``, ``"client_secret": ``, ``X-Amz-Security-Token:``; see
  :data:`SECRET_WORDS`) is replaced whatever its shape, the key kept;
- shapes need context where a shape alone would take a value the diagnosis needs: an AWS secret key (any
  40 characters of base64) only beside an access key id, a card number only when the Luhn check passes and
  nothing alphanumeric touches it, basic auth only when it decodes to ``user:password``.

A tool's ``…[truncated N bytes]`` marker is kept out of every match. ``bench/redaction.py`` measures the
cost. Vendor tokens are matched by the prefixes their issuers publish (GitHub, Slack, Stripe, Google); no
detector library fits (docs/tools.md says which were measured).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TypeVar

from pydantic import BaseModel

from mcp_server.contract.common import Gap

PLACEHOLDER: Final[str] = "[REDACTED:{}]"
REDACTION_SOURCE: Final[str] = "redaction"
# What a key that names a secret ends with (``names_a_secret``); ``secret_arn``, ``token_type``,
# ``input_tokens`` and ``access_key_id`` end otherwise: their values are kept.
SECRET_WORDS: Final[frozenset[str]] = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "token",
        "authorization",
        "credential",
        "credentials",
    }
)
KEY_QUALIFIERS: Final[frozenset[str]] = frozenset({"api", "private", "signing", "encryption", "master"})
_TRUNCATED = re.compile(r" …\[truncated \d+ bytes\]\Z")  # the logs tool's marker (tools/logs.py)


class _Detector(NamedTuple):
    kind: str
    hints: tuple[str, ...]  # a text holding none of these cannot match: the pattern is not run on it
    shortest: int  # nor on a text shorter than its shortest match
    pattern: re.Pattern[str]  # a group named ``value`` is the part replaced; the rest (``Bearer ``) stays
    holds: Callable[[str], bool] | None = None  # what the pattern alone cannot check of the value
    beside: re.Pattern[str] | None = None  # found by its shape alone, it counts only beside a match of this


def _luhn(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return 13 <= len(digits) <= 19 and total % 10 == 0


_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")


def _mixed_case(value: str) -> bool:
    return bool(re.search(r"[A-Z]", value) and re.search(r"[a-z]", value) and re.search(r"[0-9]", value))


def _user_and_password(value: str) -> bool:
    try:
        decoded = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


_PEM_BODY = r"[A-Za-z0-9+/=\s:,.()-]"  # base64 lines, armour headers ("Version: ...", "Proc-Type: 4,...")
_PEM = (
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    rf"{_PEM_BODY}*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?!{_PEM_BODY}))"
)
_B64URL = r"[A-Za-z0-9_-]"
# A JWS (header.payload.signature) or a JWE (header.key.iv.ciphertext.tag; the key is empty with "dir").
_JWT = rf"\beyJ{_B64URL}{{4,}}\.(?:eyJ{_B64URL}{{4,}}\.{_B64URL}*|{_B64URL}*(?:\.{_B64URL}{{4,}}){{3}})"
# Not right after "://" (a URL's user) nor after "@" (the tail of a URL password that holds one).
_EMAIL = r"(?<!://)(?<!@)\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
# A card number stands alone: no letter or digit touches it, nor joins it with a hyphen, so the digits of a
# UUID (a request id), a trace id or a hash never count. What comes before is looked for after its first
# digit: a pattern that starts with a character class is searched half again as fast.
_CARD = (
    r"[2-6](?<![0-9A-Za-z][2-6])(?<![0-9A-Za-z]-[2-6])[0-9](?:[ -]?[0-9]){11,17}"
    r"(?![0-9A-Za-z])(?!-[0-9A-Za-z])"
)
_CARD_NUMBER = re.compile(_CARD)
# A key, its separator, and its value: double- or single-quoted (Python's bytes repr too; a quote left open
# runs to the end, where a truncated value stops) or bare.
_PAIR = re.compile(
    r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[\"']?\s*[:=]\s*"
    r"(?:b?\"(?P<dq>[^\"]*)(?:\"|\Z)|b?'(?P<sq>[^']*)(?:'|\Z)|(?P<bare>(?!\[REDACTED:)[^\s\"',;&}\])]+))"
)
_PAIR_HINTS = re.compile("pass|pwd|secret|token|auth|credential|key")  # in the lowered text
_SCHEMES = frozenset({"basic", "bearer", "digest", "negotiate", "aws4-hmac-sha256"})
_SCHEME_KINDS: Final[dict[str, str]] = {"basic": "basic_auth", "bearer": "bearer_token"}

# In order of precedence: where two matches overlap, the one that starts first wins, then the earlier kind.
_DETECTORS: Final[tuple[_Detector, ...]] = (
    _Detector("private_key", ("PRIVATE KEY",), 27, re.compile(_PEM)),
    _Detector("jwt", ("eyJ",), 15, re.compile(_JWT)),
    _Detector(
        "url_password",
        ("://",),
        7,
        # from "://" on (the scheme changes nothing, and a literal start is searched several times faster)
        re.compile(r"://[^\s:/@\"'<>]*:(?P<value>[^\s/\"'<>]+)@(?=[A-Za-z0-9\[])"),
    ),
    _Detector(
        "basic_auth",
        ("asic",),
        12,
        re.compile(r"\b[Bb]asic\s+(?P<value>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"),
        _user_and_password,
    ),
    _Detector(
        "bearer_token", ("earer",), 23, re.compile(r"\b[Bb]earer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")
    ),
    # STS session tokens: the published forms begin with these encodings of their version header.
    _Detector(
        "aws_session_token",
        ("IQoJb3JpZ2lu", "FwoGZXIvYXdz", "FQoGZXIvYXdz", "AQoDYXdz"),
        40,
        re.compile(
            r"(?<![A-Za-z0-9+/])(?:IQoJb3JpZ2lu|FwoGZXIvYXdz|FQoGZXIvYXdz|AQoDYXdz)[A-Za-z0-9+/]{8,}=*"
        ),
    ),
    _Detector("aws_access_key", ("AKIA", "ASIA"), 20, _ACCESS_KEY),
    _Detector(
        "aws_secret_key",
        ("AKIA", "ASIA"),
        40,
        re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        _mixed_case,
        _ACCESS_KEY,  # any 40 characters of base64 have this shape: a payload's, a hash's
    ),
    _Detector(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        40,
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    _Detector(
        "slack_token",
        ("xox", "hooks.slack.com"),
        15,
        re.compile(
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}|hooks\.slack\.com/services/(?P<value>T[A-Z0-9]+/B[A-Z0-9]+/"
            r"[A-Za-z0-9]{16,})"
        ),
    ),
    _Detector(
        "stripe_key", ("k_live_", "k_test_"), 24, re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b")
    ),
    _Detector("google_api_key", ("AIza",), 39, re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    _Detector("email", ("@",), 6, re.compile(_EMAIL)),
    _Detector("card_number", (), 13, _CARD_NUMBER, _luhn),
)
# Every hint of every detector, found in one scan of a text; which detectors each hint calls for.
_HINTS = re.compile("|".join(sorted({re.escape(h) for d in _DETECTORS for h in d.hints}, key=len)[::-1]))
_CALLED_BY: Final[dict[str, frozenset[int]]] = {
    hint: frozenset(i for i, d in enumerate(_DETECTORS) if hint in d.hints)
    for d in _DETECTORS
    for hint in d.hints
}
_ALWAYS: Final[frozenset[int]] = frozenset(i for i, d in enumerate(_DETECTORS) if not d.hints)
_ALWAYS_SORTED: Final[list[int]] = sorted(_ALWAYS)
# The kind of a value whose key names a secret and that no detector knows.
SECRET: Final[str] = "secret"  # noqa: S105 - a kind's name
KINDS: Final[tuple[str, ...]] = (*(detector.kind for detector in _DETECTORS), SECRET)
_QUOTED_PLACEHOLDER = re.compile(r"\[REDACTED:(?:" + "|".join(KINDS) + r")\]")
_PLACEHOLDER_ONLY = re.compile(r"(?:\[REDACTED:[a-z_]+\])+")


def quotes_a_placeholder(text: str) -> bool:
    """Whether ``text`` carries a redacted value's placeholder (a command that does sets a wrong value)."""
    return _QUOTED_PLACEHOLDER.search(text) is not None


@functools.lru_cache(maxsize=4096)
def names_a_secret(key: str) -> bool:
    """Whether a key names a secret: its last word is one of :data:`SECRET_WORDS` (``DB_PASSWORD``,
    ``clientSecret``, ``X-Amz-Security-Token``), or it ends in "key" after one of them or of
    :data:`KEY_QUALIFIERS` (``AWS_SECRET_ACCESS_KEY``, ``api-key``, ``privateKey``)."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", key)]
    if not words:
        return False
    if words[-1] in SECRET_WORDS:
        return True
    return words[-1] == "key" and any(w in SECRET_WORDS or w in KEY_QUALIFIERS for w in words[:-1])


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


def _said(text: str) -> str:
    """``text`` with its escapes and %XX sequences decoded."""
    return _ENCODED.sub(_decode_one, text) if "\\" in text or "%" in text else text


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


def _pairs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each value whose key names a secret: its kind when one detector matches the
    whole value, else ``secret``. An Authorization value that is a scheme word is left to its detector."""
    found = []
    for match in _PAIR.finditer(text):
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        value = match.group(group)
        if not value or not names_a_secret(match.group("key")) or _PLACEHOLDER_ONLY.fullmatch(value):
            continue
        start, end = match.span(group)
        scheme, _, credential = value.partition(" ")
        if scheme.lower() in _SCHEMES:  # an Authorization value: the scheme stays
            if group == "bare" or not credential.strip() or _PLACEHOLDER_ONLY.fullmatch(credential.strip()):
                continue  # the credential, if any, follows the bare scheme: its detector's
            start = end - len(credential.lstrip())
            found.append((start, end, _SCHEME_KINDS.get(scheme.lower(), SECRET)))
            continue
        found.append((start, end, _kind_of(value)))
    return found


def _kind_of(value: str) -> str:
    """The kind of a value under a key that names a secret (the key is the context a shape may need)."""
    for kind, _, shortest, pattern, holds, _ in _DETECTORS:
        if len(value) >= shortest and pattern.fullmatch(value) and (holds is None or holds(value)):
            return kind
    return SECRET


def _matches(text: str) -> list[tuple[int, int, int, str]]:
    """(start, precedence, end, kind) of every secret in ``text``."""
    found: list[tuple[int, int, int, str]] = []
    hints = _HINTS.findall(text)
    called = sorted(_ALWAYS.union(*(_CALLED_BY[hint] for hint in hints))) if hints else _ALWAYS_SORTED
    for precedence in called:
        kind, _, shortest, pattern, holds, beside = _DETECTORS[precedence]
        if len(text) < shortest:
            continue
        if beside is not None and beside.search(text) is None:
            continue
        for match in pattern.finditer(text):
            has_value = "value" in pattern.groupindex and match.group("value") is not None
            start, end = match.span("value") if has_value else match.span()
            value = text[start:end]
            if (holds is None or holds(value)) and not _PLACEHOLDER_ONLY.fullmatch(value):
                found.append((start, precedence, end, kind))
    if _PAIR_HINTS.search(text.lower()):  # lowered first: a case-blind search costs twenty times more
        found += [(start, len(_DETECTORS), end, kind) for start, end, kind in _pairs(text)]
    return found


def _suspect(text: str) -> bool:
    """Whether ``text`` holds a detector's hint, a word a secret's key has, or a card number: a cheap
    superset of what :func:`_matches` can find in any part of it."""
    if _HINTS.search(text) or _PAIR_HINTS.search(text.lower()):
        return True
    return any(_luhn(match.group(0)) for match in _CARD_NUMBER.finditer(text))


def _redact_plain(text: str, counts: Counter[str]) -> str:
    found = _matches(_said(text))
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
_TIME_OR_ID = re.compile(  # an ISO 8601 time, or a UUID (a request id, an event id)
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
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
            key = _string(lexeme)
        elif lexeme[0] == '"' or lexeme[0] in "-0123456789":
            lexeme = _redacted_lexeme(lexeme, key, counts)
        parts.append(lexeme)
    return "".join(parts)


def _string(lexeme: str) -> str:
    """A JSON string lexeme's value (decoded only when it holds an escape)."""
    return json.loads(lexeme) if "\\" in lexeme else lexeme[1:-1]


def _redacted_lexeme(lexeme: str, key: str | None, counts: Counter[str]) -> str:
    """A string or number lexeme of a JSON document, redacted; the same lexeme when nothing was."""
    if lexeme[0] != '"':
        kind = SECRET if key is not None and names_a_secret(key) else None
        if kind is None and _CARD_NUMBER.fullmatch(lexeme) and _luhn(lexeme):
            kind = "card_number"
        if kind is None:
            return lexeme
        counts[kind] += 1
        return json.dumps(PLACEHOLDER.format(kind))
    value = _string(lexeme)
    redacted = _redacted(value, counts, key)
    return lexeme if redacted == value else json.dumps(redacted, ensure_ascii=False)


def redact_text(text: str, counts: Counter[str]) -> str:
    """``text`` with every secret replaced by its placeholder; ``counts`` gains one per replacement."""
    if (len(text) < 13 and not _SHORT_SECRET.search(text)) or _TIME_OR_ID.fullmatch(text):
        return text  # most strings of an answer are times, ids and names: they hold nothing
    marker = _TRUNCATED.search(text) if text.endswith(" bytes]") else None
    body = text[: marker.start()] if marker else text
    stripped = body.strip()
    redacted = None
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        if '\\"' not in body and not _suspect(_said(body)):
            return text  # what every string of it says, read at once: nothing to look at closer
        redacted = _document(body, counts)
    if redacted is None:
        redacted = _redact_plain(body, counts)
    return redacted + (marker.group(0) if marker else "")


def _redacted(value: Any, counts: Counter[str], key: str | None = None) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        if key is not None and names_a_secret(key) and value and not quotes_a_placeholder(value):
            kind = _kind_of(value)
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
