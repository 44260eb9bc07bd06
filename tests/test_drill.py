"""`incident-drill`: every scenario through the whole loop as `make drill` runs it, and the drill's own
checks shown to fail when the diagnosis or the restore is wrong."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics

from chaos.aws_actions import on_each_action
from chaos.drill import event_traffic
from chaos.drill.expected_command import Command
from chaos.drill.progress import Progress
from chaos.drill.runner import Drill, _functions_named, _OperatorApplier
from chaos.drill.scenarios import SCENARIOS, Act, Applies, ExpectedIncident, Injection, Scenario
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.iam import IAM_DENY, REVOKE_S3
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from deploy import policies
from executor.permissions import WRITE_ACTIONS
from supervisor.incident.store import IncidentStore
from supervisor.permissions import RECHECK_POLL_ACTIONS
from tests.pipeline_support import published_notifications, stuck_incident
from tests.recheck_support import resend_overdue_recheck
from watchdog.handler import build_watchdog
from watchdog.sweep import Notices, SweepReport, fail_stale, find_stale

# The whole drill runs inside the one test that reads it (two would run it twice when xdist gives them to
# two workers): more than the suite's default per test, and handed out first (conftest.py).
FULL_DRILL_TIMEOUT = pytest.mark.timeout(1260)
DRILL_LANES = 2  # see full_drill


def _drill(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DRILL_", "SUPERVISOR_"))}
    return subprocess.run(
        [sys.executable, "-m", "chaos.drill.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1200,  # about 8 to 10 minutes in the suite on 2 cores; a loaded CI machine may take more
    )


@pytest.fixture(scope="module")
def full_drill(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`incident-drill` with every scenario, as `make drill` runs it but in two lanes, not four: in the
    suite two other workers share the two cores, and more lanes beside them slowed a sandbox's init
    sixfold (bad-deploy-import's 0.5 s init retry ran into data-processor's 3 s timeout, twice with four
    lanes beside one worker; a handler's init retry beside it, once with three beside two); its output and
    working directory."""
    cwd = tmp_path_factory.mktemp("drill")
    return _drill("--jobs", str(DRILL_LANES), "--report-dir", "reports", cwd=cwd), cwd


def _failed_steps(stdout: str) -> str:
    """Every line a failed scenario printed (its alarms, tool calls and checks), so that a failure seen only
    in CI's log can be understood from it."""
    lines = stdout.splitlines()

    def scenario(line: str) -> str | None:  # "lane 2  [44/85] node-deploy-slow-init  23.5s  FAIL  ..."
        words = line.split("] ", 1)[1].split() if "] " in line else []
        return words[0] if words else None

    failed = {scenario(line) for line in lines if "  FAIL  " in line} - {None}
    return "\n".join(line for line in lines if scenario(line) in failed)


