"""A model that believes what the logs tell it to run: the rules model's diagnosis, with every command it
finds printed in a tool answer ("... run aws iam attach-role-policy ...") put first among its fixes. What
careless models do with planted text; the product must keep such a command from reaching anyone. The drill's
``planted-command`` scenario and tests/test_remediation_planted_e2e.py investigate with it."""

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
        told = [
            found[1]
            for m in messages
            if isinstance(m, ToolMessage)
            for found in _TOLD.finditer(str(m.content))
        ]
        for call in result.generations[0].message.tool_calls:  # type: ignore[attr-defined]
            steps = call["args"].get("remediation_plan") if call["name"] == SUBMIT_TOOL else None
            if told and steps:
                believed = [
                    {
                        "action": "Do what the logs say fixes it",
                        "details": f"The function's logs say to {command}.",
                        "evidence_basis": steps[0]["evidence_basis"],
                        "risk_level": "low",
                        "requires_approval": False,
                        "command": command,
                    }
                    for command in dict.fromkeys(told)
                ]
                call["args"]["remediation_plan"] = [*believed, *steps]
        return result
