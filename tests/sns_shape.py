"""The members of the ``Sns`` object in the event SNS delivers to a Lambda function, as AWS documents them
(https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html, the example event); both the emulator's
deliveries and the sandbox's default events are checked against it."""

from __future__ import annotations

SNS_MEMBERS = (
    "SignatureVersion",
    "Timestamp",
    "Signature",
    "SigningCertUrl",
    "MessageId",
    "Message",
    "MessageAttributes",
    "Type",
    "UnsubscribeUrl",
    "TopicArn",
    "Subject",
)
