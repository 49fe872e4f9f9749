"""What each `umni` command does, one function each, called with the parsed arguments."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from umni.cli.parser import EXIT_FAILURES, EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, invoked_as
from umni.store.runfiles import LEADERBOARD_MD
from umni.util.errors import InputError

if TYPE_CHECKING:
    from umni.store.runfolder import Summary


def _default_out(request: Any, protocol: Any, options: Any, case_set: Any, bindings: Any) -> Path:
    from umni.store.hashing import fingerprint

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
        "label": getattr(args, "label", None),
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
    _note_locks(request.cache, Path(request.out))
    if not args.no_preflight:
        from umni.run.preflight import preflight

        for problem in preflight(prepared.bindings):
            _warn_preflight(problem)
    result = evaluate(request, prepared)
    summary = result.summary
    counts = summary.counts
    failed = {k: v for k, v in summary.failures.items() if v}
    print(
        f"{summary.title}: {counts.cases} cases, {counts.nodes} nodes "
        f"({counts.computed} computed, {counts.cached} cached, {counts.failed} failed, {counts.blocked} blocked)"
    )
    if counts.cases:
        print(_nodes_by_role(summary))
    if failed:
        print("failures (counted apart from scores): " + ", ".join(f"{k} {v}" for k, v in failed.items()))
    if counts.skipped_cases:
        print(f"skipped cases: {counts.skipped_cases} (reasons in summary.json)")
    if summary.extended:
        print(summary.extended)
    if "overall" in summary.scores:
        from umni.reporting.format import format_cell
        from umni.reporting.leaderboard import run_coverage

        cell, _ = run_coverage(summary)
        if summary.scores.overall is None:  # nothing was computed, on any coverage: say why instead
            mark = f"; {summary.why_no_overall}" if summary.why_no_overall else ""
        else:
            mark = "*  (* computed on incomplete coverage)" if cell.incomplete else ""
        print(f"overall: {format_cell(summary.scores['overall'])} ({cell.answered}/{cell.total} nodes answered){mark}")
    from umni.reporting.leaderboard import coverage_line

    print(coverage_line(summary))
    print(f"summary: {result.folder.summary_json}")
    print(f"report:  {result.report}")
    print(f"browse:  {invoked_as()} view {shlex.quote(str(result.out))}")
    return _failure_exit(summary, request.fail_on_error)


def _failure_exit(summary: Summary, threshold: float | None) -> int:
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


def _nodes_by_role(summary: Summary) -> str:
    """Which roles' nodes this invocation computed and which it took from the store: after a role is
    rebound, only the nodes depending on it are computed again."""
    nodes = summary.this_invocation.nodes if summary.this_invocation is not None else None
    if not nodes:
        return "nodes by role: none run (every case was finished by an earlier invocation)"
    return "nodes by role: " + "; ".join(
        f"{role} " + ", ".join(f"{n} {status}" for status, n in statuses.items()) for role, statuses in nodes.items()
    )


def _print_run(summary: Summary, out: Path) -> None:
    from umni.reporting.leaderboard import coverage_line

    counts = summary.counts
    print(f"  {out}: {counts.cases} cases, {counts.computed} computed, {counts.cached} cached, calls {summary.calls}")
    if counts.cases:
        print(f"    {_nodes_by_role(summary)}")
    print(f"    {coverage_line(summary)}")


def _warn_preflight(problem: str) -> None:
    print(f"umni: warning: pre-flight: {problem}", file=sys.stderr)


def _say(line: str) -> None:
    print(f"umni: {line}", file=sys.stderr)


def _note_locks(cache: str | None, folder: Path) -> None:
    """One line at start when the run's locks depend on the filesystem (SQLite on NFS, Lustre, …)."""
    from umni.store.urls import lock_note

    location: str | Path
    if cache is not None:
        location = cache
    else:  # the user cache directory (platformdirs) only when no store is named
        from umni.store.location import default_cache_dir

        location = default_cache_dir()
    note = lock_note(location, folder)
    if note is not None:
        _say(f"note: {note}")


