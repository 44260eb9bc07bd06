"""Secrets and personal data out of tool answers, before any model or person reads them.

Each kind is replaced by a typed placeholder (``[REDACTED:email]``), so an evidence pointer that quotes a
redacted line still matches the answer, and the answer's ``gaps`` say how many of each kind were replaced.
Each kind's pattern runs only on strings that hold its hint (``@``, ``eyJ``, ``://`` ...); card numbers must
also pass the Luhn check, and an AWS secret key must be exactly 40 characters of its alphabet with upper
case, lower case and a digit, so a UUID, a request id, a git or code hash and a 16-digit number that fails
the checksum stay as they are. ``bench/redaction.py`` measures the cost.

No detector library fits: ``detect-secrets`` took 663 µs a log line (66 s per 100,000 events), has no
e-mail or card detector and ends a JWT before its signature; ``scrubadub`` needs scikit-learn; Presidio
needs spaCy models; datafog's patterns have no Luhn check and no secret kinds.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final, NamedTuple, TypeVar

from pydantic import BaseModel

from mcp_server.contract.common import Gap

PLACEHOLDER: Final[str] = "[REDACTED:{}]"
REDACTION_SOURCE: Final[str] = "redaction"


class _Detector(NamedTuple):
    kind: str
    hints: tuple[str, ...]  # a string holding none of these cannot match: the pattern is not run on it
    shortest: int  # nor on a string shorter than its shortest match
    pattern: re.Pattern[str]  # a group named ``value`` is the part replaced; the rest (``Bearer ``) stays


_PEM = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)"
_EMAIL = r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
# A card number stands alone: no letter or digit touches it, nor joins it with a hyphen, so the digits of a
# UUID (a request id), a trace id or a hash never count, however many of them run together. What comes before
# is looked for after its first digit: a pattern that starts with a character class is searched half again as
# fast.
_CARD = (
    r"[2-6](?<![0-9A-Za-z][2-6])(?<![0-9A-Za-z]-[2-6])[0-9](?:[ -]?[0-9]){11,17}"
    r"(?![0-9A-Za-z])(?!-[0-9A-Za-z])"
)

# In order of precedence: where two matches overlap, the one that starts first wins, then the earlier kind.
_DETECTORS: Final[tuple[_Detector, ...]] = (
    _Detector("private_key", ("PRIVATE KEY",), 27, re.compile(_PEM)),
    _Detector(
        "jwt", ("eyJ",), 15, re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
    ),
    _Detector(
        "url_password",
        ("://",),
        7,
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"']+:(?P<value>[^\s/@\"']+)@"),
    ),
    _Detector(
        "bearer_token", ("earer",), 23, re.compile(r"\b[Bb]earer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")
    ),
    _Detector("aws_access_key", ("AKIA", "ASIA"), 20, re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    _Detector("aws_secret_key", (), 40, re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    _Detector("email", ("@",), 6, re.compile(_EMAIL)),
    _Detector("card_number", (), 13, re.compile(_CARD)),
)
KINDS: Final[tuple[str, ...]] = tuple(detector.kind for detector in _DETECTORS)
_QUOTED_PLACEHOLDER = re.compile(r"\[REDACTED:(?:" + "|".join(KINDS) + r")\]")


def quotes_a_placeholder(text: str) -> bool:
    """Whether ``text`` carries a redacted value's placeholder (a command that does sets a wrong value)."""
    return _QUOTED_PLACEHOLDER.search(text) is not None


def _luhn(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _is_secret(kind: str, text: str) -> bool:
    """The checks a pattern alone cannot make."""
    if kind == "card_number":
        digits = re.sub(r"[ -]", "", text)
        return 13 <= len(digits) <= 19 and _luhn(digits)
    if kind == "aws_secret_key":
        return bool(re.search(r"[A-Z]", text) and re.search(r"[a-z]", text) and re.search(r"[0-9]", text))
    return True


def redact_text(text: str, counts: Counter[str]) -> str:
    """``text`` with every secret replaced by its placeholder; ``counts`` gains one per replacement."""
    found: list[tuple[int, int, int, str]] = []  # start, precedence, end, kind
    for precedence, (kind, hints, shortest, pattern) in enumerate(_DETECTORS):
        if len(text) < shortest or (hints and not any(hint in text for hint in hints)):
            continue
        for match in pattern.finditer(text):
            if _is_secret(kind, match.group(0)):
                start, end = match.span("value") if "value" in pattern.groupindex else match.span()
                found.append((start, precedence, end, kind))
    if not found:
        return text
    parts, done = [], 0
    for start, _, end, kind in sorted(found):
        if start >= done:  # a match inside one already replaced is part of it
            parts += [text[done:start], PLACEHOLDER.format(kind)]
            counts[kind] += 1
            done = end
    return "".join([*parts, text[done:]])


def _redacted(value: Any, counts: Counter[str]) -> Any:
    if isinstance(value, str):
        return redact_text(value, counts)
    if isinstance(value, dict):
        return {key: _redacted(item, counts) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, counts) for item in value]
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
