"""Where injectors keep the prior state: one SSM parameter per function and fault.

``/incident-response/chaos/<function>/<fault>`` holds ``{"fault", "function", "saved_at", "prior"}``
as JSON. It lives in the account, next to what was changed, so a run that crashed (or a colleague on
another machine) can still restore; ``incident-chaos status`` lists what is saved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chaos.faults.calls import AwsCalls
from chaos.faults.errors import ChaosError

MAX_VALUE_BYTES = 8192  # an advanced-tier parameter; Intelligent-Tiering upgrades past 4 KB by itself


@dataclass(frozen=True)
class SavedState:
    fault: str
    function_name: str
    saved_at: str
    prior: dict[str, Any]


class Ledger:
    DEFAULT_PREFIX = "/incident-response/chaos"

    def __init__(self, aws: AwsCalls, prefix: str = DEFAULT_PREFIX) -> None:
        self._aws = aws
        self.prefix = prefix.rstrip("/")

    def name(self, function_name: str, fault: str) -> str:
        return f"{self.prefix}/{function_name}/{fault}"

    def load(self, function_name: str, fault: str) -> SavedState | None:
        try:
            response = self._aws.read("ssm", "get_parameter", Name=self.name(function_name, fault))
        except ChaosError as error:
            if "ParameterNotFound" in str(error):
                return None
            raise
        return _parsed(response["Parameter"]["Value"])

    def all(self, function_name: str) -> list[SavedState]:
        saved: list[SavedState] = []
        params: dict[str, str] = {"Path": f"{self.prefix}/{function_name}"}
        while True:
            page = self._aws.read("ssm", "get_parameters_by_path", **params)
            saved += [_parsed(p["Value"]) for p in page["Parameters"]]
            if "NextToken" not in page:
                return saved
            params["NextToken"] = page["NextToken"]

    def save(self, function_name: str, fault: str, prior: dict[str, Any]) -> SavedState:
        saved = SavedState(fault, function_name, datetime.now(UTC).isoformat(timespec="seconds"), prior)
        value = json.dumps(
            {"fault": fault, "function": function_name, "saved_at": saved.saved_at, "prior": prior},
            sort_keys=True,
        )
        if len(value.encode()) > MAX_VALUE_BYTES:
            raise ChaosError(
                f"the prior state of {fault} on {function_name} is {len(value.encode())} bytes, more than an "
                f"SSM parameter holds ({MAX_VALUE_BYTES}); nothing was changed"
            )
        created = self._aws.call(
            "ssm",
            "put_parameter",
            tolerate=("ParameterAlreadyExists",),
            Name=self.name(function_name, fault),
            Value=value,
            Type="String",
            Tier="Intelligent-Tiering",
            Overwrite=False,
            Description=f"incident-chaos: state of {function_name} before {fault}; removed by restore",
        )
        if created is None and not self._aws.dry_run:  # another run saved first: its state is the prior
            return self.load(function_name, fault) or saved
        return saved

    def delete(self, function_name: str, fault: str) -> None:
        self._aws.call(
            "ssm", "delete_parameter", Name=self.name(function_name, fault), tolerate=("ParameterNotFound",)
        )


def _parsed(value: str) -> SavedState:
    data = json.loads(value)
    return SavedState(data["fault"], data["function"], data["saved_at"], data["prior"])
