"""Deployment packages for throwaway functions in tests."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping


def zip_files(files: Mapping[str, str | bytes]) -> bytes:
    """A zip package holding ``files`` (name → content) at its root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()
