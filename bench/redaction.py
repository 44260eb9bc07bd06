"""What redaction costs: every string of a logs answer holding 100,000 events scanned and, where a secret is
found, replaced, against serialising the same answer to JSON (which every answer goes through anyway),
measured in the same run.

    .venv/bin/python -m bench.redaction [--events 100000] [--runs 3]

The events are Lambda's text-format lines (START, application lines, END, REPORT) with a request id, a
timestamp and an S3 key each; one line in 1,000 carries an e-mail address, a card number or a bearer token.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from collections import Counter

from bench._timing import median_ms
from mcp_server.contract.logs import LogsResponse
from mcp_server.redaction import redact_answer

_PLACEHOLDER = re.compile(r"\[REDACTED:(\w+)\]")
_SECRETS = (
    "customer bob.smith@example.com asked for a refund",
    "charged card 4111 1111 1111 1111",
    "calling the API with Bearer abcdefghijklmnop1234",
)


def _lines(count: int) -> list[str]:
    lines: list[str] = []
    while len(lines) < count:
        request = str(uuid.UUID(int=len(lines)))
        batch = len(lines) // 4
        lines += [
            f"START RequestId: {request} Version: $LATEST\n",
            f"[INFO]\t2026-11-25T20:39:23.720Z\t{request}\tprocessing s3://data-processor-input/incoming/"
            f"orders-{batch:06d}.json\n",
            f"END RequestId: {request}\n",
            f"REPORT RequestId: {request}\tDuration: 45.19 ms\tBilled Duration: 46 ms\tMemory Size: 256 MB\t"
            "Max Memory Used: 50 MB\n",
        ]
        if batch % 250 == 0:  # one line in 1,000
            lines.append(f"[INFO]\t2026-11-25T20:39:23.721Z\t{request}\t{_SECRETS[batch % 3]}\n")
    return lines[:count]


def answer_of(count: int) -> LogsResponse:
    at = "2026-11-25T20:39:23.720000+00:00"
    events = [{"timestamp": at, "message": line, "kind": "function"} for line in _lines(count)]
    return LogsResponse.model_validate(
        {"log_group": "/aws/lambda/data-processor", "events": events, "matched_events": count}
    )


def run(events: int, runs: int) -> tuple[float, float, Counter[str]]:
    """Median ms of serialising the answer and of redacting it, and what was redacted."""
    answer = answer_of(events)
    serialise = median_ms(answer.model_dump_json, runs)
    redact = median_ms(lambda: redact_answer(answer), runs)
    redacted = redact_answer(answer)
    counts = Counter(
        event.message.split("[REDACTED:")[1].split("]")[0]
        for event in redacted.events
        if "[REDACTED:" in event.message
    )
    return serialise, redact, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--events", type=int, default=100_000, help="log events in the answer (default 100000)"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    args = parser.parse_args(argv)
    if not 1 <= args.events <= 1_000_000 or not 1 <= args.runs <= 50:
        parser.error("--events must be 1-1000000 and --runs 1-50")
    serialise, redact, counts = run(args.events, args.runs)
    print("| case | median |\n| --- | ---: |")
    print(f"| serialise the answer to JSON (baseline) | {serialise:.0f} ms |")
    print(f"| redact every string of the answer | {redact:.0f} ms ({redact / serialise:.1f}x) |")
    print()
    found = ", ".join(f"{counts[kind]} {kind}" for kind in sorted(counts))
    print(f"{args.events} events, {redact * 1000 / args.events:.1f} µs each; replaced: {found or 'nothing'}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
