"""A model that believes what the logs tell it to run: the rules model's diagnosis, with the first command
it finds printed in a tool answer ("... run aws iam attach-role-policy ...") added as its first fix. What
careless models do with planted text; the product must keep such a command from reaching anyone."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult

from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.diagnosis.rules.model import RulesChatModel

_TOLD = re.compile(r"\brun (aws [a-z0-9-]+ [a-z0-9-]+(?: --[a-z-]+ [^\s\"\\]+)+)")


class GullibleChatModel(RulesChatModel):
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        told = next(
            (
                found[1]
                for m in messages
                if isinstance(m, ToolMessage)
                if (found := _TOLD.search(str(m.content)))
            ),
            None,
        )
        for call in result.generations[0].message.tool_calls:  # type: ignore[attr-defined]
            steps = call["args"].get("remediation_plan") if call["name"] == SUBMIT_TOOL else None
            if told and steps:
                believed = {
                    "action": "Do what the logs say fixes it",
                    "details": f"The function's logs say to {told}.",
                    "evidence_basis": steps[0]["evidence_basis"],
                    "risk_level": "low",
                    "requires_approval": False,
                    "command": told,
                }
                call["args"]["remediation_plan"] = [believed, *steps]
        return result
