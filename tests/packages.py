"""Deployment packages for throwaway functions in tests."""

from __future__ import annotations

import contextlib
import io
import zipfile
from collections.abc import Callable, Mapping
from typing import Any


def zip_files(files: Mapping[str, str | bytes]) -> bytes:
    """A zip package holding ``files`` (name → content) at its root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def python_function(
    lambda_: Any,
    undo: Callable[[Callable[[], object]], None],
    name: str,
    role_arn: str,
    files: Mapping[str, str | bytes],
    handler: str,
    **settings: Any,
) -> str:
    """A throwaway Python function ``name`` made of ``files``, deleted when the test ends (unless the test
    deleted it)."""
    lambda_.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role_arn,
        Handler=handler,
        Code={"ZipFile": zip_files(files)},
        **settings,
    )

    def delete() -> None:
        with contextlib.suppress(lambda_.exceptions.ResourceNotFoundException):
            lambda_.delete_function(FunctionName=name)

    undo(delete)
    return name
