"""Record the IAM action of every AWS call a boto3 session's clients make."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3


def on_each_action(session: boto3.Session, record: Callable[[str], object]) -> None:
    """Call ``record("service:Operation")`` before each request of the session's clients is signed.
    Register before creating the clients: they copy the session's event hooks when made."""

    def hook(model: Any, **_: Any) -> None:
        record(f"{model.service_model.signing_name}:{model.name}")

    session.events.register("before-call.*.*", hook)
