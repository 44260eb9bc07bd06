"""The README and the pages under docs/ state facts the code owns; keep them in step.

`make docs` (docgen/) regenerates the marked blocks; these tests fail when a block is stale, when a
measured figure was edited by hand, when a page shows a command or an option that does not exist, or a
link that leads nowhere. They also check that the checks themselves bite.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from docgen import blocks, commands, links
from docgen.blocks import Block, as_body, parse
from docgen.code_tables import SETTINGS
from docgen.entry_points import console_scripts, repo_packages
from docgen.outputs import VIEWS, Marker, Unavailable, generated, reads_drill_report
from docgen.pages import DOCS, ROOT, pages
from docgen.refresh import measured_problems, refresh, stale_blocks
from mcp_server.permissions import required_iam_actions

README = ROOT / "README.md"
PAGES = pages()
BLOCKS = [block for path in PAGES for block in parse(path, path.read_text())]
GENERATED = [block for block in BLOCKS if block.kind == "generated"]
MEASURED = [block for block in BLOCKS if block.kind == "measured"]
SHELL_BLOCK = re.compile(r"^[ ]*```sh\n(?P<body>.*?)^[ ]*```", re.MULTILINE | re.DOTALL)


def _ids(found: list[Block]) -> list[str]:
    return [f"{block.where} {block.command}" for block in found]


def _section(path: Path, heading: str) -> str:
    """A page's text from ``heading`` to the next heading of the same or a higher level."""
    text = path.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    following = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", text[start + 1 :], re.M)]
    end = start + 1 + following[1] if len(following) > 1 else len(text)
    return text[start:end]


# --- the blocks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", GENERATED, ids=_ids(GENERATED))
def test_a_generated_block_is_what_its_command_prints_now(block: Block) -> None:
    assert block.body == as_body(generated(Marker.parse(block.command))), (
        f"{block.where} is stale: run `make docs`"
    )


@pytest.mark.parametrize("block", MEASURED, ids=_ids(MEASURED))
def test_a_measured_block_names_a_real_command_and_holds_what_the_generator_wrote(block: Block) -> None:
    assert measured_problems(block) == []
    assert block.body.strip(), f"{block.where} is empty"
    assert f"`{Marker.parse(block.command).command}`" in block.body  # its caption names the command


def test_every_benchmark_and_the_drill_have_their_figures_in_a_block() -> None:
    commands_shown = {Marker.parse(block.command).argv[:3] for block in BLOCKS}
    for bench in sorted((ROOT / "bench").glob("[!_]*.py")):
        assert ("python", "-m", f"bench.{bench.stem}") in commands_shown, f"no block shows bench/{bench.name}"
    assert any(reads_drill_report(Marker.parse(block.command)) for block in MEASURED)


def test_every_settings_class_of_the_code_has_its_table() -> None:
    declared = set()
    sources = [path for package in repo_packages() - {"tests"} for path in (ROOT / package).rglob("*.py")]
    for path in sources:
        for name in re.findall(r"^class (\w+)\(\s*BaseSettings\b", path.read_text(), flags=re.MULTILINE):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            declared.add(f"{module}:{name}")
    assert declared == set(SETTINGS.values())
    shown = {block.command for block in GENERATED if block.path == DOCS / "settings.md"}
    assert shown == {f"python -m docgen show settings {component}" for component in SETTINGS}


def test_the_required_iam_permissions_are_the_code_s() -> None:
    section = _section(DOCS / "tools.md", "## Required IAM permissions")
    listed = re.findall(r"^- `([a-z0-9]+:[A-Za-z]+)`", section, flags=re.MULTILINE)
    assert listed == required_iam_actions()


# --- commands and links ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=[path.name for path in PAGES])
def test_every_command_a_page_shows_exists(page: Path) -> None:
    assert [str(problem) for problem in commands.check_page(page, page.read_text())] == []