@FULL_DRILL_TIMEOUT
@pytest.mark.slow(300)
def test_the_full_drill_passes_and_writes_its_reports_and_its_identities_use_what_they_are_granted(
    full_drill: tuple[subprocess.CompletedProcess[str], Path], sandbox: Sandbox, incidents: IncidentStore
) -> None:
    ran, tmp_path = full_drill
    assert ran.returncode == 0, _failed_steps(ran.stdout) or ran.stdout[-3000:] + ran.stderr[-3000:]
    assert f"drill passed: {len(SCENARIOS)}/{len(SCENARIOS)} scenarios" in ran.stdout
    for scenario in SCENARIOS:  # one scorecard row each
        assert any(
            line.startswith(scenario.name) and line.endswith("PASS") for line in ran.stdout.splitlines()
        )
    assert "agent: get_iam_state → ok" in ran.stdout  # live progress shows tool calls (not a terminal: lines)

    report = json.loads((tmp_path / "reports" / "drill-report.json").read_text())
    assert report["passed"] is True
    assert [s["name"] for s in report["scenarios"]] == [s.name for s in SCENARIOS]
    by_name = {s["name"]: s for s in report["scenarios"]}
    assert by_name["healthy"]["incidents"] == []
    (revoked,) = by_name["revoke-s3"]["incidents"]
    assert revoked["status"] == "DIAGNOSED"
    assert revoked["fault_types"] == ["permission_loss"]
    assert (
        revoked["grounding"]["grounded"] is True
    )  # the judge re-found every pointer in the server's answers
    assert (
        revoked["grounding"]["found"]
        == revoked["grounding"]["total"]
        == len(revoked["diagnosis"]["evidence"])
    )
    answers = [
        json.loads(line) for line in (tmp_path / "reports" / "mcp-answers.jsonl").read_text().splitlines()
    ]
    assert {entry["incident_id"] for entry in answers} >= {revoked["incident_id"]}
    assert names.ROLE_NAME in revoked["diagnosis"]["affected_resources"]
    interleaved = by_name["interleaved"]["incidents"]
    assert len(interleaved) == 2
    assert {f for i in interleaved for f in i["fault_types"]} == {"permission_loss", "throttling"}
    two = {i["incident_id"].split("@")[0]: i["fault_types"] for i in by_name["two-functions"]["incidents"]}
    assert two == {names.FUNCTION_NAME: ["permission_loss"], names.REPORT_FUNCTION: ["timeout"]}
    assert [i["incident_id"].split("@")[0] for i in by_name["healthy-neighbour"]["incidents"]] == [
        names.REPORT_FUNCTION
    ]
    (delayed,) = by_name["cloudtrail-delay"]["incidents"]
    assert delayed["diagnosis"]["trigger"] is None
    assert delayed["diagnosis"]["gaps"]
    # Each diagnosis made within the delivery bound (2 s at the drill's time scale) of its first failure is
    # provisional, re-checked and made final; the drill's own check says which way each went.
    staged = [c for s in report["scenarios"] for c in s["checks"] if c["name"] == "provisional, then final"]
    diagnosed = [i for s in report["scenarios"] for i in s["incidents"] if i["status"] == "DIAGNOSED"]
    assert len(staged) == len(diagnosed)
    assert all(c["ok"] for c in staged)
    assert all(i["stage"]["final"] is True for i in diagnosed)
    # (How many were provisional depends on how fast the machine diagnoses: tests/test_recheck.py proves
    # the sequence on a clock of its own.)
    for incident in diagnosed:
        if incident["provisional_diagnosis"] is not None:
            gaps = incident["provisional_diagnosis"]["gaps"]
            assert any(g["reason"].startswith("provisional:") for g in gaps), incident["incident_id"]
            assert not any(g["reason"].startswith("provisional:") for g in incident["diagnosis"]["gaps"])
    checked = {c["name"] for s in report["scenarios"] for c in s["checks"]}
    assert {
        "own evidence only",
        "trigger",
        "resources named exactly",
        "not steered by planted text",
    } <= checked
    assert {(i["status"], i["error_category"]) for s in report["scenarios"] for i in s["incidents"]} >= {
        ("ERROR", "mcp_connection"),
        ("ERROR", "bedrock_auth"),
    }
    (recovered,) = by_name["mcp-retry-recovery"]["incidents"]
    assert len(recovered["failed_attempts"]) == 1
    restored = [c["ok"] for s in report["scenarios"] for c in s["checks"] if c["name"] == "world restored"]
    assert restored == [True] * len(SCENARIOS)  # one check per scenario, each passed

    # one report per lane, and the whole drill's report holds every scenario once
    lanes = [json.loads(p.read_text()) for p in sorted((tmp_path / "reports" / "lanes").glob("*/*.json"))]
    assert len(lanes) == DRILL_LANES
    assert sorted(s["name"] for lane in lanes for s in lane["scenarios"]) == sorted(s.name for s in SCENARIOS)
    assert any(line.startswith("lane 2  [") for line in ran.stdout.splitlines())

    markdown = (tmp_path / "reports" / "drill-report.md").read_text()
    assert "| revoke-s3 | permission_loss | permission_loss |" in markdown
    supervisor_log = (tmp_path / "reports" / "supervisor.log").read_text()
    assert '"message":"agent_metrics"' in supervisor_log  # the pipeline's logs, not in the scorecard
    assert "agent_metrics" not in ran.stdout
    _the_deployed_policies_grant_exactly_what_the_code_calls(report, sandbox, incidents)


