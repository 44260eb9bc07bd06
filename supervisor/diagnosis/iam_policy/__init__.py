"""Whether an execution role allows an action on a resource: IAM identity policies and a permissions boundary,
read from the ``get_iam_state`` response, and the denial an AWS error message shows.

Pure and stdlib-only, and deliberately not shared with the sandbox's evaluator: the diagnosis must reach its
verdict on its own. What it cannot judge it never guesses:

- A statement with a ``Condition``, a policy variable (``${aws:username}``) in a Resource pattern that could
  match, or a Resource/NotResource scope against an unknown resource is *conditional*: it may or may not
  apply. A variable stands for any text, so a pattern that cannot match even then does not apply at all.
- A policy document that could not be read (an attached policy whose ``document`` is null, an inline policy
  or a policy list the tool reports as a gap) is *unreadable*: it may allow or deny anything, so only an
  explicit deny or a boundary exclusion is still decisive; otherwise the decision is ``unknown``.
- A service-less action ``*:Op`` (boto only said "when calling the Op operation") is covered by an Allow
  whose operation part matches in any service; a Deny decides it only when its service part is ``*``,
  otherwise that Deny is conditional. So a guess never makes a call "denied".

Resource patterns are matched case-sensitively over the whole ARN (``*`` spans ``:`` and ``/``); action
patterns case-insensitively. ``${*}``, ``${?}`` and ``${$}`` are the literal characters.
"""

from supervisor.diagnosis.iam_policy.denials import DeniedCall, parse_denial
from supervisor.diagnosis.iam_policy.evaluation import Evaluation, evaluate, evaluate_role
from supervisor.diagnosis.iam_policy.judgement import BoundaryResult, Decision, Match
from supervisor.diagnosis.iam_policy.policy_statements import (
    Scope,
    StatementRef,
    action_matches,
    listed,
    resource_matches,
    statements,
)

__all__ = [
    "BoundaryResult",
    "Decision",
    "DeniedCall",
    "Evaluation",
    "Match",
    "Scope",
    "StatementRef",
    "action_matches",
    "evaluate",
    "evaluate_role",
    "listed",
    "parse_denial",
    "resource_matches",
    "statements",
]
