"""What a block's command prints, turned into the block's body.

A marker names a command line, optionally followed by ``| view``: how to present what the command
printed or wrote (``incident-drill | scorecard`` reads the scorecard the last drill wrote). Commands run
from the repository root, with the caller's AWS and project variables removed, so a block does not depend
on who regenerates it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docgen.code_tables import PROJECT_VARIABLES, portable, show, table
from docgen.entry_points import console_scripts
from docgen.pages import ROOT

DRILL_REPORT_DIR = ROOT / "drill-report"
CUT = 110  # width at which long lines of a command's output are cut
_TABLE_RULE = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")


class Unavailable(RuntimeError):
    """The block cannot be regenerated here and now (no drill report, a command that failed)."""


@dataclass(frozen=True)
class Marker:
    """A marker's command line and the view that presents its output."""

    argv: tuple[str, ...]
    view: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Marker:
        command, _, view = text.partition(" | ")
        argv = tuple(shlex.split(command))
        if not argv:
            raise ValueError(f"no command in {text!r}")
        return cls(argv, tuple(view.split()))

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def option(self, name: str) -> str | None:
        """The value of ``name`` in the command line, if given."""
        for index, word in enumerate(self.argv):
            if word == name and index + 1 < len(self.argv):
                return self.argv[index + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
        return None


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(PROJECT_VARIABLES)}


def executable(argv: tuple[str, ...]) -> list[str]:
    """The command line with our console scripts and ``python`` resolved to this environment."""
    first, *rest = argv
    if first in ("python", "python3"):
        return [sys.executable, *rest]
    if first in console_scripts():
        return [str(Path(sys.executable).with_name(first)), *rest]
    return [first, *rest]


