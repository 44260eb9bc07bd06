"""Orders for order-worker in a staged situation: sent to orders-queue and taken by Lambda's SQS poller
(the sandbox's), each round of polling one phase of the stage's traffic."""

from __future__ import annotations

import time
from typing import Any

from chaos.drill import event_traffic
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.sqs_poller import SqsPoller
from tests.fault_scenarios import Undo
from tests.timeline_scenarios import Stage

DRAIN_SECONDS = 30.0


class WorkerOrders:
    """``order_id``'s orders; the item they write and whatever they leave queued are removed by ``undo``."""

    def __init__(
        self, sandbox: Sandbox, runtime: LocalLambdaRuntime, stage: Stage, order_id: str, undo: Undo
    ):
        self.stage, self.order_id = stage, order_id
        self.sqs = stage.operator.client("sqs")
        self.url = self.sqs.get_queue_url(QueueName=names.ORDERS_QUEUE)["QueueUrl"]
        table = stage.operator.client("dynamodb")
        undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": order_id}}))
        undo(lambda: event_traffic.empty(stage.operator))
        self.poller = SqsPoller(runtime, sandbox.session(names.LAMBDA_SERVICE))

    def poll(self) -> list[str | None]:
        """One pass of the poller: the result of each batch it gave order-worker."""
        mapped = f":function:{names.ORDER_WORKER_FUNCTION}"
        return [o.result for o in self.poller.poll_once() if o.function_arn.endswith(mapped)]

    def send(self, count: int) -> None:
        for _ in range(count):
            self.sqs.send_message(QueueUrl=self.url, MessageBody=names.order_message(order_id=self.order_id))

    def phase(self, phase: str, count: int) -> list[str | None]:
        """``count`` orders sent, then one pass of the poller as a phase of traffic: its batches' results."""
        self.send(count)
        results: list[str | None] = []

        def polled() -> list[Any]:
            results.extend(self.poll())
            return []  # the poller's invocations are the runtime's; what matters is each batch's result

        self.stage.traffic(phase, polled)
        return results

    def drains(self) -> str | None:
        """None once a new order is processed and orders-queue empties (the waiting orders with it)."""
        self.send(1)
        deadline = time.monotonic() + DRAIN_SECONDS
        while (left := event_traffic.waiting(self.stage.operator)) and time.monotonic() < deadline:
            self.poll()
            time.sleep(0.2)
        return None if left == 0 else f"{left} message(s) left in orders-queue"
