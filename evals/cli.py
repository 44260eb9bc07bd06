"""``incident-eval``: run models on live cases (or a recorded corpus), record that corpus, count tokens.

    incident-eval run --model M [--model M2 ...] [--case NAME ...] [--jobs N] [--out DIR] [--price ...]
    incident-eval run --recorded --model M [--cases DIR] [--out DIR] [--price MODEL=IN,OUT ...]
    incident-eval cases
    incident-eval record [--case NAME ...] [--out DIR] [--list]
    incident-eval tokens [--cases DIR] [--encoding o200k_base|cl100k_base]

Exit status: 0 when the command ran (scores are data, not failures); 1 on a broken corpus, a case that
could not be recorded or restored, or a live run whose sandbox could not start; 2 on bad usage (an unknown
model or case, a malformed --price).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evals import leaderboard, live, live_report, tokens
from evals.adversarial import ADVERSARIAL
from evals.corpus import CorpusError, load_corpus
from evals.definitions import DEFINITIONS, CaseDefinition, select
from evals.runner import build_models, run_models
from evals.score import CaseScore
from evals.settings import EvalSettings
from supervisor.agent.prices import Price
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from chaos.sandbox.sandbox import Sandbox

PROG = "incident-eval"
SCRIPTED_PRICE = Price(0.0, 0.0, "scripted, runs locally")


class UsageError(Exception):
    """Bad usage: exit status 2."""


def build_parser(settings: EvalSettings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="A benchmark of incident diagnoses any model can run."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    record = commands.add_parser(
        "record", help="record cases on a fresh sandbox (through the real injectors)"
    )
    record.add_argument("--case", action="append", metavar="NAME", help="only this case (repeatable)")
    record.add_argument("--out", type=Path, default=settings.cases_dir, help=f"default {settings.cases_dir}")
    record.add_argument("--list", action="store_true", help="list the cases that can be recorded")
    run = commands.add_parser(
        "run",
        help="run models on the live cases (or, with --recorded, the recorded corpus); write the leaderboard",
    )
    run.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="M",
        help=f"rules, bedrock:<id>, provider:model, or {ADVERSARIAL} (a scripted model that lies: partial "
        "numbers, zero counts as support, a fix for another function, ...; served at a local Bedrock "
        "endpoint for the run)",
    )
    run.add_argument("--case", action="append", metavar="NAME", help="only this live case (repeatable)")
    run.add_argument(
        "--jobs",
        type=int,
        default=settings.jobs,
        metavar="N",
        help=f"live: split the cases over N sandbox worlds run at once (1-8; default {settings.jobs})",
    )
    run.add_argument(
        "--recorded", action="store_true", help="replay the recorded corpus instead (fast, offline, narrower)"
    )
    run.add_argument(
        "--cases",
        type=Path,
        default=settings.cases_dir,
        help=f"with --recorded; default {settings.cases_dir}",
    )
    run.add_argument("--out", type=Path, default=settings.out_dir, help=f"default {settings.out_dir}/")
    run.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per million input,output tokens",
    )
    commands.add_parser("cases", help="list the live cases")
    count = commands.add_parser("tokens", help="input tokens of a one-call-per-tool investigation, per case")
    count.add_argument("--cases", type=Path, default=settings.cases_dir, help=f"default {settings.cases_dir}")
    count.add_argument(
        "--encoding",
        default=settings.encoding,
        help=f"{' or '.join(tokens.ENCODINGS)}; default {settings.encoding}",
    )
    return parser


def _record(args: argparse.Namespace, settings: EvalSettings) -> int:
    if args.list:
        for definition in DEFINITIONS:
            injected = ", ".join(i.injector for i in definition.injections) or "nothing"
            print(f"{definition.name:<20} expects {'+'.join(definition.faults):<20} injects {injected}")
        return 0
    try:
        definitions = select(args.case)
    except ValueError as error:
        raise UsageError(str(error)) from None
    from chaos.sandbox.sandbox import SandboxError, running_sandbox

    started = time.monotonic()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="incident-eval-") as state_dir,
            # The corpus is what the tools answer once CloudTrail has delivered the case's change (what a
            # final diagnosis reads): recorded with the delivery at once rather than minutes of waiting.
            running_sandbox(state_dir, cloudtrail_delay=0) as sandbox,
        ):
            print(f"sandbox ready at {sandbox.endpoint_url} ({time.monotonic() - started:.1f}s)")
            failed = _record_all(sandbox, definitions, args.out, settings)
    except SandboxError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    seconds = time.monotonic() - started
    print(f"{len(definitions) - len(failed)}/{len(definitions)} case(s) recorded in {seconds:.1f}s")
    return 1 if failed else 0


def _record_all(
    sandbox: Sandbox, definitions: list[CaseDefinition], out: Path, settings: EvalSettings
) -> list[str]:
    """Record and write each case; the names of those that failed."""
    from evals.record import Recorder, RecordError

    recorder = Recorder(sandbox, settings)
    failed = []
    for definition in definitions:
        print(f"{definition.name}: {definition.description}")
        try:
            path = recorder.write(recorder.record(definition), out)
        except (RecordError, LookupError, ValueError) as error:
            print(f"  FAILED: {error}", file=sys.stderr)
            failed.append(definition.name)
            continue
        print(f"  wrote {path}")
    return failed


def parse_override(text: str) -> tuple[str, Price]:
    """``MODEL=IN,OUT`` (USD per million input and output tokens); ValueError says what is wrong."""
    model, sep, numbers = text.rpartition("=")
    parts = numbers.split(",")
    if not sep or not model or len(parts) != 2:
        raise ValueError(f"--price {text!r}: expected MODEL=IN,OUT, e.g. rules=0,0 or bedrock:my-model=3,15")
    try:
        input_price, output_price = (float(part) for part in parts)
    except ValueError:
        raise ValueError(f"--price {text!r}: IN and OUT must be numbers (USD per million tokens)") from None
    if input_price < 0 or output_price < 0:
        raise ValueError(f"--price {text!r}: prices cannot be negative")
    return model, Price(input_price, output_price, "--price")


def _prices(overrides: list[str]) -> dict[str, Price]:
    try:
        return dict(parse_override(text) for text in overrides)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _progress(model: str, case: CaseScore) -> None:
    verdict = "ok" if case.passed else f"failed: {', '.join(case.failed)}"
    print(f"  {model} {case.case_id}: {'+'.join(case.fault_types) or '-'} ({verdict})", file=sys.stderr)


def _models(specs: list[str], supervisor: SupervisorSettings) -> dict[str, BaseChatModel]:
    """Each model asked for, in order: the adversary as a chat model (live, it is served at the wire)."""
    try:
        built = build_models([spec for spec in specs if spec != ADVERSARIAL], supervisor)
    except AgentError as error:
        raise UsageError(error.message) from None
    from evals.adversarial_models import AdversarialChatModel

    return {spec: built.get(spec) or AdversarialChatModel() for spec in specs}


def _run(args: argparse.Namespace) -> int:
    prices = {ADVERSARIAL: SCRIPTED_PRICE, **_prices(args.price)}
    supervisor = SupervisorSettings()
    models = _models(args.model, supervisor)  # a live run builds them in each lane: fail here
    if args.recorded:
        return _run_recorded(args, models, prices, supervisor)
    if args.cases != EvalSettings().cases_dir:
        raise UsageError("--cases names a recorded corpus: use it with --recorded")
    if not 1 <= args.jobs <= 8:
        raise UsageError(f"--jobs must be between 1 and 8, not {args.jobs}")
    try:
        cases = live.select_cases(args.case)
    except ValueError as error:
        raise UsageError(str(error)) from None
    print(
        f"{PROG}: {len(cases)} live case(s) x {len(args.model)} model(s), "
        f"{args.jobs} sandbox world(s) at once"
    )
    generated_at = datetime.now(UTC).isoformat(timespec="seconds")
    from evals.adversarial_models import serving_adversary

    served = {ADVERSARIAL: serving_adversary}
    scored = live.run_live(list(models), cases, args.out, args.jobs, prices, served)
    md, js = live_report.write(scored, generated_at, args.out)
    print("\n" + live_report.totals_table(scored))
    print(f"\nleaderboard: {md}, {js}")
    unrun = [f"{model.model}: {', '.join(model.unrun)}" for model in scored if model.unrun]
    if unrun:
        print(
            f"{PROG}: not run (see the lane logs under {args.out / 'runs'}): {'; '.join(unrun)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _run_recorded(
    args: argparse.Namespace,
    models: dict[str, BaseChatModel],
    prices: dict[str, Price],
    supervisor: SupervisorSettings,
) -> int:
    cases = load_corpus(args.cases)
    scores = asyncio.run(run_models(models, cases, supervisor, prices, _progress))
    board = leaderboard.Leaderboard(
        scores, [case.id for case in cases], str(args.cases), datetime.now(UTC).isoformat(timespec="seconds")
    )
    md, js = leaderboard.write(board, args.out / "recorded")
    print(leaderboard.table(board))
    print(f"\nleaderboard: {md}, {js}")
    return 0


def _cases() -> int:
    for case in live.LIVE_CASES:
        print(f"{case.name:<26} expects {case.expected_label:<32} {case.title}")
    return 0


def _tokens(args: argparse.Namespace) -> int:
    try:
        counter = tokens.token_counter(args.encoding)
    except ValueError as error:
        raise UsageError(str(error)) from None
    text, _ = tokens.report(load_corpus(args.cases), counter, SupervisorSettings())
    print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    settings = EvalSettings()
    args = build_parser(settings).parse_args(argv)
    try:
        if args.command == "record":
            return _record(args, settings)
        if args.command == "run":
            return _run(args)
        if args.command == "cases":
            return _cases()
        return _tokens(args)
    except UsageError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    except CorpusError as error:
        print(f"{PROG}: broken corpus: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
