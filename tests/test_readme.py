"""The README states facts the code owns; keep them in step."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_server.permissions import required_iam_actions

README = Path(__file__).resolve().parents[1] / "README.md"


def test_required_iam_permissions_section_matches_the_code() -> None:
    text = README.read_text()
    section = text.split("### Required IAM permissions", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^- `([a-z0-9]+:[A-Za-z]+)`", section, flags=re.MULTILINE)
    assert listed == required_iam_actions()