def _the_deployed_policies_grant_exactly_what_the_code_calls(
    report: dict[str, Any], sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """Every AWS action the supervisor's identity took during the drill, against the template's role.
    The watchdog's sweep in the drill finds nothing stale and nothing unsent, so its writes are recorded
    here, failing and notifying a stale incident and losing a race, as its own identity."""
    used_by_supervisor = set(report["aws_actions"][names.SUPERVISOR])

    session = sandbox.session(names.WATCHDOG)
    used_by_watchdog: set[str] = set(report["aws_actions"][names.WATCHDOG])
    on_each_action(session, used_by_watchdog.add)
    watchdog = build_watchdog(
        session,
        incident_state_table=incidents.state_table,
        diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn,
    )
    assert watchdog.notifier is not None
    stale, racing = (
        stuck_incident(incidents, minutes_ago=12, function=f"fn-{n}") for n in ("stale", "racing")
    )
    cutoff, candidates = find_stale(watchdog.store, 600)
    incidents.transition(racing, "INVESTIGATING", "DIAGNOSED")  # finishes between the query and the write
    swept = SweepReport(cutoff=cutoff)
    published_notifications(sandbox)  # emptied: what follows is this sweep's
    notices = Notices(watchdog.notifier, EphemeralMetrics(namespace="test"))
    fail_stale(watchdog.store, candidates, swept, watchdog.logger, notices)
    assert (swept.failed, [lost["incident_id"] for lost in swept.lost]) == ([stale], [racing])
    assert swept.notified == [stale]
    (envelope,) = published_notifications(sandbox)
    assert envelope["MessageAttributes"]["incident_id"]["Value"] == stale
    resent, covered = resend_overdue_recheck(sandbox, incidents, session)  # a re-check that never ran
    assert covered.rechecks_resent == [resent]

    # Not boto3 calls of our code: Bedrock is called through langchain-aws's own client (the drill's
    # bedrock-auth scenario reaches it), Lambda itself writes the logs (and the dead letters, with the
    # sqs:SendMessage the supervisor's re-checks use), and its event source mapping polls the re-check
    # queue. Every re-check the drill ran was sent by the supervisor's own identity.
    outside = {*policies.BEDROCK_ACTIONS, *policies.LOG_ACTIONS, *RECHECK_POLL_ACTIONS}
    assert set(policies.DEAD_LETTER_ACTIONS) <= used_by_supervisor
    supervisor = policies.actions(policies.supervisor_statements("/aws/lambda/incident-supervisor"))
    assert supervisor - outside == used_by_supervisor
    watchdog_granted = policies.actions(policies.watchdog_statements("/aws/lambda/incident-watchdog"))
    assert watchdog_granted - set(policies.LOG_ACTIONS) == used_by_watchdog
    # The executor applied the fixes a person approved, as its own identity: only what its role holds, and
    # it is the only one of the three that wrote to a watched function's resources.
    used_by_executor = set(report["aws_actions"][names.EXECUTOR])
    executor = policies.actions(policies.executor_statements("/aws/lambda/incident-executor"))
    assert used_by_executor <= executor
    assert used_by_executor & set(WRITE_ACTIONS)
    assert not (used_by_supervisor | used_by_watchdog) & set(WRITE_ACTIONS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "nope"], "unknown scenario(s) ['nope']; choose from: healthy, key-disabled"),
        (["--model", "gpt"], "SUPERVISOR_MODEL must be 'rules' or 'provider:model'"),
        (["--jobs", "0"], "--jobs must be between 1 and 8, not 0"),
        (["--keep-running", "--jobs", "2"], "--keep-running keeps one sandbox up: it runs one lane"),
    ],
)
def test_bad_options_exit_2_before_starting_anything(tmp_path: Path, args: list[str], message: str) -> None:
    ran = _drill(*args, cwd=tmp_path)
    assert ran.returncode == 2
    assert message in ran.stderr
    assert not (tmp_path / "drill-report").exists()


