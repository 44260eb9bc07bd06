"""The AWS actions the console needs: read the two incident tables and the status index, nothing else
(no Scan, no writes). The deploy template's console role and the tests read this one list."""

from __future__ import annotations

TABLE_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:Query")
