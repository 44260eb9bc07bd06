"""What a secret looks like, and where one is in a text: the kinds the product redacts (each a detector:
the hints that call for it, its pattern, what the pattern alone cannot check, the context it needs), the keys
whose values are secrets whatever their shape, and the search of a text for all of them.
``mcp_server/redaction.py`` decodes what it searches and replaces what is found. Vendor tokens are known by
the prefixes their issuers publish (GitHub, Slack, Stripe, Google); no detector library fits (docs/tools.md
says which were measured)."""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from typing import Final, NamedTuple

import ahocorasick_rs

PLACEHOLDER: Final[str] = "[REDACTED:{}]"
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


class _Detector(NamedTuple):
    kind: str
    hints: tuple[str, ...]  # a text holding none of these cannot match: the pattern is not run on it
    shortest: int  # nor on a text shorter than its shortest match
    pattern: re.Pattern[str]  # a group named ``value`` is the part replaced; the rest (``Bearer ``) stays
    holds: Callable[[str], bool] | None = None  # what the pattern alone cannot check of the value
    beside: re.Pattern[str] | None = None  # found by its shape alone, it counts only beside a match of this
    may_match: Callable[[str], bool] | None = None  # a cheap test every match passes: not run where it fails


_DOUBLED: Final = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)  # a digit doubled, its two digits added


def luhn(text: str) -> bool:
    """Whether the digits of ``text`` (a card number's, spaces and hyphens between them) pass the Luhn
    check, and are 13 to 19."""
    digits = text.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19:
        return False
    total = sum(map(int, digits[-1::-2])) + sum(map(_DOUBLED.__getitem__, map(int, digits[-2::-2])))
    return total % 10 == 0


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
CARD_NUMBER = re.compile(_CARD)
# Digits to "0", anything else to "x", and a card's separators (space, hyphen) dropped: a card number leaves
# thirteen "0"s in a row. A byte table applied in C is several times faster than the card pattern's search.
_DIGIT_RUNS: Final = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x78 for byte in range(256))


def may_hold_card(text: str) -> bool:
    """Whether ``text`` has 13 digits that only single spaces or hyphens could separate: what every match
    of :data:`CARD_NUMBER` has (most lines do not, a random request id among them)."""
    return b"0000000000000" in text.encode("utf-8", "surrogatepass").translate(_DIGIT_RUNS, b" -")


# A key, its separator, and its value: double- or single-quoted (Python's bytes repr too; a quote left open
# runs to the end, where a truncated value stops) or bare.
_PAIR = re.compile(
    r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[\"']?\s*[:=]\s*"
    r"(?:b?\"(?P<dq>[^\"]*)(?:\"|\Z)|b?'(?P<sq>[^']*)(?:'|\Z)|(?P<bare>(?!\[REDACTED:)[^\s\"',;&}\])]+))"
)
_PAIR_WORDS: Final = frozenset({"pass", "pwd", "secret", "token", "auth", "credential", "key"})
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
    _Detector("card_number", (), 13, CARD_NUMBER, luhn, may_match=may_hold_card),
)
# Every detector's hint and every word of a secret's key, found in one pass over the lowered text by an
# Aho-Corasick automaton (a regular expression of the same words is scanned several times slower); lowered,
# a hint finds a superset of what it finds as written, and each pattern checks its own case.
_WORDS: Final[tuple[str, ...]] = tuple(sorted({h.lower() for d in _DETECTORS for h in d.hints} | _PAIR_WORDS))
_FINDER: Final = ahocorasick_rs.AhoCorasick(list(_WORDS))
_CALLED_BY: Final[dict[str, frozenset[int]]] = {
    word: frozenset(i for i, d in enumerate(_DETECTORS) if word in {h.lower() for h in d.hints})
    for word in _WORDS
}
_ALWAYS: Final[frozenset[int]] = frozenset(i for i, d in enumerate(_DETECTORS) if not d.hints)
_ALWAYS_SORTED: Final[list[int]] = sorted(_ALWAYS)
# The kind of a value whose key names a secret and that no detector knows.
SECRET: Final[str] = "secret"  # noqa: S105 - a kind's name
KINDS: Final[tuple[str, ...]] = (*(detector.kind for detector in _DETECTORS), SECRET)
_QUOTED_PLACEHOLDER = re.compile(r"\[REDACTED:(?:" + "|".join(KINDS) + r")\]")
PLACEHOLDER_ONLY = re.compile(r"(?:\[REDACTED:[a-z_]+\])+")


def is_card_number(text: str) -> bool:
    """Whether all of ``text`` is a card number (a JSON number's digits, say)."""
    return CARD_NUMBER.fullmatch(text) is not None and luhn(text)


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


def _pairs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each value whose key names a secret: its kind when one detector matches the
    whole value, else ``secret``. An Authorization value that is a scheme word is left to its detector."""
    found = []
    for match in _PAIR.finditer(text):
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        value = match.group(group)
        if not value or not names_a_secret(match.group("key")) or PLACEHOLDER_ONLY.fullmatch(value):
            continue
        start, end = match.span(group)
        scheme, _, credential = value.partition(" ")
        if scheme.lower() in _SCHEMES:  # an Authorization value: the scheme stays
            if group == "bare" or not credential.strip() or PLACEHOLDER_ONLY.fullmatch(credential.strip()):
                continue  # the credential, if any, follows the bare scheme: its detector's
            start = end - len(credential.lstrip())
            found.append((start, end, _SCHEME_KINDS.get(scheme.lower(), SECRET)))
            continue
        found.append((start, end, kind_of(value)))
    return found


def kind_of(value: str) -> str:
    """The kind of a value under a key that names a secret (the key is the context a shape may need)."""
    for kind, _, shortest, pattern, holds, *_ in _DETECTORS:
        if len(value) >= shortest and pattern.fullmatch(value) and (holds is None or holds(value)):
            return kind
    return SECRET


def matches(text: str) -> list[tuple[int, int, int, str]]:
    """(start, precedence, end, kind) of every secret in ``text``."""
    found: list[tuple[int, int, int, str]] = []
    words = set(_FINDER.find_matches_as_strings(text.lower(), overlapping=True))
    called = sorted(_ALWAYS.union(*(_CALLED_BY[word] for word in words))) if words else _ALWAYS_SORTED
    for precedence in called:
        kind, _, shortest, pattern, holds, beside, may_match = _DETECTORS[precedence]
        if len(text) < shortest or (may_match is not None and not may_match(text)):
            continue
        if beside is not None and beside.search(text) is None:
            continue
        for match in pattern.finditer(text):
            has_value = "value" in pattern.groupindex and match.group("value") is not None
            start, end = match.span("value") if has_value else match.span()
            value = text[start:end]
            if (holds is None or holds(value)) and not PLACEHOLDER_ONLY.fullmatch(value):
                found.append((start, precedence, end, kind))
    if not words.isdisjoint(_PAIR_WORDS):
        found += [(start, len(_DETECTORS), end, kind) for start, end, kind in _pairs(text)]
    return found


def suspect(text: str) -> bool:
    """Whether ``text`` holds a detector's hint, a word a secret's key has, or a card number: a cheap
    superset of what :func:`matches` can find in any part of it."""
    if _FINDER.find_matches_as_indexes(text.lower()):
        return True
    return may_hold_card(text) and any(luhn(match.group(0)) for match in CARD_NUMBER.finditer(text))
