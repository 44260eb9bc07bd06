"""incident-console's list page over an incident-state table of 1,000 incidents: the server time of the
first page (all statuses, newest first), of one status's and of one function's last day, against one
plain ``Query`` of a page of an index measured in the same run. Goal: the list page under 300 ms. Each
page is one range query on an index; the sandbox's DynamoDB evaluates a query over every item of the
index's partition, so the baseline grows with the table there, unlike on DynamoDB.

The page is served in-process (Starlette's TestClient, no network): its time is the console's own work,
the DynamoDB calls to the sandbox included.

    python -m bench.console_list [--incidents 1000] [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from starlette.testclient import TestClient

from bench._sandbox import given_or_own
from bench._timing import median_ms
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.sandbox.world import create_incident_tables
from console.app import create_app
from console.settings import ConsoleSettings
from supervisor.incident.signals import Signal
from supervisor.incident.store import STATUS_INDEX, IncidentStore, dynamodb_client

GOAL_MS = 300.0
FUNCTIONS = 10
_STATUSES = ("DIAGNOSED", "DIAGNOSED", "DIAGNOSED", "FAILED", "ERROR")
HEADLINE: dict[str, object] = {"fault_types": ["permission_loss"], "severity": "high", "confidence": 0.9}


@dataclass
class Row:
    case: str
    median_ms: float
    ratio: float


@dataclass
class Result:
    incidents: int
    page_size: int
    rows: list[Row]


def _fixed(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def _seed(store: IncidentStore, count: int, progress: Callable[[str], None]) -> None:
    """``count`` incidents written as the pipeline writes them (claim, transitions), a minute apart;
    the diagnosed ones with their diagnosis' headline."""
    start = datetime.now(UTC) - timedelta(minutes=count)
    for n in range(count):
        at = start + timedelta(minutes=n)
        writer = IncidentStore(store.dynamodb, store.state_table, store.context_table, clock=_fixed(at))
        signal = Signal(str(uuid.uuid4()), "direct", f"fn-{n % FUNCTIONS}", "Errors", "bench", at)
        item, _ = writer.claim(signal, window_seconds=0)
        incident_id = str(item["incident_id"])
        status = _STATUSES[n % len(_STATUSES)]
        writer.transition(incident_id, "RECEIVED", "INVESTIGATING")
        headline = HEADLINE if status == "DIAGNOSED" else None
        writer.transition(incident_id, "INVESTIGATING", status, headline=headline)
        if n % 250 == 249:
            progress(f"{n + 1} incidents written")


def _median_ms(action: Callable[[], object], runs: int) -> float:
    action()  # warm: connections, templates
    return median_ms(action, runs)


def run(
    incidents: int = 1000,
    runs: int = 15,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Result:
    suffix = uuid.uuid4().hex[:8]
    state, context = f"bench-incident-state-{suffix}", f"bench-incident-context-{suffix}"
    approvals = f"bench-incident-approvals-{suffix}"
    with given_or_own(sandbox, "bench-console-") as world:
        operator = world.session(names.OPERATOR).client("dynamodb")
        create_incident_tables(operator, state, context, approvals)
        try:
            session = world.session(names.SUPERVISOR)
            dynamodb = dynamodb_client(session)
            _seed(IncidentStore(dynamodb, state, context), incidents, progress)
            settings = ConsoleSettings(state_table=state, context_table=context, api_key=None)
            client = TestClient(create_app(settings, session), base_url="http://127.0.0.1:8088")

            def page(url: str) -> Callable[[], object]:
                def load() -> object:
                    response = client.get(url)
                    assert response.status_code == 200, response.text
                    return response

                return load

            def query() -> object:
                return dynamodb.query(
                    TableName=state,
                    IndexName=STATUS_INDEX,
                    KeyConditionExpression="#s = :s",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={":s": {"S": "DIAGNOSED"}},
                    ScanIndexForward=False,
                    Limit=settings.page_size,
                )

            baseline = _median_ms(query, runs)
            cases = [
                ("one Query of a page of the status index (baseline)", query),
                ("list page: all statuses, newest first", page("/incidents")),
                ("list page: DIAGNOSED", page("/incidents?status=DIAGNOSED")),
                ("list page: one function, last 24 h", page("/incidents?function=fn-3&since=24h")),
            ]
            rows = []
            for case, action in cases:
                median = baseline if action is query else _median_ms(action, runs)
                rows.append(Row(case, round(median, 1), round(median / baseline, 1)))
            return Result(incidents, settings.page_size, rows)
        finally:
            for table in (state, context, approvals):
                operator.delete_table(TableName=table)


def render(result: Result) -> str:
    lines = [
        f"incident-console list page over {result.incidents:,} incidents ({result.page_size} per page):",
        "",
        "| case | median ms | / baseline |",
        "| --- | --- | --- |",
        *(f"| {row.case} | {row.median_ms:.1f} | {row.ratio:.1f}x |" for row in result.rows),
        "",
    ]
    default = list_page_ms(result)
    verdict = "meets" if default < GOAL_MS else "MISSES"
    lines.append(f"The list page in {default:.1f} ms: {verdict} the goal of < {GOAL_MS:.0f} ms server time.")
    return "\n".join(lines)


def list_page_ms(result: Result) -> float:
    """The goal's figure: the default list page (all statuses, newest first)."""
    return next(row.median_ms for row in result.rows if row.case.startswith("list page: all"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.console_list", description=__doc__)
    parser.add_argument("--incidents", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.incidents, args.runs, progress=lambda text: print(text, file=sys.stderr))
    print(json.dumps(asdict(result), indent=2) if args.json else render(result))
    return 0 if list_page_ms(result) < GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
