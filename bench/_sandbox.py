"""The sandbox a benchmark runs on: the one it is given (a test's), or its own for the run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chaos.sandbox.sandbox import Sandbox, running_sandbox


@contextmanager
def given_or_own(given: Sandbox | None, prefix: str) -> Iterator[Sandbox]:
    """``given``, or a sandbox started in a temporary directory named ``prefix…`` and stopped after."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp, running_sandbox(Path(tmp)) as sandbox:
        yield sandbox
