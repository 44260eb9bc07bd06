"""An incident's lifecycle, declared once: every status, the moves between them, and which are ends.

    RECEIVED -> INVESTIGATING -> DIAGNOSED | FAILED | ERROR
    RECEIVED -> FAILED | ERROR                  (circuit breaker, watchdog, a fault before the agent)
    INVESTIGATING -> INVESTIGATING              (a stale or released investigation re-entered)
    DIAGNOSED, final false -> final true        (a provisional diagnosis: supervisor.incident.stage)

A final diagnosis may go on to be remediated (``supervisor.remediation``, ``executor``):

    DIAGNOSED -> PLANNING -> AWAITING_APPROVAL -> APPLYING -> VERIFYING -> REMEDIATED
    PLANNING -> NO_PLAN                         (no step the Critic passes: the gap goes to people)
    AWAITING_APPROVAL -> REJECTED | EXPIRED
    AWAITING_APPROVAL -> NOT_REMEDIATED         (the stored plan changed after it was made: nothing applied)
    APPLYING -> NOT_REMEDIATED | UNDO_FAILED    (a step refused, or the world moved: the applied ones undone)
    VERIFYING -> NOT_REMEDIATED | UNDO_FAILED   (no recovery within the window: undone, or not all of it)

Every move is a conditional write (``IncidentStore.transition``). An incident AWAITING_APPROVAL carries
the digest of its plan and the time its approval lapses (``PLAN_DIGEST``, ``APPROVAL_DEADLINE``); its
incident-context item the plan, its review, and what the executor's runs did (``PLAN``, ``PLAN_REVIEW``,
``EXECUTION``, JSON each).
"""

from __future__ import annotations

from typing import Final, Literal

Status = Literal[
    "RECEIVED",
    "INVESTIGATING",
    "DIAGNOSED",
    "FAILED",
    "ERROR",
    "PLANNING",
    "AWAITING_APPROVAL",
    "APPLYING",
    "VERIFYING",
    "REMEDIATED",
    "NO_PLAN",
    "REJECTED",
    "EXPIRED",
    "NOT_REMEDIATED",
    "UNDO_FAILED",
]
INVESTIGATION_STATUSES: Final[tuple[Status, ...]] = (
    "RECEIVED",
    "INVESTIGATING",
    "DIAGNOSED",
    "FAILED",
    "ERROR",
)
REMEDIATION_STATUSES: Final[tuple[Status, ...]] = (
    "PLANNING",
    "AWAITING_APPROVAL",
    "APPLYING",
    "VERIFYING",
    "REMEDIATED",
    "NO_PLAN",
    "REJECTED",
    "EXPIRED",
    "NOT_REMEDIATED",
    "UNDO_FAILED",
)
STATUSES: Final[tuple[Status, ...]] = INVESTIGATION_STATUSES + REMEDIATION_STATUSES
TERMINAL: Final[frozenset[str]] = frozenset({"DIAGNOSED", "FAILED", "ERROR"})  # the investigation's ends
REMEDIATION_ENDS: Final[frozenset[Status]] = frozenset(
    {"REMEDIATED", "NO_PLAN", "REJECTED", "EXPIRED", "NOT_REMEDIATED", "UNDO_FAILED"}
)
# The remediation statuses people are told of, each once (supervisor.incident.notify): a plan that awaits
# them, and every end.
NOTICED: Final[frozenset[Status]] = REMEDIATION_ENDS | {"AWAITING_APPROVAL"}
# Something is under way and moves on by itself soon (a person's approval is not: it may take an hour).
IN_FLIGHT: Final[frozenset[str]] = frozenset(
    {"RECEIVED", "INVESTIGATING", "PLANNING", "APPLYING", "VERIFYING"}
)
INVESTIGATED: Final[frozenset[str]] = TERMINAL | frozenset(REMEDIATION_STATUSES)  # no longer investigated
TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "RECEIVED": frozenset({"INVESTIGATING", "FAILED", "ERROR"}),
    "INVESTIGATING": frozenset({"INVESTIGATING", "DIAGNOSED", "FAILED", "ERROR"}),
    "DIAGNOSED": frozenset({"PLANNING"}),
    "PLANNING": frozenset({"AWAITING_APPROVAL", "NO_PLAN"}),
    "AWAITING_APPROVAL": frozenset({"APPLYING", "REJECTED", "EXPIRED", "NOT_REMEDIATED"}),
    "APPLYING": frozenset({"VERIFYING", "NOT_REMEDIATED", "UNDO_FAILED"}),
    "VERIFYING": frozenset({"REMEDIATED", "NOT_REMEDIATED", "UNDO_FAILED"}),
}
PLAN_DIGEST: Final[str] = "plan_digest"
APPROVAL_DEADLINE: Final[str] = "approval_expires_at"
PLAN: Final[str] = "plan"  # exactly the JSON its digest was computed from
PLAN_REVIEW: Final[str] = "plan_review"  # what the Resolver left out and the Critic refused
EXECUTION: Final[str] = "execution"  # the approval redeemed, each call, the verification, the undo