def test_keep_running_leaves_the_sandbox_and_server_up_until_down(tmp_path: Path) -> None:
    state = tmp_path / "sandbox"
    ran = _drill("--scenario", "healthy", "--keep-running", "--state-dir", str(state), cwd=tmp_path)
    try:
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "Claude Desktop (claude_desktop_config.json)" in ran.stdout
        server = json.loads((state / "mcp-server.json").read_text())
        assert f"{server['url']}/sse" in ran.stdout
        assert httpx.get(f"{server['url']}/healthz", timeout=5).status_code == 200
        console = json.loads((state / "console.json").read_text())
        assert f"{console['url']}/incidents" in ran.stdout
        assert httpx.get(f"{console['url']}/healthz", timeout=5).json() == {"status": "ok"}
        listing = httpx.get(f"{console['url']}/incidents", timeout=10)  # as the console identity
        assert listing.status_code == 200
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "chaos.sandbox.cli", "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "MCP server left by incident-drill --keep-running" in down.stdout
    assert "incident console left by incident-drill --keep-running" in down.stdout
    assert f"sandbox in {state} stopped" in down.stdout
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{server['url']}/healthz", timeout=2)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{console['url']}/healthz", timeout=2)


@pytest.fixture
def drill(sandbox: Sandbox, mcp_server_url: str, mcp_answer_log: Path) -> Iterator[Drill]:
    """The drill on the session's sandbox and MCP server, printing into a buffer."""
    with Drill(
        sandbox, mcp_server_url, progress=Progress(io.StringIO(), live=False), answer_log=mcp_answer_log
    ) as drill:
        yield drill


def test_a_wrong_diagnosis_fails_the_scenario(drill: Drill) -> None:
    revoke = next(s for s in SCENARIOS if s.name == "revoke-s3")
    wrong = dataclasses.replace(
        revoke,
        expected=(
            ExpectedIncident(
                names.FUNCTION_NAME,
                frozenset({"throttling"}),
                resources=("function", "security-group"),
                command=Command(
                    "lambda delete-function-concurrency", {"--function-name": names.FUNCTION_NAME}
                ),
            ),
        ),
    )
    result = drill.run_scenario(wrong)
    assert not result.passed
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert set(failed) == {"fault types", "resources named exactly", "remediation command"}
    assert "['permission_loss'] (expected ['throttling'])" in failed["fault types"]
    assert f"does not list ['{drill.sandbox.world.security_group_id}']" in failed["resources named exactly"]
    assert (
        "aws iam put-role-policy (expected aws lambda delete-function-concurrency)"
        in failed["remediation command"]
    )


def test_a_fix_with_a_wrong_parameter_fails_and_is_not_applied(drill: Drill, sandbox: Sandbox) -> None:
    """revoke-s3 expecting the policy put back under another name: the diagnosis's command (the right
    one) differs in --policy-name, so it fails and is not applied; the restore still gives the world back."""
    revoke = next(s for s in SCENARIOS if s.name == "revoke-s3")
    (expected,) = revoke.expected
    assert expected.command is not None
    other = Command(
        expected.command.operation, {**expected.command.params, "--policy-name": "data-processor-s3"}
    )
    result = drill.run_scenario(
        dataclasses.replace(revoke, expected=(dataclasses.replace(expected, command=other),))
    )
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    wrong = "aws iam put-role-policy: --policy-name data-processor-access, expected data-processor-s3"
    assert failed.keys() == {"remediation command", "remediation applied"}
    assert failed["remediation command"].endswith(wrong)
    assert failed["remediation applied"].endswith(f"not applied: {wrong}")


