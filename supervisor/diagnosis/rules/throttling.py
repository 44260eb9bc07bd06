"""Throttling: requests refused for lack of concurrency, with the limit that explains them."""

from __future__ import annotations

import math

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import first_failure, last_failure
from supervisor.diagnosis.rules.findings import Finding, Pointer, Rejection, Remedy, Verdict

_METRICS = "get_function_metrics"


def check(c: Conversation) -> Verdict:
    metrics, config = c.metrics, c.config
    throttles = metrics.get("throttles")
    if throttles is None:
        return None
    reserved = config.get("ReservedConcurrentExecutions") if config else None
    if not throttles:
        pointers = [Pointer(_METRICS, "throttles", throttles, "No request was throttled in the window", None)]
        return Rejection("throttling", "The metrics show no throttled request in the window", pointers)
    pointers = _pointers(c, throttles, reserved)
    limit, remedy = _limit_and_remedy(c, reserved)
    return Finding(
        "throttling",
        f"{c.name} is throttled: {throttles:g} requests were refused by {limit}.",
        "critical" if reserved == 0 else "high",
        pointers,
        remedy,
        relevant_change=lambda e: e.operation == "PutFunctionConcurrency",  # a limit set, not lifted
        first_failure=first_failure(c, throttles=True),
        last_failure=last_failure(c, throttles=True),
    )


def _pointers(c: Conversation, throttles: float, reserved: int | None) -> list[Pointer]:
    """The throttles, the reserved concurrency (when the configuration was read) and the busiest throttled
    minute; each cited as support only where its value shows the limit that refused the requests."""
    pointers = [
        Pointer(_METRICS, "throttles", throttles, f"{throttles:g} requests were throttled", "throttling")
    ]
    peaks = [
        (i, m)
        for i, m in enumerate(c.metrics.get("minutes", []))
        if m.get("concurrent_executions_max") is not None
    ]
    throttled = [(i, m) for i, m in peaks if m.get("throttles")]
    busiest = max(throttled or peaks, key=lambda pair: pair[1]["concurrent_executions_max"], default=None)
    peak = busiest[1]["concurrent_executions_max"] if busiest is not None else None
    if c.config:
        # Reserved concurrency both caps the function and guarantees it that much of the account's pool:
        # a function with a reservation is throttled only beyond it; one without draws on the shared pool.
        reached = reserved in (0, None) or (peak is not None and peak >= reserved)  # None: the account's pool
        pointers.append(
            Pointer(
                "get_lambda_config",
                "ReservedConcurrentExecutions",
                reserved,
                f"Reserved concurrency {reserved}: at most {reserved} invocations run at once"
                if reserved is not None
                else "No reserved concurrency: the function shares the account's concurrency pool",
                "throttling" if reached else None,
            )
        )
    if busiest is not None and peak is not None:
        index, _ = busiest
        at_limit = reserved is not None and peak >= reserved
        pointers.append(
            Pointer(
                _METRICS,
                f"minutes.{index}.concurrent_executions_max",
                peak,
                f"Concurrency reached {peak:g}"
                + (f", the reserved limit of {reserved}" if at_limit else "")
                + (" in a minute with throttles" if throttled else ""),
                "throttling" if throttled and peak else None,
            )
        )
    return pointers


def _limit_and_remedy(c: Conversation, reserved: int | None) -> tuple[str, Remedy]:
    """The limit that refused the requests, and how to lift it for the demand the metrics show."""
    name = c.name
    demand = max(
        (m.get("concurrent_executions_max") or 0) + (m.get("throttles") or 0)
        for m in c.metrics.get("minutes", [])
    )
    if reserved is None:
        return "the account's concurrency limit (the function has no reserved concurrency)", Remedy(
            "Raise the account's concurrency or reserve concurrency for the function",
            f"Request a higher concurrency quota, or reserve concurrency for {name} (peak demand seen: about "
            f"{demand:g} concurrent requests per minute).",
        )
    if reserved == 0:
        return "reserved concurrency 0, so every invocation is refused", Remedy(
            f"Remove the reserved concurrency of 0 on {name}",
            "Delete the function's reserved concurrency so it draws on the account's pool again.",
            command(c, "lambda", "DeleteFunctionConcurrency", {"FunctionName": name}),
            "low",
        )
    wanted = max(reserved + 1, math.ceil(demand * 1.2))
    return f"reserved concurrency {reserved}, below the demand", Remedy(
        f"Raise the reserved concurrency of {name} to {wanted}",
        f"Concurrency and throttles together peaked at {demand:g} in a minute; reserve {wanted} (20% "
        "above that), or delete the reservation if the limit is not needed.",
        command(
            c,
            "lambda",
            "PutFunctionConcurrency",
            {"FunctionName": name, "ReservedConcurrentExecutions": wanted},
        ),
        "low",
    )
