"""An execution environment's ``/tmp``: a file system of the function's ``EphemeralStorage`` size.

Lambda gives each execution environment its own ``/tmp`` of ``EphemeralStorage.Size`` MB (512 by default, at
most 10,240), kept for the environment's life and shared by its invocations; a write past it fails as on a
full disk, ``ENOSPC`` (https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html,
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html).

The sandbox mounts a ``tmpfs`` of that size in a mount namespace of the worker's own (``unshare``, then
``mount`` inside it), so the kernel refuses the write past it, the mount is seen by that worker alone and
goes with it. It is mounted at a directory of the environment that ``TMPDIR`` names, not over ``/tmp``
itself, which holds the sandbox (its package, often its checkout): code that asks the runtime for its
temporary directory (Python's ``tempfile``, Node's ``os.tmpdir()``) gets it; a literal ``/tmp`` path is the
host's, unbounded. Root may make the namespace; others need unprivileged user namespaces. Where neither is
allowed the directory is a plain one and the size is not enforced (:func:`enforced` says which).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MOUNT = 'mount -t tmpfs -o "size=$1m,mode=1777" tmpfs "$2" && shift 2 && exec "$@"'


def _unshare() -> list[str] | None:
    found = shutil.which("unshare")
    if found is None:
        return None
    as_user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return [found, *as_user, "--mount", "--propagation", "private", "--"]


def wrapped(command: list[str], directory: Path, size_mb: int) -> list[str]:
    """``command`` started with a ``size_mb`` tmpfs at ``directory``, when the machine allows it."""
    unshare = _unshare() if enforced() else None
    if unshare is None:
        return command
    return [*unshare, "/bin/sh", "-c", MOUNT, "scratch", str(size_mb), str(directory), *command]


@functools.cache
def enforced() -> bool:
    """Whether this machine lets the sandbox mount a sized ``/tmp`` for each environment."""
    unshare = _unshare()
    if unshare is None:
        return False
    with tempfile.TemporaryDirectory(prefix="scratch-probe-") as probe:
        try:
            done = subprocess.run(  # noqa: S603 - fixed arguments
                [*unshare, "/bin/sh", "-c", MOUNT, "probe", "1", probe, "true"],
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0