def test_the_stage_sees_a_function_recover_only_once_its_fault_is_undone(drill: Drill) -> None:
    """function-succeeds: data-processor, denied s3:GetObject, fails as its traffic invokes it; with the
    Deny deleted, it succeeds."""
    chaos = Chaos(drill.operator, say=lambda _: None)
    applier = _OperatorApplier(drill, drill._runtime(None), names.FUNCTION_NAME, Act(names.FUNCTION_NAME))
    chaos.inject(IAM_DENY, names.FUNCTION_NAME, action="s3:GetObject")
    try:
        failing = applier.recovered(Applies(within_seconds=0))
    finally:
        chaos.restore(IAM_DENY, names.FUNCTION_NAME)
    assert failing[0] is False
    assert failing[1].startswith("data-processor invoked: failed (")
    assert "AccessDenied" in failing[1]
    assert applier.recovered(Applies(within_seconds=0)) == (True, "data-processor invoked: succeeded")


def test_the_stage_sees_orders_delivered_only_once_the_poller_may_delete_them(drill: Drill) -> None:
    """queue-delivers: with sqs:DeleteMessage denied, a new order is processed, comes back and is moved to
    the DLQ; with the Deny deleted, it is processed once and deleted."""
    chaos = Chaos(drill.operator, say=lambda _: None)
    worker = names.ORDER_WORKER_FUNCTION
    applier = _OperatorApplier(drill, drill._runtime(None), worker, Act(worker, traffic="queue"))
    event_traffic.empty(drill.operator)
    chaos.inject(IAM_DENY, worker, action="sqs:DeleteMessage")
    try:
        assert drill.events.caught_up(30)
        kept, seen = applier.recovered(Applies("queue-delivers", 20))
    finally:
        chaos.restore(IAM_DENY, worker)
    try:
        assert drill.events.caught_up(30)
        delivered, after = applier.recovered(Applies("queue-delivers", 20))
    finally:
        event_traffic.empty(drill.operator)
        drill._discard_outputs()  # the order order-worker wrote
    assert (kept, delivered) == (False, True), (seen, after)
    assert seen.endswith(f"{names.ORDERS_DLQ} held 0 message(s), then 1")
    assert after.endswith(f"{names.ORDERS_DLQ} held 1 message(s), then 1")  # the first, still there


def test_a_change_the_scenario_did_not_make_is_not_its_trigger(drill: Drill) -> None:
    """The trigger compares with the injectors' own calls: naming a change that happened (the role's
    policy was deleted) fails when the scenario says its change cannot be shown."""
    revoke = next(s for s in SCENARIOS if s.name == "revoke-s3")
    (expected,) = revoke.expected
    result = drill.run_scenario(
        dataclasses.replace(revoke, expected=(dataclasses.replace(expected, trigger="none"),))
    )
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert set(failed) == {"trigger"}
    assert "names DeleteRolePolicy by arn:aws:iam::123456789012:user/operator" in failed["trigger"]


def test_an_inexact_restore_fails_the_scenario(drill: Drill, sandbox: Sandbox) -> None:
    leaky = Fault(
        "leaky-throttle", "throttle whose restore forgets", THROTTLE.capture, THROTTLE.apply, lambda *_: None
    )
    scenario = Scenario(
        "leaky",
        "a restore that leaves the concurrency behind",
        (Act(names.FUNCTION_NAME, (Injection(leaky, {"concurrency": 0}),)),),
        (ExpectedIncident(names.FUNCTION_NAME, frozenset({"throttling"})),),
    )
    operator = sandbox.session(names.OPERATOR)
    before = world_snapshot(operator)
    try:
        result = drill.run_scenario(scenario)
    finally:
        operator.client("lambda").delete_function_concurrency(FunctionName=names.FUNCTION_NAME)
    assert world_snapshot(operator) == before
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert set(failed) == {"world restored", "healthy after restore"}
    assert '"reserved_concurrency": null → "reserved_concurrency": 0' in failed["world restored"]
    assert Chaos(operator, say=lambda _: None).ledger.load(names.FUNCTION_NAME, "leaky-throttle") is None


