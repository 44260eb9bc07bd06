"""What the injector tests share: a recorder of the AWS actions a session takes."""

from __future__ import annotations

import boto3

from chaos.aws_actions import on_each_action

READS = ("Get", "List", "Describe", "Head", "Scan")


class Recorder:
    """Every AWS action a session's clients take, in order."""

    def __init__(self, session: boto3.Session) -> None:
        self.actions: list[str] = []
        on_each_action(session, self.actions.append)

    @property
    def changes(self) -> list[str]:
        return [action for action in self.actions if not action.split(":", 1)[1].startswith(READS)]
