"""The words of a command as a POSIX shell would pass them, refusing what a shell would not read literally."""

from __future__ import annotations

import shlex

from supervisor.diagnosis.cli_commands.service_model import CommandError

# Characters a POSIX shell gives a meaning to when unquoted (expansion, globbing, redirection, ...).
_UNQUOTED_SPECIAL = frozenset(";&|<>()$`*?[]{}!\r\n")
_WORD_START_SPECIAL = frozenset("#~")
_DOUBLE_QUOTED_SPECIAL = frozenset("$`!")


def split_words(command: str) -> list[str]:
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