def test_a_change_to_a_function_no_scenario_touched_is_found_at_the_lane_s_end(
    drill: Drill, sandbox: Sandbox
) -> None:
    """A scenario reads again only the functions it touched; every other one is compared at the lane's
    end, so a change to report-builder behind a data-processor scenario's back is still found."""
    calm = Scenario("calm", "healthy traffic, no fault", (Act(names.FUNCTION_NAME),), ())
    assert drill.run_scenario(calm).passed
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    lambda_.put_function_concurrency(FunctionName=names.REPORT_FUNCTION, ReservedConcurrentExecutions=3)
    try:
        unchanged = drill.closing_checks()[0]
    finally:
        lambda_.delete_function_concurrency(FunctionName=names.REPORT_FUNCTION)
    assert unchanged.name == "untouched functions unchanged"
    assert not unchanged.ok
    assert '"reserved_concurrency": null → "reserved_concurrency": 3' in unchanged.detail
    assert drill.closing_checks()[0].ok


def test_functions_named_by_any_form_of_function_name() -> None:
    calls = [
        {"FunctionName": "orders-api"},
        {"FunctionName": "report-builder:live"},
        {"FunctionName": "123456789012:function:order-worker"},
        {"FunctionName": "arn:aws:lambda:ca-central-1:123456789012:function:order-intake:3"},
        {"RoleName": "data-processor-role"},
    ]
    assert _functions_named(calls) == {"orders-api", "report-builder", "order-worker", "order-intake"}


def test_an_alarm_that_never_comes_fails_the_scenario(drill: Drill) -> None:
    silent = Scenario(
        "silent",
        "healthy, but an incident is expected",
        (Act(names.FUNCTION_NAME),),
        (ExpectedIncident(names.FUNCTION_NAME, frozenset({"unknown"})),),
    )
    result = drill.run_scenario(silent)
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert failed == {"incidents": "opened {'data-processor': 0} (expected {'data-processor': 1})"}


def test_an_incident_on_a_healthy_neighbour_fails_the_scenario(drill: Drill) -> None:
    """An incident nobody expected (orders-api throttled, while only report-builder was meant to fail)
    is counted against the scenario."""
    neighbour = next(s for s in SCENARIOS if s.name == "healthy-neighbour")
    throttled = dataclasses.replace(
        neighbour,
        acts=(
            neighbour.acts[0],
            dataclasses.replace(neighbour.acts[1], inject=(Injection(THROTTLE, {"concurrency": 0}),)),
        ),
    )
    result = drill.run_scenario(throttled)
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert failed == {
        "incidents": "opened {'orders-api': 1, 'report-builder': 1} (expected {'report-builder': 1})"
    }


def test_progress_rewrites_one_line_on_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress(out, live=True)
    progress.scenario(1, 2, "revoke-s3")
    progress.step("inject: iam-s3")
    progress.step("traffic: 1 failed")
    progress.finish(True, "permission_loss")
    lines = out.getvalue().split("\n")
    assert lines[0].count("\r\x1b[K") == 3  # each step and the result overwrite the same line
    assert lines[0].rsplit("\r\x1b[K", 1)[1].endswith("PASS  permission_loss")


def test_injections_label_their_parameters() -> None:
    assert Injection(THROTTLE, {"concurrency": 1}).label == "throttle(concurrency=1)"
    assert Injection(REVOKE_S3).label == "iam-s3"
