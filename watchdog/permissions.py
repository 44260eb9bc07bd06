"""The AWS actions the watchdog needs: find stale incidents on the status index and fail them, notify the
incidents it fails (and retry unsent notifications) on the diagnoses topic, and send again a re-check of a
provisional diagnosis that never ran."""

from __future__ import annotations

# GetItem: when a transition loses a race, the store reads what won, to report it. UpdateItem also
# claims and records a notification.
TABLE_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem")
# incident-context: the stored diagnosis of a DIAGNOSED incident whose notification it sends, and the
# stored outcome of a stale investigation, which it finishes rather than fails.
CONTEXT_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem",)
TOPIC_ACTIONS: tuple[str, ...] = ("sns:Publish",)  # the diagnoses topic only
QUEUE_ACTIONS: tuple[str, ...] = ("sqs:SendMessage",)  # the re-check and the executor's queues only
