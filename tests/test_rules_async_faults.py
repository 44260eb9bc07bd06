"""The rules brain on asynchronous invocation paths, through the real graph and its verification, on canned
answers valid under the tools' contracts (tests/event_worlds.py): a poison event the code failed on,
discarded by Lambda and sent to the dead-letter queue, while other events succeed (bad_input), and what is
not one.

What AWS counts (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics):
``AsyncEventsDropped`` "the number of events that are dropped without successfully executing the function. If
you configure a dead-letter queue (DLQ) or OnFailure destination, then events are sent there before they're
dropped"; ``DeadLetterErrors`` the events Lambda could not send to the dead-letter queue.
"""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import FUNCTION, diagnose_with
from tests.event_worlds import ASYNC_DLQ, FUNCTION_ARN, event_sources, event_world, queue
from tests.runtime_worlds import DEPLOYMENT, RECORDS, Run, responses

POISON = "node_text_undefined_read"  # TypeError: the code cannot read what the event carries


def async_config(
    *, dropped: float = 0, dead_letter_errors: float = 0, dlq_depth: int | None = 0, retries: int = 0
) -> dict[str, Any]:
    """order-notifier's asynchronous configuration: ``retries``, one hour's maximum age, a dead-letter queue
    (none when ``dlq_depth`` is None) holding ``dlq_depth`` messages, and the window's metrics."""
    destinations = (
        []
        if dlq_depth is None
        else [
            {
                "kind": "dead_letter_queue",
                "Destination": ASYNC_DLQ,
                "queue": queue(ASYNC_DLQ, depth=dlq_depth),
            }
        ]
    )
    return {
        "configured": True,
        "MaximumRetryAttempts": retries,
        "MaximumEventAgeInSeconds": 3600,
        "destinations": destinations,
        "metrics": {
            "AsyncEventsReceived": 3,
            "AsyncEventsDropped": dropped,
            "DeadLetterErrors": dead_letter_errors,
            "DestinationDeliveryFailures": 0,
        },
    }


async def _diagnosis(answers: dict[str, Any]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses(answers), max_tool_calls_per_turn=len(answers))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


def _impact(diagnosis: Diagnosis) -> list[tuple[str, str, float]]:
    return [(f.kind, f.resource, f.value) for f in diagnosis.impact]


SUCCESSES_THEN_POISON = (Run(5), Run(10), Run(15, POISON))


async def test_a_discarded_event_the_code_failed_on_beside_successes_is_bad_input() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=1))
    diagnosis = await _diagnosis(event_world(sources, runs=SUCCESSES_THEN_POISON))
    request = RECORDS[POISON]["request_id"]
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.trigger is None
    assert diagnosis.root_cause == (
        f"{FUNCTION} fails on 1 asynchronous event(s) it cannot read while other events of the same version "
        f'succeed: event {request} failed on each of its 1 attempt(s) with "TypeError: Cannot read '
        "properties of undefined (reading 'split')\" and was discarded; Lambda sent the discarded event(s) "
        f"to {ASYNC_DLQ}. The event, not the function, its configuration or its permissions, is the cause."
    )
    assert [s.command for s in diagnosis.remediation_plan] == [None]
    assert [g.source for g in diagnosis.gaps] == ["remediation"]
    assert ASYNC_DLQ in diagnosis.gaps[0].reason
    assert diagnosis.affected_resources == [FUNCTION, ASYNC_DLQ]
    assert _impact(diagnosis) == [
        ("messages_in_dead_letter_queue", ASYNC_DLQ, 1.0),
        ("events_dropped", FUNCTION_ARN, 1.0),
    ]


async def test_a_failed_event_not_yet_discarded_is_not_bad_input() -> None:
    """Lambda has not given up on it (a retry is scheduled): the code's failure, as far as anything shows."""
    sources = event_sources(async_config=async_config(dropped=0, dlq_depth=0, retries=2))
    diagnosis = await _diagnosis(event_world(sources, runs=SUCCESSES_THEN_POISON))
    assert diagnosis.fault_types == ["code_error"]


async def test_events_that_all_fail_are_not_bad_input() -> None:
    sources = event_sources(async_config=async_config(dropped=2, dlq_depth=2))
    diagnosis = await _diagnosis(event_world(sources, runs=(Run(5, POISON), Run(10, POISON))))
    assert diagnosis.fault_types == ["code_error"]


async def test_successes_only_before_a_deployment_are_not_bad_input() -> None:
    """The code deployed since then has run only the failed event: a deployment's failure, not an event's."""
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=1))
    answers = event_world(sources, [(12, DEPLOYMENT)], runs=SUCCESSES_THEN_POISON)
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["code_error"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "UpdateFunctionCode20150331v2"
