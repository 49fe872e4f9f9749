"""The `umni` command line.

Exit codes: 0 when a run completed (recorded node failures included: they are results too),
1 when it could not complete, 2 on usage or input errors (nothing was run), 3 when it completed
but the share of failed nodes exceeds `--fail-on-error`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any, NoReturn

from umni.util.errors import InputError, UmniError
from umni.util.secrets import scrub

EXIT_OK, EXIT_INCOMPLETE, EXIT_INPUT = 0, 1, 2
#: the run completed, but more nodes failed than --fail-on-error allows
EXIT_FAILURES = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 on usage errors; keep that, say it plainly
        self.print_usage(sys.stderr)
        print(f"umni: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key, value


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", type=Path, help="case file or folder (default: the bundled set)")
    p.add_argument("--model", help="backend SPEC bound to every role it fills, e.g. sim/umm")
    p.add_argument("--role", action="append", default=[], metavar="ROLE=SPEC", help="bind one role (repeatable)")
    p.add_argument("--out", type=Path, help="run directory; the same directory resumes (default: runs/<protocol>-<hash of the command>)")
    p.add_argument("--cache", metavar="URL", help="result store shared across runs: a directory, sqlite:///PATH or "
                   "postgresql://USER@HOST/DB (default: $UMNI_CACHE or the user cache dir)")
    p.add_argument("--blobs", metavar="URL", help="image store: a directory or file:///DIR (default: blobs/ beside a "
                   "SQLite cache; with PostgreSQL a directory every machine mounts)")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N of the cases, into <out>-shardIofN ('slurm': "
                   "from SLURM_ARRAY_TASK_ID/COUNT); the same command without --shard assembles the run from the store")
    p.add_argument("--phase", metavar="ROLE,…", help="call only these roles' backends; other nodes not in the store stay "
                   "pending for a later run (e.g. --phase generate, then --phase judge)")
    p.add_argument("--limit", type=int, help="run only the first N cases (N >= 1)")
    p.add_argument("--concurrency", type=int, help="calls in flight per backend, >= 1 (a spec's ?concurrency= wins)")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="Ray cluster serving specs with placement=ray: 'auto' joins a "
                   "running one or starts a local one on 127.0.0.1; the cache and run directory stay here")
    p.add_argument("--seed", type=int, help="run seed (default 0)")
    p.add_argument("--option", action="append", default=[], type=_key_value, metavar="KEY=VALUE", help="protocol option (repeatable)")
    p.add_argument("--max-attempts", type=int, help="tries per call for retryable errors, >= 1 (default 5)")
    p.add_argument("--retry-budget", type=float, help="seconds one call may spend retrying, > 0 (default 600)")
    p.add_argument("--call-timeout", type=float, help="seconds one attempt may take before it is retried, > 0 (default 3600)")
    p.add_argument("--prices", type=Path, help="price table (YAML) for an estimated cost (default: $UMNI_PRICES)")
    p.add_argument("--quiet", action="store_true", help="no live progress display")
    p.add_argument("--no-preflight", action="store_true", help="skip the probe of each OpenAI-compatible server "
                   "before the run (GET /models; an empty POST to each images endpoint a bound role calls)")
    p.add_argument("--fail-on-error", type=float, nargs="?", const=0.0, default=None, metavar="SHARE",
                   help="exit 3 when the share of failed or blocked nodes exceeds SHARE (0-1; alone: any failure)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="umni", description="Evaluate unified multimodal models as async graphs.")
    parser.add_argument("--version", action="version", version=f"umni {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run (or resume) a protocol")
    run.add_argument("protocol")
    _add_run_args(run)

    sweep = sub.add_parser("sweep", help="run protocols x models x bindings x seeds from a YAML file")
    sweep.add_argument("file", type=Path)
    sweep.add_argument("--shard", metavar="I/N", help="run only sweep shard I of N of the work units (runs x the "
                       "file's `shards:` case shards; 'slurm': from the array task); the shard that finds every "
                       "unit done writes the leaderboard")
    sweep.add_argument("--emit", choices=["slurm"], help="write <out>/sweep.sbatch, an array job of one task per work "
                       "unit (resubmit it as it is: finished units are skipped), instead of running")

    board = sub.add_parser("leaderboard", help="tables of several runs (run directories or sweep folders)")
    board.add_argument("dirs", type=Path, nargs="+")
    board.add_argument("--out", type=Path, help="write leaderboard.md/.csv/.json here (default: print Markdown)")

    rejudge = sub.add_parser("rejudge", help="re-score a run with another judge; nothing else is re-run")
    rejudge.add_argument("run", type=Path)
    rejudge.add_argument("--role", required=True, metavar="judge=SPEC", help="the new judge, e.g. judge=openai/gpt-4o")
    rejudge.add_argument("--out", type=Path, help="new run directory (default: RUN-rejudged)")
    rejudge.add_argument("--concurrency", type=int)

    agree = sub.add_parser("agree", help="judge agreement between two runs, or a run and human ratings")
    agree.add_argument("runs", type=Path, nargs="+", metavar="RUN")
    agree.add_argument("--human", type=Path, help="CSV with case_id, metric, rating")
    agree.add_argument("--plot", type=Path, help="scatter plot path (with --human; default RUN/agreement.png)")
    agree.add_argument("--human-scale", metavar="LOW:HIGH", help="scale of the human ratings (e.g. 1:5); they are rescaled onto the run's scale")

    protocols = sub.add_parser("protocols", help="list protocols and the roles they use")
    protocols.add_argument("--options", action="store_true", help="also list each protocol's --option keys with defaults")

    view = sub.add_parser("view", help="browse runs and sweeps in a local web viewer (127.0.0.1)")
    view.add_argument("dirs", type=Path, nargs="*", metavar="DIR", help="run directories or sweep folders (default: runs)")
    view.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    view.add_argument("--open", action="store_true", help="open the page in the default browser")

    runs = sub.add_parser("runs", help="list run directories: protocol, bindings, date, headline score")
    runs.add_argument("dirs", type=Path, nargs="*", metavar="DIR", help="folders to search (default: runs)")
    sub.add_parser("backends", help="list backend providers and the roles they fill")
    status = sub.add_parser("status", help="work units of a split sweep (done, running with heartbeat age, pending), "
                            "or a run directory and its shards")
    status.add_argument("dir", type=Path, metavar="DIR")

    cases = sub.add_parser("cases", help="check a case file, or print a case schema")
    cases_sub = cases.add_subparsers(dest="cases_command", required=True, parser_class=_Parser)
    check = cases_sub.add_parser("check", help="validate a case file and report what is wrong or repaired")
    check.add_argument("protocol")
    check.add_argument("path", type=Path, nargs="?")
    check.add_argument("--option", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                       help="protocol option that changes how cases are read (e.g. wise set=legacy; repeatable)")
    schema = cases_sub.add_parser("schema", help="print the JSON Schema of a protocol's cases")
    schema.add_argument("protocol")
    return parser


def _default_out(request: Any, protocol: Any, options: Any, case_set: Any, bindings: Any) -> Path:
    from umni.store.artifacts import fingerprint

    tag = fingerprint([protocol.name, str(case_set.path.resolve()), bindings.identities(), options.model_dump(mode="json"), request.seed])
    return Path("runs") / f"{protocol.name}-{tag[:10]}"


def run_config_from_args(args: argparse.Namespace) -> Any:
    """The RunConfig of `umni run`: only the options the user gave are set (run.json keeps those)."""
    from umni.run.config import build_config

    given = {
        "protocol": args.protocol,
        "cases": args.cases,
        "model": args.model,
        "roles": args.role or None,
        "cache": args.cache,
        "blobs": getattr(args, "blobs", None),
        "shard": getattr(args, "shard", None),
        "phase": getattr(args, "phase", None),
        "limit": args.limit,
        "concurrency": args.concurrency,
        "ray": getattr(args, "ray", None),
        "seed": args.seed,
        "options": dict(args.option) or None,
        "max_attempts": args.max_attempts,
        "retry_budget": args.retry_budget,
        "call_timeout": args.call_timeout,
        "prices": args.prices,
        "progress": False if args.quiet else None,
        "fail_on_error": getattr(args, "fail_on_error", None),
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if args.out is not None:
        fields["out"] = args.out
    return build_config(fields)


def cmd_run(args: argparse.Namespace) -> int:
    from umni.run.evaluation import evaluate, prepare

    request = run_config_from_args(args)
    if request.model is None and not request.roles:
        raise InputError("bind a model: --model SPEC (e.g. --model sim/umm) and/or --role ROLE=SPEC")
    prepared = prepare(request)
    if args.out is None:
        request.out = _default_out(request, *prepared)
    if not args.no_preflight:
        from umni.run.preflight import preflight

        for problem in preflight(prepared.bindings):
            _warn_preflight(problem)
    result = evaluate(request, prepared)
    summary = result.summary
    counts = summary["counts"]
    failed = {k: v for k, v in summary["failures"].items() if v}
    print(
        f"{summary['title']}: {counts['cases']} cases, {counts['nodes']} nodes "
        f"({counts['computed']} computed, {counts['cached']} cached, {counts['failed']} failed, {counts['blocked']} blocked)"
    )
    if failed:
        print("failures (counted apart from scores): " + ", ".join(f"{k} {v}" for k, v in failed.items()))
    if counts["skipped_cases"]:
        print(f"skipped cases: {counts['skipped_cases']} (reasons in summary.json)")
    if summary.get("extended"):
        print(summary["extended"])
    scores = summary["scores"]
    if "overall" in scores:
        from umni.reporting.format import format_cell
        from umni.reporting.leaderboard import run_coverage

        cell, _ = run_coverage(summary)
        mark = "*  (* computed on incomplete coverage)" if cell.incomplete else ""
        print(f"overall: {format_cell(scores['overall'])} ({cell.answered}/{cell.total} nodes answered){mark}")
    from umni.reporting.leaderboard import coverage_line

    print(coverage_line(summary))
    print(f"summary: {result.out / 'summary.json'}")
    print(f"report:  {result.report}")
    print(f"browse:  umni view {result.out}")
    return _failure_exit(summary, request.fail_on_error)


def _failure_exit(summary: dict[str, Any], threshold: float | None) -> int:
    """EXIT_FAILURES when the share of failed or blocked nodes exceeds `threshold` (None: never)."""
    from umni.reporting.leaderboard import failure_share

    share = failure_share(summary)
    if threshold is None:
        if share >= 1.0:  # a typo'd base_url or a missing key: say it, not only in the counts above
            print("umni: warning: every node failed or was blocked (see failures above; a wrong base_url, model name "
                  "or API key?); add --fail-on-error to exit non-zero when this happens", file=sys.stderr)
        return EXIT_OK
    if share > threshold:
        print(f"umni: {100 * share:.1f}% of nodes failed or were blocked, above --fail-on-error {threshold:g}", file=sys.stderr)
        return EXIT_FAILURES
    return EXIT_OK


def _print_run(summary: dict[str, Any], out: Path) -> None:
    from umni.reporting.leaderboard import coverage_line

    counts = summary["counts"]
    print(f"  {out}: {counts['cases']} cases, {counts['computed']} computed, {counts['cached']} cached, calls {summary['calls']}")
    print(f"    {coverage_line(summary)}")


def _warn_preflight(problem: str) -> None:
    print(f"umni: warning: pre-flight: {problem}", file=sys.stderr)


def cmd_sweep(args: argparse.Namespace) -> int:
    from umni.run.sweep import emit_slurm, run_sweep, run_sweep_shard

    if args.emit and args.shard:
        raise InputError("--emit writes the job script of every shard; give it without --shard")
    if args.emit:
        script = emit_slurm(args.file)
        print(f"slurm script: {script}")
        print(f"submit:       sbatch {script}   (again after a failure: finished units are skipped)")
        return EXIT_OK
    if args.shard:
        outcome = run_sweep_shard(args.file, args.shard, warn=_warn_preflight)
        for result in outcome.ran:
            _print_run(result.summary, result.out)
        if outcome.skipped:
            print(f"  skipped {len(outcome.skipped)} unit(s) already done")
        if outcome.assembled is not None:
            print(f"every one of {outcome.units} units is done; leaderboard: {outcome.assembled / 'leaderboard.md'}")
        else:
            print(f"the leaderboard is written when all {outcome.units} units are done (or by `umni sweep {args.file}`)")
        return EXIT_OK
    out, results = run_sweep(args.file, warn=_warn_preflight)
    for result in results:
        _print_run(result.summary, result.out)
    print(f"leaderboard: {out / 'leaderboard.md'}")
    print(f"report:      {out / 'report.html'}")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from umni.run.status import status_of

    status = status_of(args.dir)
    for line in status.lines:
        print(line)
    print(", ".join(f"{value} {key}" for key, value in status.counts.items()))
    if status.totals:
        print("finished: " + ", ".join(f"{value} {key}" for key, value in status.totals.items()))
    return EXIT_OK


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from umni.reporting.leaderboard import build_tables, find_runs, write_leaderboard

    tables = build_tables(find_runs(args.dirs))
    if args.out:
        paths = write_leaderboard(tables, args.out)
        print("\n".join(f"{kind}: {path}" for kind, path in paths.items()))
    else:
        print("\n\n".join(t.markdown() for t in tables))
    return EXIT_OK


def cmd_rejudge(args: argparse.Namespace) -> int:
    from umni.run.rejudge import rejudge
    from umni.util.spec import parse_role_binding

    role, spec = parse_role_binding(args.role)
    if role != "judge":
        raise InputError(f"rejudge rebinds the judge only (--role judge=SPEC), got role '{role}'")
    result = rejudge(args.run, str(spec), args.out, concurrency=args.concurrency)
    _print_run(result.summary, result.out)
    print(f"judges: {result.summary['lineage']['judges']}")
    print(f"report: {result.report}")
    return EXIT_OK


def cmd_agree(args: argparse.Namespace) -> int:
    from umni.reporting.agreement import compare, compare_human, read_human, run_judgements

    if args.human:
        if len(args.runs) != 1:
            raise InputError("with --human, give exactly one run")
        _, items = run_judgements(args.runs[0])
        from umni.reporting.agreement import parse_scale

        scale = parse_scale(args.human_scale) if args.human_scale else None
        result = compare_human(items, read_human(args.human), args.plot or args.runs[0] / "agreement.png", human_scale=scale)
        for item in result["unmatched"][:20]:
            print(f"unmatched rating (no judgement in the run): case {item['case_id']}, metric {item['metric']}", file=sys.stderr)
        if len(result["unmatched"]) > 20:
            print(f"... and {len(result['unmatched']) - 20} more unmatched ratings (listed in the JSON)", file=sys.stderr)
    else:
        if len(args.runs) != 2:
            raise InputError("give two runs to compare (or one run and --human FILE)")
        (pa, a), (pb, b) = run_judgements(args.runs[0]), run_judgements(args.runs[1])
        if pa != pb:
            raise InputError(f"the runs are of different protocols ({pa}, {pb})")
        result = compare(a, b)
    print(json.dumps(result, indent=2))
    return EXIT_OK


def cmd_protocols(args: argparse.Namespace) -> int:
    from umni.protocols.protocol import get_protocol, known_protocols
    from umni.reporting.runs import option_lines

    for name in known_protocols():
        try:
            protocol = get_protocol(name)
        except Exception as exc:  # a protocol whose module is broken is still listed, with why
            print(f"{name:<10} (unavailable: {exc})")
            continue
        print(f"{name:<10} {protocol.title}  roles: {', '.join(protocol.roles)}")
        if args.options:
            for line in option_lines(protocol.Options):
                print(f"    {line}")
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:
    from umni.reporting.viewer import serve

    serve(args.dirs or [Path("runs")], port=args.port, open_browser=args.open)
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from umni.reporting.runs import find_run_dirs, format_runs

    print(format_runs(find_run_dirs(args.dirs or [Path("runs")])))
    return EXIT_OK


def _version() -> str:
    from umni.util.version import __version__

    return __version__


def cmd_backends(args: argparse.Namespace) -> int:
    from umni.backends.contract import backend_class, known_providers

    for provider in known_providers():
        try:
            cls = backend_class(provider)
        except ModuleNotFoundError as exc:
            from umni.util.extras import describe_missing

            print(f"{provider:<10} (unavailable: {describe_missing(exc)})")
            continue
        except Exception as exc:
            print(f"{provider:<10} (unavailable: {exc})")
            continue
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        print(f"{provider:<10} roles: {', '.join(sorted(cls.roles))}  {doc}")
    return EXIT_OK


def cmd_cases(args: argparse.Namespace) -> int:
    from umni.protocols.protocol import get_protocol

    protocol = get_protocol(args.protocol)
    if args.cases_command == "schema":
        print(json.dumps(protocol.case_schema(), indent=2))
        return EXIT_OK
    options = protocol.parse_options(dict(args.option))
    path = args.path or protocol.bundled_cases()
    case_set = protocol.load(path, options)
    _check_case_images(protocol, case_set, options)
    print(f"{path}: {len(case_set.cases)} cases valid")
    for note in case_set.notes:
        print(f"  repaired/noted: record {note.record}, field '{note.field}': {note.message}")
    for skipped in case_set.skipped:
        print(f"  will be skipped: {skipped.case_id}: {skipped.reason}")
    return EXIT_OK


def _check_case_images(protocol: Any, case_set: Any, options: Any) -> None:
    """Decode the header of every image the cases reference (size limit included); exit 2 on any."""
    from umni.protocols.caseio import case_image_problems, raise_if_any

    raise_if_any(case_image_problems(protocol.build(case, options) for case in case_set.cases))


COMMANDS = {
    "run": cmd_run,
    "sweep": cmd_sweep,
    "leaderboard": cmd_leaderboard,
    "rejudge": cmd_rejudge,
    "agree": cmd_agree,
    "protocols": cmd_protocols,
    "view": cmd_view,
    "runs": cmd_runs,
    "backends": cmd_backends,
    "status": cmd_status,
    "cases": cmd_cases,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, read so that `umni cases check PROTOCOL --option K=V PATH` works: argparse
    fills both of that command's positionals before the options and would leave PATH over."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    late_path = args.command == "cases" and args.cases_command == "check" and args.path is None
    if late_path and len(extra) == 1 and not extra[0].startswith("-"):
        args.path, extra = Path(extra[0]), []
    if extra:
        parser.error("unrecognized arguments: " + " ".join(extra))
    return args


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's cancel, `kill`): stops the command as Ctrl-C does, so what finished is kept."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _interruption(group: BaseExceptionGroup) -> KeyboardInterrupt | None:
    """The interruption a group of failed tasks holds (Ctrl-C or SIGTERM reach one task of a sweep)."""
    for exc in group.exceptions:
        found = _interruption(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, KeyboardInterrupt):
            return found
    return None


def _stopped(exc: KeyboardInterrupt) -> int:
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    print(f"umni: {what}; run the same command again to resume", file=sys.stderr)
    return EXIT_INCOMPLETE


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if threading.current_thread() is not threading.main_thread():
        return _main(args)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _main(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(args: argparse.Namespace) -> int:
    try:
        return COMMANDS[args.command](args)
    except BaseExceptionGroup as group:  # tasks of a sweep stopped together: one line, no traceback
        stop = _interruption(group)
        if stop is None:
            raise
        return _stopped(stop)
    except InputError as exc:
        print(f"umni: error: {scrub(exc.describe())}", file=sys.stderr)  # a spec's base_url password, say
        return EXIT_INPUT
    except ModuleNotFoundError as exc:  # an optional dependency: name the extra that brings it
        from umni.util.extras import describe_missing

        print(f"umni: error: {describe_missing(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except UmniError as exc:
        print(f"umni: error: {scrub(str(exc))}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except OSError as exc:  # a file system fault no layer named more precisely: still one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"umni: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INCOMPLETE


if __name__ == "__main__":
    sys.exit(main())
