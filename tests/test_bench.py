"""The benchmarks still run end to end (at tiny sizes; the figures themselves are not judged)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from bench import (
    change_lookups,
    cold_import,
    console_list,
    drill,
    incident_history,
    log_volume,
    redaction,
    remediation,
    sandbox_runtime,
    tokens,
)
from bench.mcp_overhead import QUICK, Latency, Report, render, run
from chaos.sandbox.sandbox import Sandbox
from evals.corpus import load_corpus
from evals.settings import CASES_DIR
from evals.tokens import token_counter
from mcp_server.contract.registry import TOOL_NAMES
from mcp_server.redaction import redact_answer
from mcp_server.tools.change_lookups import PAGE_SIZE
from mcp_server.tools.logs import ERROR_TERMS
from supervisor.settings import SupervisorSettings


@pytest.mark.slow(35)
async def test_benchmark_runs_and_reports_every_figure(sandbox: Sandbox, tmp_path: Path) -> None:
    report = await run(sandbox, QUICK, tmp_path, progress=lambda _: None)
    assert [row.tool for row in report.latency] == list(TOOL_NAMES)
    paths = {"direct", "sse", "http", "ping-sse", "ping-http"}
    assert all(row.p50_ms.keys() == paths for row in report.latency)
    assert all(row.check_ms > 0 and row.answer_kb > 0 for row in report.latency)
    calls = QUICK.clients * QUICK.calls_per_client
    for transport in ("sse", "http"):
        assert [(run.calls, run.errors) for run in report.throughput[transport]] == [(calls, 0)]
        assert 0 < report.throughput[transport][0].p50_ms <= report.throughput[transport][0].p99_ms
    assert report.rss_after_mb > 0
    text = render(report)
    for row in report.latency:
        verdicts = text.split(row.tool, 1)[1].splitlines()[0].split()[-3:]
        assert verdicts[1] == "/"
        assert {verdicts[0], verdicts[2]} <= {"yes", "floor", "no"}
    assert f"after {QUICK.sessions} SSE sessions" in text


def test_the_verdict_takes_the_client_s_schema_check_off_only_when_the_target_is_missed() -> None:
    pings = {"ping-sse": 1.0, "ping-http": 1.0}  # in among the calls: the loop-alone figure is not used
    within = Latency("get_recent_logs", {"direct": 10.0, "sse": 14.0, "http": 15.5} | pings, check_ms=2.0)
    over = Latency("get_recent_changes", {"direct": 10.0, "sse": 17.0, "http": 16.1} | pings, check_ms=2.0)
    report = Report([within, over], {"sse": 0.1, "http": 0.1}, {}, 0, 0.0, 0.0)
    assert report.within(within, "sse") == "yes"  # 4.0 added: the ping and 3 ms
    assert report.within(within, "http") == "floor"  # 5.5 added, 3.5 without the check
    assert report.within(over, "sse") == "no"  # 7.0 added, 5.0 without the check
    assert report.within(over, "http") == "no"  # 6.1 added, 4.1 without the check


@pytest.mark.slow(20)
def test_cold_import_benchmark_reports_every_case() -> None:
    rows = cold_import.run(runs=2)
    assert [row.case for row in rows] == list(cold_import.CASES)
    assert rows[0].ratio == 1.0  # the baseline against itself
    assert all(row.median_ms > 0 for row in rows)
    assert "Target orchestrator/boto3 <= 1.5x" in cold_import.render(rows, 2)


@pytest.mark.slow(25)
def test_sandbox_runtime_benchmark_reports_start_up_and_invocations() -> None:
    rows = sandbox_runtime.run(starts=1, invocations=1)
    assert [r.case for r in rows] == [
        "bare emulator ready",
        "sandbox up (world provisioned)",
        "S3 GetObject, direct (baseline)",
        "invoke data-processor, warm",
        "invoke data-processor, cold",
    ]
    assert all(r.median_ms > 0 for r in rows)
    assert "goal of <= 6 s" in sandbox_runtime.render(rows)


@pytest.mark.slow(25)
@pytest.mark.parametrize("log_format", ["text", "json"])
def test_log_volume_benchmark_finds_the_newest_failures_where_oldest_first_does_not(log_format: str) -> None:
    result = log_volume.run(25_000, 50, 20, 3, runs=1, log_format=log_format)  # > one 20,000 scan
    full, before, *_, tool = result.rows
    assert (full.failures_found, full.last_success_found) == (3, True)
    assert (before.failures_found, before.last_success_found) == (0, False)  # the reason for issue 41
    assert (tool.failures_found, tool.last_success_found) == (3, True)
    assert 0 < tool.events_read < full.events_read
    slices = tool.filter_calls - len(ERROR_TERMS)  # then one lookup per error term over the older part
    assert 2 <= slices <= 10
    assert (result.retried_lines, result.retried_returned) == (20, 20)
    text = log_volume.render(result)
    assert "| get_recent_logs: newest first in time slices" in text
    assert "every line about a retried call among them (20/20)" in text
    assert ("JSON log format" in text) is (log_format == "json")


def test_token_benchmark_compares_the_graph_with_a_plain_mcp_host() -> None:
    cases = load_corpus(CASES_DIR)
    assert cases
    counter = token_counter()
    report = tokens.run(cases, counter, SupervisorSettings())
    assert [row.case for row in report.rows] == [case.id for case in cases]
    assert all(0 < row.graph < row.baseline for row in report.rows)
    text = tokens.render(report, counter)
    assert "| case | plain MCP host (baseline) | graph | graph / baseline |" in text
    assert "budget: mean <= 12000" in text
    assert "sent with every call" in text
    # Cached, each call's tool specs and system prompt cost a tenth of an input token read, 1.25 written.
    billed = tokens.cached(report.graph)
    prefixes = statistics.mean(2 * t.system + 2 * t.tool_specs + t.submit_spec for t in report.graph)
    assert billed["uncached"] == statistics.mean(row.graph for row in report.rows)
    assert billed["read"] == pytest.approx(billed["uncached"] - 0.9 * prefixes)
    assert billed["written"] == pytest.approx(billed["uncached"] + 0.25 * prefixes)
    assert f"billed as {billed['read']:.0f} input tokens when an earlier one cached its prefixes" in text


def test_drill_benchmark_reports_wall_time_against_the_budget() -> None:
    cost = drill.run(["healthy", "revoke-s3"])
    assert cost.passed
    assert [name for name, _ in sorted(cost.slowest)] == ["healthy", "revoke-s3"]
    assert 0 < cost.start_up_seconds < cost.wall_seconds
    assert cost.scenario_seconds < cost.wall_seconds
    assert f"{cost.budget_ratio:.2f}x the 180 s budget" in drill.render(cost)


def test_remediation_benchmark_times_an_auto_applied_fix_and_one_a_person_approved() -> None:
    """bad-deploy's alias rollback is low risk: the executor applies it on its own; revoke-s3's policy is
    high risk: the drill's person approves it first. api-throttled opens two incidents (the function's alarm
    and the API's): the first applies its fix on its own, the second finds it in place. All end REMEDIATED,
    each applied fix timed from its alarm."""
    figures = remediation.run(["bad-deploy", "revoke-s3", "api-throttled"])
    assert figures.passed
    assert (figures.with_command, figures.remediated, figures.in_place) == (4, 4, 1)
    assert sorted(name for name, _ in figures.auto) == ["api-throttled", "bad-deploy"]
    assert [name for name, _ in figures.approved] == ["revoke-s3"]
    assert all(0 < seconds < 60 for _, seconds in figures.auto + figures.approved)
    assert figures.guarded == 0
    assert (
        "REMEDIATED           4 of 4 incidents with a fix command (100%; 1 of them found"
        in remediation.render(figures)
    )


def test_console_list_benchmark_times_the_list_page_against_a_query(sandbox: Sandbox) -> None:
    result = console_list.run(incidents=40, runs=2, sandbox=sandbox)
    assert result.rows[0].case.endswith("(baseline)")
    assert result.rows[0].ratio == 1.0
    assert all(row.median_ms > 0 for row in result.rows)
    assert "goal of < 300 ms server time" in console_list.render(result)


def test_incident_history_benchmark_compares_each_tool_call_with_a_query_of_the_items_it_reads(
    sandbox: Sandbox,
) -> None:
    """Over 1,100 stored incidents (more than the tool reads): the newest 1,000 of the function read by the
    tool asked without a fault type and by its plain Query; asked with one, those of that primary fault
    (every fifth) that have a diagnosis (not the FAILED ones, every seventh: 31 of them), 220 - 31; every
    item by the unbounded Query."""
    result = incident_history.run(incidents=1100, runs=1, sandbox=sandbox)
    assert [row.items for row in result.rows] == [1000, 1000, 189, 189, 1100]
    assert [row.answer_bytes is not None for row in result.rows] == [False, True, False, True, False]
    assert "goal of <= 1.25x" in incident_history.render(result)


def test_redaction_benchmark_finds_every_planted_secret() -> None:
    serialise, redact, counts = redaction.run(events=4_000, runs=1)
    assert serialise > 0
    assert redact > 0
    assert counts == {"email": 2, "card_number": 1, "bearer_token": 1}  # one line in 1,000, in turn


def test_redaction_benchmark_s_page_holds_json_records_and_an_environment_with_every_secret_replaced() -> (
    None
):
    page = redaction.page_of()
    assert len(page.events) == redaction.PAGE_EVENTS
    assert sum(event.message.startswith("{") for event in page.events) == redaction.PAGE_EVENTS // 2
    redacted = redact_answer(page)
    text = json.dumps([event.message for event in redacted.events])
    assert "[REDACTED:aws_session_token]" in text
    assert "IQoJb3JpZ2lu" not in text
    # the first batch's secret line, ten lines given one, and the environment's three credentials
    assert text.count("[REDACTED:") == 14
    assert redaction.page_ms(runs=3) > 0


@pytest.mark.slow(45)
def test_change_lookup_benchmark_finds_the_change_where_each_order_alone_does_not() -> None:
    # Past each single order's cap of 10 pages of 50: 600 reads of the role, 600 writes of another.
    assert change_lookups.BASELINE_PAGES * PAGE_SIZE == 500
    rows = change_lookups.run(
        reads=1_200, writes=600, deadline_seconds=300
    )  # found, however loaded the machine
    found = {(r.account, r.order.split(":")[0]): r.found for r in rows}
    assert found == {
        ("read-heavy", "get_recent_changes"): True,
        ("read-heavy", "the writes alone (ReadOnly=false)"): True,
        ("read-heavy", "the role's name alone (ResourceName)"): False,
        ("write-heavy", "get_recent_changes"): True,
        ("write-heavy", "the writes alone (ReadOnly=false)"): False,
        ("write-heavy", "the role's name alone (ResourceName)"): True,
    }
    assert "| read-heavy | get_recent_changes: writes first" in change_lookups.render(rows, 1_200, 600)
