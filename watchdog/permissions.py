"""The AWS actions the watchdog needs: find stale incidents on the status index and fail them."""

from __future__ import annotations

# GetItem: when a transition loses a race, the store reads what won, to report it.
TABLE_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem")
