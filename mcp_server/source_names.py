"""Event sources named the ways AWS names them: an SQS queue by its name, URL or ARN, an SNS topic by its
ARN. Plain Python, no pydantic: the supervisor's cold path builds the same ARNs from an alarm.

- Queue names: up to 80 characters, alphanumerics, ``-`` and ``_``; a FIFO queue's ends with ``.fifo``
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueUrl.html).
- Queue URLs: ``https://sqs.<region>.amazonaws.com/<account>/<name>`` (and the legacy
  ``https://<region>.queue.amazonaws.com/...``); a URL on any other host (a VPC endpoint, a local
  emulator) gives its account and name only.
- Topic names: up to 256 characters, alphanumerics, ``-`` and ``_``, ``.fifo`` for a FIFO topic
  (https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

SourceKind = Literal["sqs", "sns"]

_QUEUE_NAME: Final = r"[A-Za-z0-9_-]{1,75}(?:\.fifo)?|[A-Za-z0-9_-]{1,80}"
_TOPIC_NAME: Final = r"[A-Za-z0-9_-]{1,251}(?:\.fifo)?|[A-Za-z0-9_-]{1,256}"
_ARN: Final = re.compile(
    r"arn:(?P<partition>aws(?:-[a-z]+)*):(?P<service>sqs|sns):(?P<region>[a-z]{2}(?:-[a-z]+)+-\d{1,2}):"
    r"(?P<account>\d{12}):(?P<name>[^:/\s]+)"
)
_QUEUE_PATH: Final = re.compile(rf"/(?P<account>\d{{12}})/(?P<name>{_QUEUE_NAME})")
_SQS_HOST: Final = re.compile(
    r"(?:sqs\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d{1,2})\.amazonaws\.com(?:\.cn)?"
    r"|(?P<legacy>[a-z]{2}(?:-[a-z]+)+-\d{1,2})\.queue\.amazonaws\.com(?:\.cn)?)"
)
# The same language for JSON Schema clients (ECMA-262): a queue name, an https/http URL, or an ARN.
SOURCE_PATTERN: Final[str] = (
    r"^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo|https?://[^\s/]+/\d{12}/[A-Za-z0-9_.-]{1,80}"
    r"|arn:aws[a-z-]*:(?:sqs|sns):[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256})$"
)
SOURCE_HELP: Final[str] = (
    "an SQS queue's name (e.g. 'orders-queue'), URL or ARN (arn:aws:sqs:<region>:<account>:<name>), or an "
    "SNS topic's ARN (arn:aws:sns:<region>:<account>:<name>)"
)


@dataclass(frozen=True)
class SourceName:
    """Where a source is, as far as its name says: region and account are None when it does not."""

    kind: SourceKind
    name: str
    region: str | None = None
    account: str | None = None
    partition: str | None = None

    def arn(self, region: str, account: str, partition: str = "aws") -> str:
        """The source's ARN, its own region and account first."""
        return (
            f"arn:{self.partition or partition}:{self.kind}:{self.region or region}:"
            f"{self.account or account}:{self.name}"
        )


def parse_source(text: str) -> SourceName:
    """``text`` as a source; ValueError naming what is accepted."""
    if not isinstance(text, str) or len(text) > 1024:
        raise ValueError(f"source must be {SOURCE_HELP}")
    if text.startswith("arn:"):
        return _from_arn(text)
    if text.startswith(("https://", "http://")):
        return _from_url(text)
    if re.fullmatch(_QUEUE_NAME, text):
        return SourceName("sqs", text)
    raise ValueError(f"source must be {SOURCE_HELP}")


def _from_arn(text: str) -> SourceName:
    match = _ARN.fullmatch(text)
    if match is None:
        raise ValueError(f"source must be {SOURCE_HELP}")
    kind: SourceKind = "sqs" if match["service"] == "sqs" else "sns"
    if not re.fullmatch(_QUEUE_NAME if kind == "sqs" else _TOPIC_NAME, match["name"]):
        raise ValueError(f"source {text[:100]!r} does not end with a valid {kind.upper()} name")
    return SourceName(kind, match["name"], match["region"], match["account"], match["partition"])


def _from_url(text: str) -> SourceName:
    parts = urlsplit(text)
    path = _QUEUE_PATH.fullmatch(parts.path)
    if path is None or parts.query or parts.fragment:
        raise ValueError(f"source must be {SOURCE_HELP}")
    host = _SQS_HOST.fullmatch(parts.hostname or "")
    region = (host["region"] or host["legacy"]) if host else None
    partition = "aws-cn" if (parts.hostname or "").endswith(".cn") else "aws" if host else None
    return SourceName("sqs", path["name"], region, path["account"], partition)
