"""The drill's responder waits for alarms to reach SNS, not for investigations to be quick: an incident
whose alarm arrived while another was being investigated is still collected, however slow that was."""

from __future__ import annotations

import threading
from typing import Any, cast

from chaos.drill.checks import DiagnosisStage, Incident
from chaos.drill.responder import Orchestrator, RecheckQueue, Responder
from chaos.drill.scenarios import SCENARIOS
from chaos.drill.settings import DrillSettings

SLOW_INVESTIGATION = 2.0
WAIT = 0.5  # far shorter than the first investigation


class _SlowOrchestrator:
    """Handles its first alarm slowly on purpose; the second alarm reaches SNS during that investigation."""

    def __init__(self) -> None:
        self.settings = DrillSettings()
        self.mcp_url = "http://127.0.0.1:9"
        self.log = None
        self.progress = self
        self.investigating = threading.Event()

    def step(self, _: str) -> None:
        pass

    def pipeline(self, _: dict[str, Any]) -> object:
        return object()

    delivery_bound = 1

    def handle(self, _: object, event: dict[str, Any]) -> tuple[list[Incident], dict[str, Any]]:
        if event["name"] == "first":
            self.investigating.set()
            threading.Event().wait(SLOW_INVESTIGATION)
        final = event.get("final", True)
        return [Incident(event["name"], "f", "DIAGNOSED", stage=DiagnosisStage(final))], {}


def _nothing() -> None:
    """An alarm pass that raises nothing."""


def test_an_alarm_that_arrives_during_a_slow_investigation_is_collected() -> None:
    orchestrator = _SlowOrchestrator()
    # The first drain finds the first alarm; the second alarm is queued by the time of the next drain,
    # which comes only after the slow investigation of the first.
    queued = [[{"name": "second"}], [{"name": "first"}]]
    responder = Responder(
        cast(Orchestrator, orchestrator), SCENARIOS[0], lambda: queued.pop() if queued else [], _nothing
    )
    responder.start()
    assert [i.incident_id for i in responder.collect(2, WAIT)] == ["first", "second"]
    assert orchestrator.investigating.is_set()


def test_with_no_alarm_expected_the_wait_is_short_and_nothing_is_collected() -> None:
    responder = Responder(cast(Orchestrator, _SlowOrchestrator()), SCENARIOS[0], list, _nothing)
    responder.start()
    assert responder.collect(0, 60.0) == []


def test_an_alarm_raised_after_the_expected_incidents_is_still_collected() -> None:
    """Once the expected incident is in, every alarm is judged once more: one that the emulator's own pass
    had not raised yet (a healthy neighbour throttled late in the traffic) is handled and counted."""
    queued: list[dict[str, Any]] = [{"name": "expected"}]

    def drain() -> list[dict[str, Any]]:
        events = list(queued)
        queued.clear()
        return events

    responder = Responder(
        cast(Orchestrator, _SlowOrchestrator()), SCENARIOS[0], drain, lambda: queued.append({"name": "late"})
    )
    responder.start()
    assert [i.incident_id for i in responder.collect(1, 60.0)] == ["expected", "late"]


class _Rechecks:
    """The re-check queue: empty until the test releases the re-check (its delay has passed)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.settled: list[Any] = []

    def take(self) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        if not self.released.is_set():
            return None
        self.released.clear()
        return {"name": "provisional", "final": True}, [{"MessageId": "m"}]

    def settle(self, messages: list[dict[str, Any]], response: Any) -> None:
        self.settled.append((messages, response))


def test_a_provisional_incident_is_collected_once_its_re_check_made_it_final() -> None:
    # The alarm's investigation leaves the incident provisional; collect waits (beyond its own budget) for
    # the re-check, which replaces it with the final incident and settles the message.
    queued: list[dict[str, Any]] = [{"name": "provisional", "final": False}]
    rechecks = _Rechecks()
    responder = Responder(
        cast(Orchestrator, _SlowOrchestrator()),
        SCENARIOS[0],
        lambda: [queued.pop()] if queued else [],
        _nothing,
        cast(RecheckQueue, rechecks),
    )
    responder.start()
    timer = threading.Timer(WAIT * 2, rechecks.released.set)  # after collect's own wait
    timer.start()
    (incident,) = responder.collect(1, WAIT)
    timer.join()
    assert (incident.incident_id, incident.stage.final) == ("provisional", True)
    assert rechecks.settled == [([{"MessageId": "m"}], {})]
