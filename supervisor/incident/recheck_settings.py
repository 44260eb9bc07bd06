"""The re-check queue setting the orchestrator and the watchdog share: a mixin of their settings classes,
read from RECHECK_QUEUE_URL (no prefix: the deploy template sets it once for both)."""

from __future__ import annotations

from urllib.parse import urlparse

from pydantic import AliasChoices, BaseModel, Field, field_validator


class RecheckQueueSettings(BaseModel):
    recheck_queue_url: str | None = Field(
        validation_alias=AliasChoices("RECHECK_QUEUE_URL", "recheck_queue_url"),
        default=None,
        description="SQS queue of the re-checks of provisional diagnoses (the supervisor sends each one "
        "delayed until its re-check time; the watchdog sends again one that never ran). Unset: no re-check "
        "is sent, and the watchdog makes a provisional diagnosis final as it stands.",
    )

    @field_validator("recheck_queue_url", mode="before")
    @classmethod
    def _queue_url(cls, value: object) -> object:
        return queue_url(value, "RECHECK_QUEUE_URL", "incident-rechecks")


def queue_url(value: object, variable: str, example: str) -> object:
    """An SQS queue URL setting as given (empty: unset, a template parameter left empty); a clear error for
    anything that is not one."""
    if value == "":
        return None
    url = urlparse(value) if isinstance(value, str) else None
    if value is not None and (url is None or url.scheme not in ("http", "https") or len(url.path) < 2):
        raise ValueError(
            f"{variable} must be an SQS queue URL such as "
            f"https://sqs.ca-central-1.amazonaws.com/123456789012/{example}, not {value!r}"
        )
    return value