def cmd_sweep(args: argparse.Namespace) -> int:
    modes = [flag for flag, given in (("--emit", args.emit), ("--shard", args.shard), ("--task", args.task), ("--assemble", args.assemble)) if given]
    if len(modes) > 1:
        raise InputError(f"{' and '.join(modes)} are different ways to run a sweep; give one of them")
    if args.emit:
        from umni.run.sweep import emit_slurm

        submit = emit_slurm(args.file, warn=_say)
        print(f"job scripts: {submit.parent / 'slurm'}/*.sbatch")
        print(f"submit:      bash {submit}   (again after a failure: finished units are skipped)")
        return EXIT_OK
    if args.shard or args.task:  # most tasks of a resubmitted array: answered from the plan when it can
        from umni.run.done_task import done_task

        known = done_task(args.file, args.task or args.shard, emitted=bool(args.task))
        if known is not None:
            _note_locks(known.cache, known.out)
            _print_task_end(args, skipped=known.skipped, busy=[], units=known.units,
                            assembled=known.out if known.assembled else None, assembled_before=known.assembled)
            return EXIT_OK
    from umni.run.sweep import assemble_sweep, load_sweep, run_sweep, run_sweep_shard, run_sweep_task
    from umni.run.units import UnitBook

    sweep = load_sweep(args.file)
    assert sweep.out is not None
    _note_locks(sweep.cache, sweep.out)
    if args.assemble:
        out, results, left = assemble_sweep(args.file, warn=_warn_preflight)
        if left:
            for unit in left:
                record = UnitBook(out).record(unit.name)
                state = record.state if record is not None else "pending"
                print(f"  {unit.name} {state}: {unit.out}" + (f" (phase {unit.phase + 1})" if unit.phase is not None else ""))
            _say(f"error: {len(left)} unit(s) not done; resubmit submit.sh (finished units are skipped) or run `umni sweep {args.file}`")
            return EXIT_INCOMPLETE
        for result in results:
            _print_run(result.summary, result.out)
        print(f"leaderboard: {out / 'leaderboard.md'}")
        return EXIT_OK
    if args.shard or args.task:
        outcome = run_sweep_task(args.file, args.task, warn=_warn_preflight) if args.task else run_sweep_shard(args.file, args.shard, warn=_warn_preflight)
        for result in outcome.ran:
            _print_run(result.summary, result.out)
        _print_task_end(args, skipped=len(outcome.skipped), busy=[u.name for u in outcome.busy], units=outcome.units,
                        assembled=outcome.assembled, assembled_before=outcome.assembled_before)
        return EXIT_OK
    out, results = run_sweep(args.file, warn=_warn_preflight)
    for result in results:
        _print_run(result.summary, result.out)
    _print_pools(out)
    print(f"leaderboard: {out / 'leaderboard.md'}")
    print(f"report:      {out / 'report.html'}")
    return EXIT_OK


def _print_task_end(args: argparse.Namespace, *, skipped: int, busy: list[str], units: int, assembled: Path | None, assembled_before: bool) -> None:
    """The end of a sweep task's output, the same whether it ran units or was answered from the plan
    (`assembled`: the sweep's folder when its leaderboard is written)."""
    if skipped:
        print(f"  skipped {skipped} unit(s) already done")
    if busy:
        print(f"  left {len(busy)} unit(s) to the process running them: {', '.join(busy)}")
    if assembled is not None:
        again = f" (assembled by an earlier task; `umni sweep {args.file}` assembles it again)" if assembled_before else ""
        print(f"every one of {units} units is done; leaderboard: {assembled / LEADERBOARD_MD}{again}")
    elif args.task:
        print(f"task {args.task} finished; the assemble job writes the leaderboard")
    else:
        print(f"the leaderboard is written when all {units} units are done (or by `umni sweep {args.file}`)")


def _print_pools(out: Path) -> None:
    """What each Ray pool of the sweep held (all its invocations), when models took turns on Ray."""
    from umni.reporting.pool_hours import pools_held

    for pool in pools_held(out):
        print(
            f"  pool {pool['spec']}: loaded {pool['loads']}×, held {pool['seconds']:.1f} s "
            f"({pool['cpu_hours']:.4f} CPU-h, {pool['gpu_hours']:.4f} GPU-h)"
        )


def cmd_status(args: argparse.Namespace) -> int:
    from umni.run.status import status_of

    status = status_of(args.dir, blobs=args.blobs)
    for line in status.lines:
        print(line)
    print(", ".join(f"{value} {key}" for key, value in status.counts.items()))
    if status.totals:
        print(f"{status.totals_label}: " + ", ".join(f"{value} {key}" for key, value in status.totals.items()))
    for note in status.notes:
        print(note)
    return EXIT_INPUT if status.counts.get("unreadable") else EXIT_OK


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from umni.reporting.leaderboard import build_tables, find_runs, label_runs, long_csv, write_leaderboard
    from umni.reporting.tables import tables_csv

    if args.paired:
        if args.calibration:
            raise InputError("--paired compares the runs' own headlines; --calibration adds estimates to the tables: give one of them")
        return _paired(args)
    runs = find_runs(args.dirs)
    tables = build_tables(runs, layout=args.layout)
    if args.calibration:
        from umni.reporting.calibration import calibrated_table, read_calibration

        tables += calibrated_table(runs, [(path, read_calibration(path)) for path in args.calibration])
    if args.group is not None:
        order = [g.strip() for g in args.group.split(",") if g.strip()]
        tables = [t.grouped(order) for t in tables]
    if args.compare_paper:
        from umni.reporting.paper_compare import compare_with_papers

        compared = compare_with_papers(label_runs(runs))
        tables += compared.tables
        for line in compared.lines:
            print(line, file=sys.stderr)
    if args.out:
        paths = write_leaderboard(tables, args.out, tidy=tables if args.layout == "tidy" else build_tables(runs, layout="tidy"), plain=args.plain)
        print("\n".join(f"{kind}: {path}" for kind, path in paths.items()))
    elif args.format == "csv":
        print(long_csv(tables) if args.layout == "tidy" else tables_csv(tables), end="")
    elif args.format == "latex":
        print("\n\n".join(t.latex(plain=args.plain) for t in tables))
    else:
        print("\n\n".join(t.markdown(plain=args.plain) for t in tables))
    return EXIT_OK


