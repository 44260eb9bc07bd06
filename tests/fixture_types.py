"""The types of conftest's callable fixtures, for helpers that take a fixture as an argument (conftest
imports those helpers, so they cannot import conftest)."""

from __future__ import annotations

from collections.abc import Callable

Undo = Callable[[Callable[[], object]], None]
Inject = Callable[..., None]
