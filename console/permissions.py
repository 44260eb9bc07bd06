"""The AWS actions the console needs: read the two incident tables and the status index (no Scan), and its
one write, a person's decision on a plan: the approvals table's item (read back when refused) and a
request on the executor's queue. The deploy template's console role and the tests read these lists."""

from __future__ import annotations

TABLE_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:Query")
DECISION_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:PutItem")  # on incident-approvals only
QUEUE_ACTIONS: tuple[str, ...] = ("sqs:SendMessage",)  # on the executor's queue only