def run(
    argv: tuple[str, ...],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    accept: tuple[int, ...] = (0,),
) -> str:
    """What the command prints on stdout; Unavailable if it exits with a status not in ``accept``."""
    result = subprocess.run(  # noqa: S603 - commands named in our own docs
        executable(argv),
        cwd=ROOT,
        env={**clean_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode not in accept:
        raise Unavailable(f"`{shlex.join(argv)}` exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def is_markdown(text: str) -> bool:
    return any(_TABLE_RULE.match(line) for line in text.splitlines())


def present(output: str) -> str:
    """Markdown tables as they are; every other run of lines as a code block, its layout kept."""
    lines = [line.rstrip() for line in output.strip("\n").splitlines()]
    if not is_markdown(output):
        return "```text\n" + "\n".join(lines) + "\n```"
    parts: list[tuple[bool, list[str]]] = []  # (is a table, lines)
    for line in lines:
        is_table = line.startswith("|")
        if parts and (parts[-1][0] == is_table or not line):
            parts[-1][1].append(line)
        else:
            parts.append((is_table, [line]))
    rendered = []
    for is_table, chunk in parts:
        text = "\n".join(chunk).strip("\n")
        if text:
            rendered.append(text if is_table else "```text\n" + text + "\n```")
    return "\n\n".join(rendered)


def cut(text: str, width: int = CUT) -> str:
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..." for line in text.splitlines())


# --- generated blocks: deterministic output, compared in CI ---------------------------------------------


def generated(marker: Marker) -> str:
    """The body of a generated block, as its command prints it now."""
    if marker.view:
        raise ValueError(f"`{marker.command}`: generated blocks take no view")
    if marker.argv[:4] == ("python", "-m", "docgen", "show"):
        return show(*marker.argv[4:])  # the same function the command runs, without a new interpreter
    return present(portable(run(marker.argv, timeout=300)))


# --- measured blocks: figures that vary, regenerated from a run ------------------------------------------


def not_measured(marker: Marker) -> str:
    """The body of a measured block no run has filled yet: it says so, and how to fill it."""
    return f"Not measured yet: `make docs BENCH=1` runs `{marker.command}`."


def _caption(marker: Marker, when: str) -> str:
    return f"`{marker.command}`, {when} on {os.cpu_count()} CPUs:"


_RUNS: dict[tuple[str, ...], tuple[str, str]] = {}  # command -> (date, output), for this process


def measured_from_run(marker: Marker) -> str:
    """Run a slow command (a benchmark) and present what it printed, with when and where it ran."""
    if marker.view and marker.view[0] == "after":
        return _after_fault(marker)
    if marker.argv not in _RUNS:  # blocks showing views of one command share its run
        # The longest, the whole benchmark with the local model, takes about two hours on 2 cores.
        _RUNS[marker.argv] = (datetime.now(UTC).strftime("%Y-%m-%d"), run(marker.argv, timeout=4 * 3600))
    started, output = _RUNS[marker.argv]
    body = VIEWS[marker.view[0]](marker, output, *marker.view[1:]) if marker.view else present(output)
    return _caption(marker, f"run {started}") + "\n\n" + body


def reads_drill_report(marker: Marker) -> bool:
    return marker.argv[0] == "incident-drill"


def measured_from_drill_report(marker: Marker, report_dir: Path | None = None) -> str:
    """A view of the last drill's report; Unavailable when there is none."""
    directory = report_dir or Path(marker.option("--report-dir") or DRILL_REPORT_DIR)
    directory = directory if directory.is_absolute() else ROOT / directory
    markdown_path, json_path = directory / "drill-report.md", directory / "drill-report.json"
    if not markdown_path.exists() or not json_path.exists():
        raise Unavailable(f"no drill report in {directory}: run `make drill` first")
    report: dict[str, Any] = json.loads(json_path.read_text())
    view, *args = marker.view or ("scorecard",)
    body = DRILL_VIEWS[view](markdown_path.read_text(), report, *args)
    return f"From the report of `{marker.command}`, run {report['started_at']}:\n\n{body}"


# --- views ------------------------------------------------------------------------------------------------


def _markdown_table(text: str) -> tuple[list[str], list[list[str]], str]:
    """The first Markdown table of a report: its header, its rows, and the line above it."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if _TABLE_RULE.match(line) and index > 0:
            head = [cell.strip() for cell in lines[index - 1].strip("|").split("|")]
            rows = []
            for row in lines[index + 1 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip("|").split("|")])
            above = next((line for line in reversed(lines[: index - 1]) if line.strip()), "")
            return head, rows, above
    raise Unavailable("the report holds no table")


def _scorecard(markdown: str, report: dict[str, Any]) -> str:
    """The report's summary line and scorecard, as the drill wrote them."""
    head, rows, summary = _markdown_table(markdown)
    return summary + "\n\n" + table(head, rows)


def _summary(markdown: str, report: dict[str, Any]) -> str:
    """The scorecard folded by expected outcome: which scenarios, how many passed, evidence grounded."""
    head, rows, summary = _markdown_table(markdown)
    if not {"scenario", "expected", "grounded", "result"} <= set(head):
        return _scorecard(markdown, report)
    scenario, expected, evidence, result = (
        head.index(n) for n in ("scenario", "expected", "grounded", "result")
    )
    groups: dict[str, list[list[str]]] = {}
    for row in rows:
        groups.setdefault(row[expected], []).append(row)
    folded = []
    for outcome, members in groups.items():
        counts = [tuple(map(int, row[evidence].split("/"))) for row in members if "/" in row[evidence]]
        found, total = sum(c[0] for c in counts), sum(c[1] for c in counts)
        folded.append(
            [
                f"`{outcome}`",
                ", ".join(row[scenario] for row in members),
                f"{sum(row[result] == 'PASS' for row in members)}/{len(members)}",
                f"{found}/{total}" if total else "-",
            ]
        )
    return summary + "\n\n" + table(["expected", "scenarios", "passed", "evidence grounded"], folded)


def compact_json(value: Any, indent: int = 0, width: int = CUT, longest: int = 100) -> str:
    """JSON for reading: an object key per line, a list item per line (each item on one line, its strings
    longer than ``longest`` cut with '…'), anything that fits ``width`` on one line."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(key)}: {compact_json(inner, indent + 2, width, longest).lstrip()}"
            for key, inner in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    lines = [pad + json.dumps(_shortened(item, longest), ensure_ascii=False) for item in value]
    return "[\n" + ",\n".join(lines) + "\n" + " " * indent + "]"


def _shortened(item: Any, longest: int) -> Any:
    if isinstance(item, str) and len(item) > longest:
        return item[: longest - 1] + "…"
    if isinstance(item, dict):
        return {key: _shortened(inner, longest) for key, inner in item.items()}
    if isinstance(item, list):
        return [_shortened(inner, longest) for inner in item]
    return item


def _diagnosis(markdown: str, report: dict[str, Any], scenario: str) -> str:
    for entry in report["scenarios"]:
        if entry["name"] == scenario:
            for incident in entry["incidents"]:
                if incident.get("diagnosis"):
                    return "```json\n" + compact_json(incident["diagnosis"]) + "\n```"
    raise Unavailable(f"the drill report holds no diagnosis for {scenario!r}")


DRILL_VIEWS: Mapping[str, Callable[..., str]] = {
    "scorecard": _scorecard,
    "summary": _summary,
    "diagnosis": _diagnosis,
}


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else "✓" if ok else "✗"


def _seconds(value: float | None) -> str:
    """A time to recover (from the alarm to REMEDIATED), or "-" where none was measured."""
    return "-" if value is None else f"{value:.1f} s"


def _totals(marker: Marker, output: str) -> str:
    """incident-eval's live leaderboard, a row of totals per model only."""
    return _per_case(marker, output).split("\n\n", 1)[0]


def _per_case(marker: Marker, output: str) -> str:
    """incident-eval's live leaderboard: a row of totals per model, then each model's case by case."""
    out = Path(marker.option("--out") or "eval-report")
    board = json.loads(((out if out.is_absolute() else ROOT / out) / "leaderboard.json").read_text())
    columns = list(board["columns"])
    totals, sections = [], []
    for model in board["models"]:
        total, name = model["totals"], f"`{model['model']}`"
        cost = total["cost_usd"]
        totals.append(
            [
                name,
                f"{total['solved']}/{total['cases']}",
                f"{total['faults']:.2f}",
                *(f"{passed}/{applies}" for passed, applies in total["columns"].values()),
                _seconds(total.get("median_seconds_to_recover")),
                f"{total['pointers_found']:.0f}/{total['pointers']:.0f}",
                str(total.get("false_verified_claims", 0)),
                "n/a" if cost is None else f"${cost / total['cases']:.4f}",
                f"{total['seconds'] / total['cases']:.1f} s",
                f"{total['llm_calls'] / total['cases']:.1f}",
                f"{(total['input_tokens'] + total['output_tokens']) / total['cases']:.0f}",
            ]
        )
        rows = [
            [
                case_name,
                case["expected"],
                case["diagnosed"],
                f"{case['faults']:.2f}",
                *(_mark(ok) for ok in case["columns"].values()),
                _seconds(case.get("seconds_to_recover")),
                "✓" if case["solved"] else "✗ " + ", ".join(case["failed_checks"]),
            ]
            for case_name, case in model["cases"].items()
        ]
        head = ["case", "expected", "diagnosed", *columns, "time to recover", "solved"]
        summary = f"{model['model']}, case by case"
        sections.append(f"<details><summary>{summary}</summary>\n\n{table(head, rows)}\n\n</details>")
    head = ["model", "solved", *columns, "median time to recover", "pointers re-found"]
    head += ["false verified claims", "cost per case"]
    head += ["latency per case"]
    head += ["LLM calls per case", "tokens per case"]
    return "\n\n".join([table(head, totals), *sections])


def _from_line(marker: Marker, output: str, word: str) -> str:
    """What the command printed from its first line that starts with ``word`` on."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(word):
            return present("\n".join(lines[index:]))
    raise Unavailable(f"`{marker.command}` printed no line starting with {word!r}")


VIEWS: Mapping[str, Callable[..., str]] = {"per-case": _per_case, "totals": _totals, "from": _from_line}


def _after_fault(marker: Marker) -> str:
    """The output of a command run against a fresh sandbox after one ``incident-chaos`` fault and one
    invocation of the function, e.g. ``incident-diagnose --lambda data-processor | after iam revoke
    --target s3``."""
    from chaos.mcp_process import server_process
    from chaos.sandbox import names
    from chaos.sandbox.sandbox import running_sandbox

    started = datetime.now(UTC).strftime("%Y-%m-%d")
    fault = marker.view[1:]
    function = marker.option("--lambda") or names.FUNCTION_NAME
    with (
        tempfile.TemporaryDirectory(prefix="docgen-") as tmp,
        running_sandbox(Path(tmp) / "sandbox") as sandbox,
    ):
        aws = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"}
        run(
            ("incident-chaos", *fault, "--function", function),
            timeout=120,
            env=aws | {"AWS_PROFILE": names.OPERATOR},
        )
        invoke = ("incident-sandbox", "invoke", function, "--state-dir", str(sandbox.state_dir))
        run(invoke, timeout=120, env={}, accept=(0, 1))  # 1: the invocation failed, as the fault intends
        time.sleep(1)  # the first failure's metrics and CloudTrail event are in the emulator at once
        server_env = aws | {"AWS_PROFILE": names.MCP_SERVER}
        with server_process(server_env, Path(tmp) / "server.log") as server:
            argv = (*marker.argv, "--mcp-url", f"{server.url}/sse")
            result = subprocess.run(  # noqa: S603 - our own console script
                executable(argv),
                cwd=ROOT,
                env={**clean_env(), **sandbox.env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
                check=False,
            )
    if result.returncode != 0:
        raise Unavailable(f"`{shlex.join(argv)}` exited {result.returncode}:\n{result.stdout[-2000:]}")
    caption = (
        f"`{marker.command}` after `incident-chaos {shlex.join(fault)}` and one invocation, in a fresh "
        f"sandbox, run {started} (lines cut at {CUT} characters):"
    )
    return caption + "\n\n```text\n" + cut(result.stdout.strip("\n")) + "\n```"
