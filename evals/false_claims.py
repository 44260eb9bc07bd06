"""False verified claims: what a stored diagnosis still says (its ``refused`` claims aside) that is false by
the stage's own measure. The supervisor's verification took out every claim it could refute; what is
counted here got past it.

A claim counts once (by where it is in the diagnosis) when the drill's independent judge does not re-find
a pointer (``evidence.<n>``) or finds a claim ungrounded (a fault type, the trigger, a step or its command,
a timeline entry, ...), and when the diagnosis names a fault the case did not inject (``unknown`` aside:
it claims nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from chaos.drill.checks import Incident
from chaos.drill.grounding import Grounding

UNKNOWN: Final = "unknown"
_FAULT: Final = re.compile(r"fault (\w+)")


def _claim(problem: str) -> str:
    """Where the judge's ungrounded claim is: the text before its reason (``trigger``,
    ``remediation_plan.0.command``), a fault as ``fault_types.<fault>``."""
    where = problem.split(": ", 1)[0].strip()
    fault = _FAULT.fullmatch(where)
    return f"fault_types.{fault[1]}" if fault else where


def ungrounded_claims(grounding: Grounding) -> set[str]:
    """The claims the judge found ungrounded, and the pointers it did not re-find."""
    claims = {f"evidence.{finding.index}" for finding in grounding.findings if not finding.found}
    return claims | {_claim(problem) for problem in grounding.ungrounded}


def false_claims(incident: Incident, expected: Iterable[str]) -> set[str]:
    """The claims of ``incident``'s stored diagnosis that are false: ungrounded by the judge, or a fault the
    case did not inject. None without a diagnosis."""
    if incident.status != "DIAGNOSED" or not incident.diagnosis:
        return set()
    claims = ungrounded_claims(incident.grounding) if incident.grounding is not None else set()
    injected = set(expected)
    claims |= {f"fault_types.{f}" for f in incident.fault_types if f != UNKNOWN and f not in injected}
    return claims
