"""``get_incident_history`` over 10,000 stored incidents of one function (90 days, five fault types, three
trigger kinds, every end): the tool's time and answer size, asked with and without a fault type, each
against a plain ``Query`` of the same items (the same index and key, the newest up to the tool's read
bound) measured in the same run; and what reading every item of the window would cost instead. Goal: each
answer within its bound (``MAX_LISTED`` incidents) and its time within 1.25x of its plain Query: the tool
adds no read and little work to the items it must read.

The items are written as the supervisor's store and the executor write them (``headline_of``, the fix's
attributes), in batches. The tool is called in-process as the server calls it, the DynamoDB calls to the
sandbox included. The sandbox's DynamoDB evaluates a query over every item of the table, so its times
grow with the table, unlike DynamoDB's; the ratios are the figure.

    python -m bench.incident_history [--incidents 10000] [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench._sandbox import given_or_own
from bench._timing import median_ms
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.sandbox.world import create_incident_tables
from mcp_server.aws import AwsClients
from mcp_server.contract.history import (
    EXPIRES_AT,
    FIX,
    FUNCTION_INDEX,
    HISTORY_INDEX,
    MAX_LISTED,
    MAX_READ,
    RECOVERED_AT,
    RESOLVED_BY,
    GetIncidentHistoryArgs,
)
from mcp_server.reads import Reads
from mcp_server.settings import ServerSettings
from mcp_server.tools.context import ToolContext
from mcp_server.tools.incident_history import incident_history
from supervisor.incident.outcome import headline_of
from supervisor.incident.signals import stamp
from supervisor.incident.store import INCIDENT_KIND, INDEXES, to_item

GOAL_RATIO = 1.25
FUNCTION = "report-builder"
FAULTS = ("timeout", "memory_exhaustion", "permission_loss", "throttling", "configuration_error")
TRIGGERS = ("UpdateFunctionConfiguration20150331v2", "PutRolePolicy", "")
ENDS = ("REMEDIATED", "REMEDIATED", "NOT_REMEDIATED", "DIAGNOSED", "REJECTED", "NO_PLAN", "FAILED")
FIX_CALL = [{"service": "lambda", "operation": "UpdateFunctionConfiguration", "params": {"Timeout": 30}}]


@dataclass
class Row:
    case: str
    median_ms: float
    ratio: float  # to the row it is compared with
    items: int  # items the call read
    answer_bytes: int | None  # the tool's answer as JSON; None for a plain Query


@dataclass
class Result:
    incidents: int
    rows: list[Row]


def _item(n: int, count: int, now: datetime) -> dict[str, Any]:
    """The ``n``-th incident as the pipeline and the executor leave it, spread over 90 days."""
    observed = now - timedelta(days=90) * (n + 0.5) / count
    faults = [FAULTS[n % len(FAULTS)], FAULTS[(n + 1) % len(FAULTS)]]
    status = ENDS[n % len(ENDS)]
    diagnosis = {
        "fault_types": faults,
        "severity": "high",
        "confidence": 0.9,
        "affected_resources": [FUNCTION, f"{FUNCTION}-role"],
        "trigger": {"event_name": TRIGGERS[n % len(TRIGGERS)]},
    }
    values: dict[str, object] = {
        "incident_id": f"{FUNCTION}@{stamp(observed)}",
        "kind": INCIDENT_KIND,
        "status": status,
        "function_name": FUNCTION,
        "observed_at": stamp(observed),
        "created_at": stamp(observed),
        "updated_at": stamp(observed + timedelta(minutes=5)),
        EXPIRES_AT: int((observed + timedelta(days=365)).timestamp()),
    } | (headline_of(diagnosis, FUNCTION) if status != "FAILED" else {})
    if status in ("REMEDIATED", "NOT_REMEDIATED", "REJECTED"):
        values |= {FIX: json.dumps(FIX_CALL), RESOLVED_BY: "alice@example.com"}
    if status == "REMEDIATED":
        values[RECOVERED_AT] = stamp(observed + timedelta(seconds=40 + n % 80))
    return to_item(values)


def _seed(dynamodb: Any, table: str, count: int, progress: Callable[[str], None]) -> None:
    now = datetime.now(UTC)
    items = [_item(n, count, now) for n in range(count)]
    for start in range(0, count, 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        pending: dict[str, Any] = {table: requests}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        if (start + 25) % 2500 == 0:
            progress(f"{start + 25:,} incidents written")


def run(
    incidents: int = 10_000,
    runs: int = 5,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Result:
    suffix = uuid.uuid4().hex[:8]
    tables = [f"bench-{name}-{suffix}" for name in ("incident-state", "incident-context", "approvals")]
    with given_or_own(sandbox, "bench-history-") as world, ThreadPoolExecutor(max_workers=4) as pool:
        operator = world.session(names.OPERATOR).client("dynamodb")
        create_incident_tables(operator, *tables)
        try:
            _seed(operator, tables[0], incidents, progress)
            settings = ServerSettings(mcp_incident_state_table=tables[0])
            aws = AwsClients.create(settings, world.session(names.MCP_SERVER))
            dynamodb = aws.client("dynamodb")
            since = stamp(datetime.now(UTC) - timedelta(days=90))

            def tool(**arguments: Any) -> Callable[[], Row]:
                args = GetIncidentHistoryArgs.model_validate({"lambda_name": FUNCTION} | arguments)

                def call() -> Row:
                    target = aws.resolver.resolve(args)
                    reads = Reads(pool, settings.mcp_tool_deadline_seconds, target.region)
                    answer = incident_history(ToolContext(aws.for_target(target), reads, settings), args)
                    assert not answer.gaps or answer.incidents_read == MAX_READ, answer.gaps
                    assert len(answer.incidents) <= MAX_LISTED
                    size = len(answer.model_dump_json(exclude_none=True))
                    return Row("", 0, 0, answer.incidents_read, size)

                return call

            def query(index: str, value: str, limit: int | None = MAX_READ) -> Callable[[], Row]:
                partition, sort = INDEXES[index]

                def call() -> Row:
                    pages = dynamodb.get_paginator("query").paginate(
                        TableName=tables[0],
                        IndexName=index,
                        KeyConditionExpression=f"{partition} = :k AND {sort} >= :since",
                        ExpressionAttributeValues={":k": {"S": value}, ":since": {"S": since}},
                        ScanIndexForward=False,
                        PaginationConfig={"MaxItems": limit} if limit else {},
                    )
                    return Row("", 0, 0, sum(len(page["Items"]) for page in pages), None)

                return call

            by_function = query(FUNCTION_INDEX, FUNCTION)
            by_fault = query(HISTORY_INDEX, f"{FUNCTION}#timeout")
            pairs = [  # (case, call, the case it is compared with)
                (f"plain Query: {FUNCTION_INDEX}, the newest {MAX_READ:,}", by_function, None),
                ("tool: no fault type", tool(), 0),
                (f"plain Query: {HISTORY_INDEX}, the newest {MAX_READ:,}", by_fault, None),
                (
                    "tool: fault_type, trigger_event",
                    tool(fault_type="timeout", trigger_event="PutRolePolicy"),
                    2,
                ),
                (
                    "plain Query: every item of the window",
                    query(FUNCTION_INDEX, FUNCTION, None),
                    0,
                ),
            ]
            rows: list[Row] = []
            for case, action, compared in pairs:
                shape = action()  # warm, and what it read
                median = median_ms(action, runs)
                ratio = median / rows[compared].median_ms if compared is not None else 1.0
                rows.append(Row(case, round(median, 1), round(ratio, 2), shape.items, shape.answer_bytes))
            return Result(incidents, rows)
        finally:
            for table in tables:
                operator.delete_table(TableName=table)


def render(result: Result) -> str:
    lines = [
        f"get_incident_history over {result.incidents:,} incidents of one function (90 days):",
        "",
        "| case | median ms | / its plain Query | items read | answer bytes |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {row.case} | {row.median_ms:.1f} | {row.ratio:.2f}x | {row.items:,} | "
            f"{'' if row.answer_bytes is None else f'{row.answer_bytes:,}'} |"
            for row in result.rows
        ),
        "",
    ]
    worst = worst_ratio(result)
    verdict = "meets" if worst <= GOAL_RATIO else "MISSES"
    lines.append(
        f"The tool at most {worst:.2f}x the plain Query of the items it reads, at most {MAX_LISTED} "
        f"incidents listed: {verdict} the goal of <= {GOAL_RATIO:.2f}x."
    )
    return "\n".join(lines)


def worst_ratio(result: Result) -> float:
    return max(row.ratio for row in result.rows if row.case.startswith("tool"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.incident_history", description=__doc__)
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.incidents, args.runs, progress=lambda text: print(text, file=sys.stderr))
    print(json.dumps(asdict(result), indent=2) if args.json else render(result))
    return 0 if worst_ratio(result) <= GOAL_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
