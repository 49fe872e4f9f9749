"""The `umni` command line's grammar: every command, its options and their help, the exit codes, and
how the hints a command prints name the program."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from umni.util.version import __version__

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
    p.add_argument("--blobs", metavar="URL", help="image store: a directory, file:///DIR or s3://BUCKET/PREFIX (default: blobs/ "
                   "beside a SQLite cache; with PostgreSQL a directory every machine mounts, or an object store)")
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
    p.add_argument("--label", metavar="NAME", help="the name tables show for the run (summary.json's label): a paper's model name "
                   "sets the run beside the paper's row with leaderboard --compare-paper; a prefix before '/' groups it with --group")
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
    parser.add_argument("--version", action="version", version=f"umni {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run (or resume) a protocol")
    run.add_argument("protocol")
    _add_run_args(run)

    sweep = sub.add_parser("sweep", help="run protocols x models x bindings x seeds from a YAML file")
    sweep.add_argument("file", type=Path)
    sweep.add_argument("--shard", metavar="I/N", help="run only sweep shard I of N of the work units (runs x the "
                       "file's `shards:` case shards; 'slurm': from the array task); the shard that finds every "
                       "unit done writes the leaderboard")
    sweep.add_argument("--emit", choices=["slurm"], help="write <out>/submit.sh and <out>/slurm/*.sbatch: one array per "
                       "phase and resource class, then an assemble job (resubmit as it is: finished units are skipped), "
                       "instead of running")
    sweep.add_argument("--task", metavar="NAME:T", help="run task T of the emitted array NAME (what its sbatch script runs)")
    sweep.add_argument("--assemble", action="store_true", help="write the leaderboard from the store when every unit is "
                       "done, else list the units that are not and exit 1 (the emitted assemble job)")

    board = sub.add_parser("leaderboard", help="tables of several runs (run directories or sweep folders)")
    board.add_argument("dirs", type=Path, nargs="+")
    board.add_argument("--out", type=Path, help="write leaderboard.md/.csv/.json here (default: print Markdown)")
    board.add_argument("--format", choices=["markdown", "latex", "csv"], default="markdown",
                       help="what is printed: Markdown, LaTeX (booktabs) to paste into a paper, or CSV of the tables as laid out: "
                       "one file (a `table` column when there are several) that pandas.read_csv reads as it is "
                       "(with --layout tidy: the long CSV, one row per run × metric)")
    board.add_argument("--layout", choices=["paper", "tidy"], default="paper",
                       help="paper: each paper's own tables (orientation, column groups, names, order, rounding); "
                       "tidy: one row per run (leaderboard.csv is always the tidy long CSV)")
    board.add_argument("--plain", action="store_true",
                       help="cells as the paper prints them, a number alone: intervals, coverage and marks go to footnotes below each table")
    board.add_argument("--group", nargs="?", const="", metavar="G1,G2,…",
                       help="group the runs by the prefix of their labels before the first '/' (a run labelled Und/x is x under Und), "
                       "as papers group models by type; groups in the order given, then as they come")
    board.add_argument("--compare-paper", action="store_true",
                       help="set each run labelled as one of its paper's models (umni run --label) beside the paper's own row: the paper's "
                       "value, this run's and the difference per column, and which settings of the paper's run differ from this run's")
    board.add_argument("--paired", action="store_true",
                       help="the headline difference of every pair of runs of one protocol on the cases both hold, with a 95 %% paired "
                       "bootstrap interval and a paired permutation test; over more than two runs a matrix with Holm-adjusted p-values")

    board.add_argument("--calibration", action="append", default=[], type=Path, metavar="FILE",
                       help="a judge calibration (`umni calibrate`) of the runs' judge: adds each run's reference-judge-equivalent "
                       "headline, an estimate whose interval includes the calibration's uncertainty (repeatable: one per protocol)")

    calibrate = sub.add_parser("calibrate", help="measure a substitute judge against the reference judge on the same outputs: "
                               "agreement, the mapping of its marks, the headline's transfer error")
    calibrate.add_argument("reference", type=Path, metavar="REFERENCE_RUN", help="the outputs judged by the judge the paper used")
    calibrate.add_argument("substitute", type=Path, metavar="SUBSTITUTE_RUN", help="the same outputs judged by the substitute "
                           "(`umni rejudge REFERENCE_RUN --role judge=SPEC`)")
    calibrate.add_argument("--out", type=Path, required=True, metavar="FILE", help="the calibration file (JSON) for `umni leaderboard --calibration`")

    power = sub.add_parser("power", help="cases needed to tell a headline difference apart at a given power, from a run's per-case variance")
    power.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="a run directory; with a second run of the same cases, the "
                       "variance of their paired differences is measured instead of assumed")
    power.add_argument("--delta", type=float, required=True, metavar="D", help="the headline difference to detect, on the headline's scale "
                       "(0.05 on WISE's 0–1, 5 on UmniBench's 0–100)")
    power.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    power.add_argument("--power", type=float, default=0.8, help="the chance of detecting the difference when it is there (default 0.8)")

    methods = sub.add_parser("methods", help="how a run's (or a sweep's) numbers were made: an appendix paragraph and a settings table "
                             "(models, revisions, sampling, judge template hashes, deviations)")
    methods.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run directories or sweep folders")
    methods.add_argument("--format", choices=("markdown", "latex"), default="markdown", help="markdown (default) or latex")

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
    view.add_argument("--host", default="127.0.0.1",
                      help="address to listen on and the one host name, besides loopback, that requests may name (default: 127.0.0.1)")
    view.add_argument("--open", action="store_true", help="open the page in the default browser")

    runs = sub.add_parser("runs", help="list run directories: protocol, bindings, date, headline score")
    runs.add_argument("dirs", type=Path, nargs="*", metavar="DIR", help="folders to search (default: runs)")
    sub.add_parser("backends", help="list backend providers and the roles they fill")
    status = sub.add_parser("status", help="work units of a split sweep (done, running with heartbeat age, pending), "
                            "a run directory and its shards, or a result store (results per kind, the processes "
                            "writing them, blobs)")
    status.add_argument("dir", metavar="DIR|STORE", help="a sweep folder, a run directory, a cache directory or .db file, or postgresql://…")
    status.add_argument("--blobs", metavar="URL", help="a store's blob store to count (default: the one a SQLite store implies)")

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


def invoked_as(argv0: str | None = None) -> str:
    """How to run umni again as it was run now, for the hints a command prints: `umni` when that name
    on PATH is this program, else the path it was started by (`.venv/bin/umni` when umni is only
    installed in a virtual environment), else `python -m umni`."""
    started = Path(argv0 if argv0 is not None else sys.argv[0])
    if started.name == "umni":
        on_path = shutil.which("umni")
        if on_path is not None and Path(on_path).resolve() == started.resolve():
            return "umni"
        shown = os.path.relpath(started) if not started.is_absolute() or started.is_relative_to(Path.cwd()) else str(started)
        return shlex.quote(shown)
    return f"{shlex.quote(sys.executable)} -m umni"


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
