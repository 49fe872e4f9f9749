"""Benchmark — the tables.json a run writes when it finishes (bootstrap intervals included).

An N-case UmniBench run is made as `bench.viewer` makes it (a real 6-case `sim/umm` run, records
replicated with ids and domains renamed, every 10th case given a failed node), then
`write_run_tables` — what `RunDir.finish` calls — is timed with the default bootstrap resamples:
wall seconds and this process's CPU seconds, best of `--repeat`, and how many of the stored tables'
cells got an interval.

Run from the repository root: ``python -m bench.tables --cases 1000 [--repeat 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any


def run(*, cases: int, repeat: int = 3) -> dict[str, Any]:
    from umni.reporting import intervals
    from umni.reporting.leaderboard import write_run_tables
    from umni.store.runfolder import RunFolder

    from .viewer import make_run

    with tempfile.TemporaryDirectory() as tmp:
        big = make_run(Path(tmp), cases)
        summary = RunFolder(big).read_summary()
        walls, cpus = [], []
        for _ in range(repeat):
            began, began_cpu = time.perf_counter(), time.process_time()
            path = write_run_tables(big, summary)
            walls.append(time.perf_counter() - began)
            cpus.append(time.process_time() - began_cpu)
        stored = RunFolder(big).read_tables()
        assert stored is not None and path == RunFolder(big).tables_json
        cells = [c for t in stored.tables for r in t["rows"] for c in r["cells"]]
        return {"name": "tables", "cases": cases, "bootstrap_resamples": intervals.BOOTSTRAP_RESAMPLES,
                "seconds": round(min(walls), 2), "cpu_seconds": round(min(cpus), 2),
                "stored_intervals": sum(v is not None for v in stored.intervals.values()),
                "cells": len(cells), "cells_with_interval": sum(bool(c.get("ci")) for c in cells)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from .machine import emit

    return emit(run(cases=args.cases, repeat=args.repeat), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