def _paired(args: argparse.Namespace) -> int:
    """`leaderboard --paired`: every pair of runs of each protocol, printed in the chosen format."""
    from umni.reporting.leaderboard import find_runs, label_runs
    from umni.reporting.paired import compare_all, pairs_csv

    runs = label_runs(find_runs(args.dirs))
    if len(runs) < 2:
        raise InputError(f"--paired compares runs of one protocol; these paths hold {len(runs)} run(s)", path=args.dirs[0])
    matrices = compare_all(runs)
    if args.format == "csv":
        text = pairs_csv(matrices)
    elif args.format == "latex":
        text = "\n\n".join(m.table().latex(plain=True) for m in matrices)
    else:
        text = "\n\n".join(m.markdown() for m in matrices) + "\n"
    if args.out:
        from umni.store.atomic import atomic_write_text

        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "paired.csv", pairs_csv(matrices))
        atomic_write_text(args.out / "paired.md", "\n\n".join(m.markdown() for m in matrices) + "\n")
        print(f"paired: {args.out / 'paired.md'}\npaired csv: {args.out / 'paired.csv'}")
    else:
        print(text, end="" if text.endswith("\n") else "\n")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from umni.reporting.calibration import calibrate, write_calibration

    calibration = calibrate(args.reference, args.substitute)
    write_calibration(calibration, args.out)
    print(calibration.text())
    print(f"calibration: {args.out}")
    return EXIT_OK


def cmd_power(args: argparse.Namespace) -> int:
    from umni.reporting.leaderboard import find_runs, label_runs
    from umni.reporting.power import power_estimate

    runs = label_runs(find_runs(args.runs))
    if len(runs) > 2:
        raise InputError(f"power reads one run (or two runs of the same cases); these paths hold {len(runs)}", path=args.runs[0])
    estimate = power_estimate(runs[0], args.delta, alpha=args.alpha, power=args.power, other=runs[1] if len(runs) == 2 else None)
    print(estimate.text())
    return EXIT_OK


def cmd_methods(args: argparse.Namespace) -> int:
    from umni.reporting.methods import methods_of

    print(methods_of(args.runs).render(args.format), end="")
    return EXIT_OK


def cmd_rejudge(args: argparse.Namespace) -> int:
    from umni.run.rejudge import rejudge
    from umni.util.spec import parse_role_binding

    role, spec = parse_role_binding(args.role)
    if role != "judge":
        raise InputError(f"rejudge rebinds the judge only (--role judge=SPEC), got role '{role}'")
    result = rejudge(args.run, str(spec), args.out, concurrency=args.concurrency)
    _print_run(result.summary, result.out)
    assert result.summary.lineage is not None  # a re-judged run names where it came from
    print(f"judges: {result.summary.lineage.judges.model_dump()}")
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
    try:
        from umni.reporting.viewer import serve
        from umni.run.status import status_of

        serve(args.dirs or [Path("runs")], port=args.port, open_browser=args.open, host=args.host,
              status=lambda path: status_of(path).to_json())  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before the server ran: nothing to resume
        pass
    print("umni view: stopped", file=sys.stderr)  # Ctrl-C or SIGTERM: how a viewer ends
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from umni.reporting.runs import find_run_dirs, format_runs

    print(format_runs(find_run_dirs(args.dirs or [Path("runs")])))
    return EXIT_OK


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
    "power": cmd_power,
    "methods": cmd_methods,
    "rejudge": cmd_rejudge,
    "agree": cmd_agree,
    "calibrate": cmd_calibrate,
    "protocols": cmd_protocols,
    "view": cmd_view,
    "runs": cmd_runs,
    "backends": cmd_backends,
    "status": cmd_status,
    "cases": cmd_cases,
}
