"""The injectors' two errors: the CLI maps them to exit statuses 1 and 3."""

from __future__ import annotations


class ChaosError(RuntimeError):
    """An injector could not do what it was asked; the message says what and what to check."""


class ChaosRefused(ChaosError):
    """The injector refuses: the target is not marked for chaos, or there is nothing to break."""
