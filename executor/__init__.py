"""The executor: the only component that writes. It applies a plan a person approved, exactly: each step
only on the state its precondition names, re-read immediately before the call, and undoes what it applied,
in reverse order, with the inverses the plan carries."""
