"""Text that came from a function (its log lines, or a model quoting them) on its way to a person: made
inert for the surface it is shown on, in one place.

- ``shown_controls``: every surface (e-mail, chat, the console). Bidirectional controls (the "Trojan
  Source" set, CVE-2021-42574) reorder what a reader sees, and other control characters are invisible or
  drive a terminal; each becomes a visible ``[U+202E]``.
- ``chat_markdown``: the chat notification, which Amazon Q Developer in chat applications renders as the
  chat platform's markup (``textType: client-markdown``). Slack treats ``&``, ``<`` and ``>`` as control
  characters (``<!channel>``, ``<@U…>``, ``<url|text>``) and documents their escaping as HTML entities;
  Microsoft Teams reads Markdown links (``[text](url)``); a plain ``@channel`` may be linked as a mention.
  Formatting marks (``*``, ``_``, ``~``, backticks) are left as they are: they change emphasis, not what a
  click does or who is paged, and log lines are full of them.
"""

from __future__ import annotations

import re
from typing import Final

_BIDI: Final = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS: Final = (
    *(c for c in range(0x20) if chr(c) not in "\t\n\r"),
    *range(0x7F, 0xA0),
)
_SHOWN: Final[dict[int, str]] = {code: f"[U+{code:04X}]" for code in (*_BIDI, *_CONTROLS)}

_CHAT_MARKUP: Final[dict[int, str]] = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;"}
_MENTION: Final = re.compile(r"(?<![\w@])@(?=\w)")  # "@channel", "@here", "@someone"; not user@host
_MARKDOWN_LINK: Final = re.compile(r"\]\s*\(")  # "[text](url)" and "![alt](url)"
_LINK_DEFINITION: Final = re.compile(r"^(\s*\[[^\]\n]*\]):", re.MULTILINE)  # "[ref]: url" opening a line
FULLWIDTH_AT: Final = "\uff20"  # FULLWIDTH COMMERCIAL AT: reads as an at sign, mentions nobody


def shown_controls(text: str) -> str:
    """``text`` with each bidirectional or other control character (but tab and line breaks) replaced
    by a visible ``[U+XXXX]``."""
    return text.translate(_SHOWN)


def chat_markdown(text: str) -> str:
    """``text`` as literal text inside a chat notification's markup: controls shown, Slack's control
    characters as entities, no mention and no Markdown link. The one escaping of every chat field."""
    text = shown_controls(text).translate(_CHAT_MARKUP)
    text = _MENTION.sub(FULLWIDTH_AT, text)
    text = _MARKDOWN_LINK.sub("] (", text)
    return _LINK_DEFINITION.sub(r"\1 :", text)
