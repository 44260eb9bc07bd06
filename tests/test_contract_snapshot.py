"""The published contract and the model-facing texts change only on purpose (tests/contract_snapshot.py)."""

from __future__ import annotations

import json

from tests.contract_snapshot import GOLDEN, snapshot


def test_what_models_and_hosts_are_shown_is_the_committed_snapshot() -> None:
    committed = json.loads(GOLDEN.read_text())
    current = snapshot()
    changed = sorted(
        key for key in committed.keys() | current.keys() if committed.get(key) != current.get(key)
    )
    assert changed == [], (
        f"{', '.join(changed)} changed; if on purpose, run `.venv/bin/python -m tests.contract_snapshot`"
    )
