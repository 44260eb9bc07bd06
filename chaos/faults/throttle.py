"""``throttle``: set the function's reserved concurrency (0 throttles everything, 1 throttles any overlap);
restore puts back the previous value, including "none"."""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    response = chaos.read("lambda", "get_function_concurrency", FunctionName=target.function_name)
    return {"function": target.function_name, "reserved": response.get("ReservedConcurrentExecutions")}


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any], *, concurrency: int = 0) -> None:
    chaos.call(
        "lambda",
        "put_function_concurrency",
        FunctionName=prior["function"],
        ReservedConcurrentExecutions=concurrency,
    )


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    if prior["reserved"] is None:
        chaos.call("lambda", "delete_function_concurrency", FunctionName=prior["function"])
    else:
        chaos.call(
            "lambda",
            "put_function_concurrency",
            FunctionName=prior["function"],
            ReservedConcurrentExecutions=prior["reserved"],
        )


THROTTLE = Fault("throttle", "reserved concurrency lowered", _capture, _apply, _revert)
