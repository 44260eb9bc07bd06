"""The notification settings the orchestrator and the watchdog share: one topic, one console link. A mixin
of their settings classes, so each component reads them under its own prefix
(SUPERVISOR_DIAGNOSES_TOPIC_ARN, WATCHDOG_DIAGNOSES_TOPIC_ARN)."""

from __future__ import annotations

from urllib.parse import urlparse

from pydantic import BaseModel, Field, ValidationInfo, field_validator


class NotificationSettings(BaseModel):
    diagnoses_topic_arn: str | None = Field(
        default=None,
        description="SNS topic that gets one message per incident outcome (DIAGNOSED, FAILED, ERROR), one "
        "more for a provisional diagnosis before its final one, and one per remediation status people are "
        "told of (AWAITING_APPROVAL and each end); unset or empty: no notifications.",
    )
    console_url: str | None = Field(
        default=None,
        description="Base URL of the incident console; notifications link to <base>/incidents/<id>. "
        "Unset: they say there is no link.",
    )

    @classmethod
    def _name(cls, info: ValidationInfo) -> str:
        return f"{cls.model_config.get('env_prefix', '')}{info.field_name}".upper()

    @field_validator("diagnoses_topic_arn", "console_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value  # a template parameter left empty

    @field_validator("diagnoses_topic_arn")
    @classmethod
    def _topic_arn(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and (not value.startswith("arn:") or value.split(":")[2:3] != ["sns"]):
            raise ValueError(f"{cls._name(info)} must be an SNS topic ARN, not {value!r}")
        return value

    @field_validator("console_url")
    @classmethod
    def _console(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            url = urlparse(value)
            if url.scheme not in ("http", "https") or not url.netloc:
                raise ValueError(f"{cls._name(info)} must be an http(s) URL, not {value!r}")
        return value.rstrip("/") if value else value