@pytest.mark.parametrize("page", PAGES, ids=[path.name for path in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert [str(problem) for problem in links.check_page(page, page.read_text())] == []


def test_every_console_script_is_shown_in_a_shell_block() -> None:
    shown = {words[0] for path in PAGES for words in commands.shell_commands(path.read_text())}
    assert set(console_scripts()) <= shown


# --- the landing page -----------------------------------------------------------------------------------


def test_the_landing_page_is_short_and_leads_to_every_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250  # 186: the benchmark's case-by-case table is in docs/benchmarks.md
    for heading in ("## What the drill shows", "## The two commands", "## Try it with Claude Desktop"):
        assert f"\n{heading}\n" in text
    for page in DOCS.glob("*.md"):
        assert f"](docs/{page.name}" in text, f"the README does not link {page.name}"
    assert "make drill" in text
    assert "make test" in text


def test_the_landing_page_s_first_step_is_the_tested_quickstart() -> None:
    """tests/test_claude_quickstart.py runs the steps of docs/tools.md; the README's first step must be
    those same commands."""
    tested = _section(DOCS / "tools.md", "### Claude Desktop").split("Remote SSE server", 1)[0]
    tested_lines = [
        line for match in SHELL_BLOCK.finditer(tested) for line in textwrap.dedent(match["body"]).splitlines()
    ]
    try_it = _section(README, "## Try it with Claude Desktop")
    shown = [
        line for match in SHELL_BLOCK.finditer(try_it) for line in textwrap.dedent(match["body"]).splitlines()
    ]
    assert len(tested_lines) == 2
    assert shown[:2] == tested_lines
    assert any("incident-chaos iam revoke" in line for line in shown)
    assert any("incident-sandbox invoke" in line for line in shown)


def test_what_it_cannot_diagnose_or_fix_yet_is_on_the_landing_page_and_in_full() -> None:
    summary = _section(README, "## What it cannot diagnose or fix yet")
    assert "](docs/limitations.md)" in summary
    assert "](docs/limitations.md#remediation)" in summary
    assert "# What it cannot diagnose or fix yet" in (DOCS / "limitations.md").read_text()


# --- the checks bite ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "incident-sandbox up --detach",
        ".venv/bin/incident-chaos iam revoke --target s3|cloudwatch|both [--function NAME]",
        "source .sandbox/env && AWS_PROFILE=operator incident-chaos config timeout --seconds N",
        "incident-drill --scenario revoke-s3 --list  # a comment",
        "python -m bench.mcp_overhead --quick",
        "make docs BENCH=1",
        "aws lambda tag-resource --resource x --tags a=b",  # not ours: skipped
    ],
)
def test_a_command_that_exists_passes(line: str) -> None:
    assert commands.check_line(line) == []


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("incident-sandbox up --detached", "unrecognized arguments: --detached"),  # no prefix matching
        ("incident-chaos iam revoke --target s4", "invalid choice: 's4'"),
        ("incident-chaos iam revoke --target s3|s4", "invalid choice: 's4'"),
        ("incident-chaos config timeout --seconds zero", "--seconds"),
        ("incident-dashboard --help", "not a console script"),
        ("python -m bench.no_such_bench", "no such module"),
        ("python -m bench.cold_import --runz 3", "unrecognized arguments"),
        ("make docs no-such-target", "no such target"),
    ],
)
def test_a_command_that_does_not_exist_is_named(line: str, complaint: str) -> None:
    problems = commands.check_line(line)
    assert problems, line
    assert complaint in " ".join(problems)


def test_a_whole_command_quoted_in_prose_is_checked_too(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `.venv/bin/incident-sandbox up --detachd`, then `incident-drill --keep-runing`.\n"
        "A name (`incident-sandbox invoke`) or a fragment (`incident-chaos iam ...`) is not a command.\n"
    )
    problems = [problem.message for problem in commands.check_page(page, page.read_text())]
    assert len(problems) == 2
    assert "--detachd" in problems[0]
    assert "--keep-runing" in problems[1]


def test_a_stale_block_and_a_hand_edited_figure_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            # Page

            <!-- generated: python -m docgen show iam-permissions -->
            - `iam:Everything`
            <!-- end generated -->

            <!-- measured: python -m bench.cold_import -->
            a figure
            <!-- end measured: sha256 000000000000 -->
            """
        )
    )
    assert [problem.where for problem in stale_blocks([page])] == [f"{page}:3"]
    measured = [block for block in parse(page, page.read_text()) if block.kind == "measured"]
    assert "edited by hand" in " ".join(measured_problems(measured[0]))

    outcome = refresh([page])
    assert outcome.rewritten == [f"{page}:3"]
    assert stale_blocks([page]) == []
    assert "`iam:GetRole`" in page.read_text()
    assert "a figure" in page.read_text()  # a measured block is only rewritten from a new run


def test_a_correct_digest_passes_and_markers_must_pair(tmp_path: Path) -> None:
    body = as_body("```text\n1.0 ms\n```")
    text = f"<!-- measured: python -m bench.cold_import -->\n{body}{blocks.end_marker('measured', body)}\n"
    (block,) = parse(tmp_path / "p.md", text)
    assert measured_problems(block) == []
    with pytest.raises(blocks.BlockError, match="never closed"):
        parse(tmp_path / "p.md", "<!-- generated: incident-drill --list -->\ntext\n")
    example = "```text\n<!-- generated: incident-drill --list -->\n```\n"
    assert parse(tmp_path / "p.md", example) == []  # a marker shown as an example is not a block


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The `thing` (here)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#the-thing-here) [missing](gone.md) [anchor](other.md#nowhere) [web](https://x.y/z)\n"
        "`[code](not-a-link.md)`\n"
    )
    problems = [problem.message for problem in links.check_page(page, page.read_text())]
    assert len(problems) == 2
    assert "gone.md does not exist" in problems[0]
    assert "no heading" in problems[1]


def test_the_from_view_shows_a_command_s_output_from_a_line_on() -> None:
    marker = Marker.parse("python -m bench.mcp_overhead | from Summary")
    output = "table\nrow\n\nSummary: all within.\n  sse: 0 errors.\n"
    assert VIEWS["from"](marker, output, "Summary") == "```text\nSummary: all within.\n  sse: 0 errors.\n```"
    with pytest.raises(Unavailable, match="no line starting with 'Total'"):
        VIEWS["from"](marker, output, "Total")
