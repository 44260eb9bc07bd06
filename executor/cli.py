"""`incident-remediate`: a person's side of the approval gate, from a terminal.

    incident-remediate show <incident>                     the plan, its review, its digest and its state
    incident-remediate approve <incident> --digest <d>     approve the plan whose digest you were shown
    incident-remediate reject <incident> --digest <d>      refuse it
    incident-remediate revoke <incident> --digest <d>      withdraw an approval not used yet

The decision is written to incident-approvals as the caller's own AWS identity, which must be one the
executor counts (``REMEDIATION_APPROVERS``); then the executor's queue is asked to look. Without
``--digest`` on a terminal, the plan is shown and the digest shown is the one decided on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from executor.approvals import ApprovalRefused, Approvals, Approver
from executor.settings import ExecutorSettings
from supervisor.incident.lifecycle import APPROVAL_DEADLINE, EXECUTION, PLAN, PLAN_DIGEST, PLAN_REVIEW
from supervisor.incident.stage import sqs_client
from supervisor.incident.store import IncidentStore, Item, dynamodb_client, from_item, is_incident_id
from supervisor.remediation.queue import send_request

EXIT_REFUSED, EXIT_USAGE = 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="incident-remediate",
        description="Show an incident's remediation plan, and approve, reject or revoke it as your own AWS "
        "identity (settings from EXECUTOR_* and REMEDIATION_*; AWS from the standard chain).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="the plan, its review, its digest and where it stands")
    show.add_argument("incident", help="the incident id (<function>@<time>)")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    for name, what in (("approve", "approve"), ("reject", "reject"), ("revoke", "withdraw the approval of")):
        command = commands.add_parser(name, help=f"{what} the plan whose digest you were shown")
        command.add_argument("incident", help="the incident id (<function>@<time>)")
        command.add_argument(
            "--digest", help="the plan's digest, as `show` printed it (asked for if omitted)"
        )
    return parser


def read_view(store: IncidentStore, approvals: Approvals, incident: Item) -> dict[str, Any]:
    incident_id = str(incident["incident_id"])
    context = from_item(store.get_context(incident_id) or {})
    digest = incident.get(PLAN_DIGEST)
    decision = approvals.get(incident_id, str(digest)) if digest else None
    return {
        "incident_id": incident_id,
        "status": incident["status"],
        "reason": incident.get("error_reason"),
        "digest": digest,
        "approval_expires_at": incident.get(APPROVAL_DEADLINE),
        "plan": json.loads(context[PLAN]) if PLAN in context else None,
        "review": json.loads(context[PLAN_REVIEW]) if PLAN_REVIEW in context else None,
        "decision": decision,
        "execution": json.loads(context[EXECUTION]) if EXECUTION in context else None,
    }


def view_lines(view: dict[str, Any]) -> list[str]:
    """The view as a person reads it, one line each."""
    lines = [f"{view['incident_id']}: {view['status']}" + (f" ({view['reason']})" if view["reason"] else "")]
    plan, review = view["plan"], view["review"] or {}
    for line in review.get("unplanned", []):
        lines.append(f"  left out: {line}")
    for refusal in review.get("refused", []):
        lines.append(f"  refused by the critic: step {refusal['step']}: {refusal['reason']}")
    if plan:
        for number, step in enumerate(plan["steps"], start=1):
            call, inverse = step["call"], step["inverse"]
            lines.append(f"  step {number} [{step['risk']} risk] {step['action']}")
            lines.append(f"    call:    {call['service']} {call['operation']} {json.dumps(call['params'])}")
            lines.append(f"    only if: {json.dumps(step['precondition'])}")
            undo = f"{inverse['service']} {inverse['operation']} {json.dumps(inverse['params'])}"
            lines.append(f"    undo:    {undo}")
        recovery = plan["recovery"]
        within = f"{recovery['function']} within {recovery['within_seconds']} s"
        lines.append(f"  recovered when: {recovery['kind']} on {within}")
        lines += [f"  held before: {past} (the same calls, proven)" for past in plan.get("precedents") or []]
        lines += [
            f"  did not help before: {past} (waits for a person)" for past in plan.get("failed_before") or []
        ]
        lines.append(f"  digest: {view['digest']}  (approval lapses at {view['approval_expires_at']})")
    if view["decision"]:
        lines.append(f"  decision: {json.dumps(view['decision'], sort_keys=True)}")
    if view["execution"]:
        lines.append(f"  execution: {json.dumps(view['execution'], sort_keys=True)}")
    return lines


def _digest(args: argparse.Namespace, view: dict[str, Any]) -> str:
    """The digest decided on: ``--digest``, or the one shown and confirmed at a terminal."""
    if args.digest:
        return str(args.digest)
    if not sys.stdin.isatty():
        raise ApprovalRefused(f"pass --digest (from `incident-remediate show {view['incident_id']}`)")
    print("\n".join(view_lines(view)))
    answer = input(f"{args.command} this plan ({view['digest']})? type yes: ")
    if answer.strip().lower() != "yes":
        raise ApprovalRefused("not confirmed: nothing decided")
    return str(view["digest"])


def _decide(args: argparse.Namespace, settings: ExecutorSettings, session: boto3.Session) -> str:
    dynamodb = dynamodb_client(session)
    store = IncidentStore(dynamodb, settings.incident_state_table, settings.incident_context_table)
    approvals = Approvals(dynamodb, settings.incident_approvals_table)
    incident = store.get(args.incident)
    if incident is None:
        raise ApprovalRefused(f"no incident {args.incident} in {settings.incident_state_table}")
    view = read_view(store, approvals, incident)
    if args.command == "show":
        print(json.dumps(view, indent=2, sort_keys=True)) if args.json else print("\n".join(view_lines(view)))
        return ""
    caller = str(session.client("sts").get_caller_identity()["Arn"])
    approver = Approver(settings.approver_arns).identity(caller)
    if approver is None:
        raise ApprovalRefused(f"{caller} is not an approver (REMEDIATION_APPROVERS): nothing decided")
    digest = _digest(args, view)
    if args.command == "revoke":
        approvals.revoke(args.incident, digest, approver)
        return f"revoked by {approver}"
    approvals.decide(incident, digest, approver, "APPROVED" if args.command == "approve" else "REJECTED")
    done = f"{args.command}d by {approver}"
    if not settings.remediation_queue_url:
        return f"{done}; REMEDIATION_QUEUE_URL is not set: the executor was not asked to look"
    send_request(sqs_client(session), settings.remediation_queue_url, args.incident)
    return f"{done}; the executor was asked to take it on"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not is_incident_id(args.incident):
        print(
            f"incident-remediate: {args.incident!r} is not an incident id (<function>@<time>)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        settings = ExecutorSettings()
    except ValidationError as error:
        print(f"incident-remediate: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        said = _decide(args, settings, boto3.Session())
    except ApprovalRefused as refused:
        print(f"incident-remediate: {refused}", file=sys.stderr)
        return EXIT_REFUSED
    except (ClientError, BotoCoreError) as error:
        print(f"incident-remediate: AWS refused or failed: {error}", file=sys.stderr)
        return EXIT_REFUSED
    if said:
        print(said)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
