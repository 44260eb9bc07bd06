"""What redaction costs: every string of a logs answer holding 100,000 events scanned and, where a secret is
found, replaced, against serialising the same answer to JSON (which every answer goes through anyway),
measured in the same run; and one page as the logs tool answers it (100 events), against its goal of 2 ms.

    .venv/bin/python -m bench.redaction [--events 100000] [--runs 3]

The events are Lambda's text-format lines (START, application lines, END, REPORT) with a request id (a
random UUID, as Lambda's are), a timestamp and an S3 key each; one line in 1,000 carries an e-mail address, a
card number or a bearer token.
The page holds the same lines, half of them as JSON-format records, with a secret every ten events and one
line that prints a function's whole environment (its temporary credentials with it).
"""

from __future__ import annotations

import argparse
import json
import random
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


def _request_id(seed: int) -> str:
    """A request id as Lambda writes them: a random (version 4) UUID, the same for the same seed."""
    return str(uuid.UUID(int=random.Random(seed).getrandbits(128), version=4))


def _lines(count: int) -> list[str]:
    lines: list[str] = []
    while len(lines) < count:
        request = _request_id(len(lines))
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


PAGE_EVENTS = 100  # the logs tool's default limit
PAGE_GOAL_MS = 2.0
_ENVIRONMENT = (
    "environment: {'AWS_REGION': 'ca-central-1', 'AWS_ACCESS_KEY_ID': 'ASIAY34FZKBOKMUTVV7A', "
    "'AWS_SECRET_ACCESS_KEY': 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'AWS_SESSION_TOKEN': "
    "'IQoJb3JpZ2luX2VjEHYaCXVzLWVhc3QtMSJHMEUCIQDx8Y2kQ0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH', "
    "'AWS_LAMBDA_FUNCTION_NAME': 'data-processor', 'INPUT_BUCKET': 'data-processor-input'}"
)


def page_of(count: int = PAGE_EVENTS) -> LogsResponse:
    """A page of the logs tool: text lines and JSON-format records in turn, a secret every ten events."""
    at = "2026-11-25T20:39:23.720000+00:00"
    lines = _lines(count)
    messages = []
    for n, line in enumerate(lines):
        if n % 10 == 5:
            line = f"{line.rstrip()} {_SECRETS[n // 10 % 3]}"
        if n == count // 2:
            line = _ENVIRONMENT
        if n % 2:
            line = json.dumps(
                {"timestamp": at, "level": "INFO", "requestId": _request_id(n), "message": line}
            )
        messages.append(line)
    events = [{"timestamp": at, "message": message, "kind": "function"} for message in messages]
    return LogsResponse.model_validate(
        {"log_group": "/aws/lambda/data-processor", "events": events, "matched_events": count}
    )


def page_ms(runs: int = 200) -> float:
    """Median ms of redacting one page of :func:`page_of`."""
    page = page_of()
    return median_ms(lambda: redact_answer(page), runs)


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
    page = page_ms()
    print("| case | median |\n| --- | ---: |")
    print(f"| serialise the answer to JSON (baseline) | {serialise:.0f} ms |")
    print(f"| redact every string of the answer | {redact:.0f} ms ({redact / serialise:.1f}x) |")
    print(f"| redact one page of {PAGE_EVENTS} events, half of them JSON records | {page:.2f} ms |")
    print()
    found = ", ".join(f"{counts[kind]} {kind}" for kind in sorted(counts))
    print(f"{args.events} events, {redact * 1000 / args.events:.1f} µs each; replaced: {found or 'nothing'}.")
    verdict = "met" if page < PAGE_GOAL_MS else "NOT met"
    print(f"one page: {page:.2f} ms against the goal of < {PAGE_GOAL_MS:g} ms: {verdict}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
