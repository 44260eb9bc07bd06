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
        if value == "":  # a template parameter left empty
            return None
        url = urlparse(value) if isinstance(value, str) else None
        if value is not None and (url is None or url.scheme not in ("http", "https") or len(url.path) < 2):
            raise ValueError(
                "RECHECK_QUEUE_URL must be an SQS queue URL such as "
                f"https://sqs.ca-central-1.amazonaws.com/123456789012/incident-rechecks, not {value!r}"
            )
        return value
