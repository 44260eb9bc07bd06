"""The allowlist: every AWS operation a remediation may apply, one declaration each. A declaration says what
the call touches, how to read afresh the state it changes (the step's precondition), how to build from that
read the call that puts it back (its inverse, never guessed), which parameters it refuses and its risk. The
Resolver, the Critic, the executor and the executor's IAM policy all read this table; an operation not in
it is never applied.

Risk is the declaration's, never the model's: low for a setting put back on the incident's own function
(an alias moved back, a recorded setting, concurrency, a mapping's setting), high for who may do what (the
role's policies, the function's resource policy), the network path and keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from supervisor.remediation import iam_fixes, kms_fixes, lambda_fixes, network_fixes
from supervisor.remediation.operation import Operation

OPERATIONS: Final[tuple[Operation, ...]] = (
    *lambda_fixes.FIXES,
    *iam_fixes.FIXES,
    *network_fixes.FIXES,
    *kms_fixes.FIXES,
)
BY_CALL: Final[Mapping[tuple[str, str], Operation]] = {operation.key: operation for operation in OPERATIONS}
READ_ACTIONS: Final[tuple[str, ...]] = tuple(sorted({action for op in OPERATIONS for action in op.reads}))
