"""From a verified, final diagnosis to a plan a person can approve: the allowlist of remediation
operations (:mod:`.operations`), the plan and its digest (:mod:`.plan`), the Resolver that reads the world
afresh to give each step its precondition and exact inverse (:mod:`.resolver`), and the Critic that
reviews every step in code before anyone sees it (:mod:`.critic`). Nothing here writes to AWS: the
executor alone applies an approved plan."""
