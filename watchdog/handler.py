"""The scheduled Lambda entry point, ``watchdog.handler.handler`` (EventBridge, every 5 minutes)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger

from supervisor.incident.store import IncidentStore, dynamodb_client
from watchdog.settings import WatchdogSettings
from watchdog.sweep import SweepReport, sweep

SERVICE = "incident-watchdog"


class Watchdog:
    def __init__(self, store: IncidentStore, settings: WatchdogSettings, logger: Logger) -> None:
        self.store = store
        self.settings = settings
        self.logger = logger

    def run(self) -> SweepReport:
        return sweep(self.store, self.settings.stale_after_seconds, self.logger)


def build_watchdog(session: boto3.Session | None = None, **overrides: Any) -> Watchdog:
    settings = WatchdogSettings(**overrides)
    dynamodb = dynamodb_client(session or boto3.Session())
    return Watchdog(IncidentStore(dynamodb, settings.incident_state_table), settings, Logger(service=SERVICE))


@cache
def _watchdog() -> Watchdog:
    return build_watchdog()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _watchdog().run().as_dict()
