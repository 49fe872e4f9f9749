"""Benchmark — a sweep split over processes into one PostgreSQL store, against one process.

The sweep: 5 protocols (umnibench, wise, genius, aegis, girbench) x 4 sim models, ``limit`` cases
each, on a PostgreSQL server started for the benchmark on 127.0.0.1 (Debian's binaries, as the
tests use). One process runs ``umni sweep FILE`` into its own database; then ``split`` processes run
``umni sweep FILE --shard I/split`` at the same time into another database (the last to finish
assembles), and the assembling step is timed again on its own. Reported: wall and CPU seconds of
each way, the work balance across shards (nodes computed per shard, as each unit's record names the
shard that ran it: max / mean; units are dealt by their cases × nodes, `umni.run.units.deal`), the assembling
step's time and nodes computed (0 expected), and whether every run's results.jsonl is byte-identical
to the one-process sweep's.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from umni.store.runfolder import RESULTS_JSONL, SUMMARY_JSON, RunFolder

_ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ["umnibench", "wise", "genius", "aegis", "girbench"]
MODELS = ["sim/umm", "sim/umm?skill=0.3", "sim/umm?skill=0.6", "sim/umm?skill=0.9"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sweep_file(folder: Path, out: str, dsn: str, limit: int, shards: int) -> Path:
    path = folder / f"{out}.yaml"
    path.write_text(
        f"out: {folder / out}\ncache: {dsn}\nblobs: {folder / 'blobs'}\nprotocols: {json.dumps(PROTOCOLS)}\n"
        f"models: {json.dumps(MODELS)}\nlimit: {limit}\nshards: {shards}\n"
    )
    return path


def _umni(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    return subprocess.Popen([sys.executable, "-m", "umni", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(process: subprocess.Popen[str]) -> None:
    _, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"umni exited {process.returncode}: {err[-2000:]}")


def _results(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.glob(f"*/*/{RESULTS_JSONL}"))
        if "-shard" not in p.parent.name
    }


def run(limit: int = 4, split: int = 8, shards: int = 2) -> dict[str, Any]:
    sys.path.insert(0, str(_ROOT / "tests" / "stores"))
    from pg_server import PostgresServer

    server = PostgresServer(durable=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            one_file = _sweep_file(folder, "one", server.create_database("one"), limit, shards)
            split_file = _sweep_file(folder, "split", server.create_database("split"), limit, shards)
            cpu0, started = _children_cpu(), time.perf_counter()
            _wait(_umni("sweep", str(one_file)))
            one_wall, one_cpu = time.perf_counter() - started, _children_cpu() - cpu0

            cpu0, started = _children_cpu(), time.perf_counter()
            processes = [_umni("sweep", str(split_file), "--shard", f"{i}/{split}") for i in range(1, split + 1)]
            for process in processes:
                _wait(process)
            split_wall, split_cpu = time.perf_counter() - started, _children_cpu() - cpu0

            names = sorted(u["unit"] for u in json.loads((folder / "split" / "units" / "plan.json").read_text())["units"])
            records = [json.loads((folder / "split" / "units" / f"{n}.json").read_text()) for n in names]
            computed = [r["counts"]["computed"] for r in records]
            per_shard = [0] * split
            for record in records:  # the sweep shard that ran each unit, as its record says
                per_shard[int(record["part"].split("/")[0]) - 1] += record["counts"]["computed"]

            cpu0, started = _children_cpu(), time.perf_counter()
            _wait(_umni("sweep", str(split_file)))  # the assembling step on its own (all units done)
            assemble_wall, assemble_cpu = time.perf_counter() - started, _children_cpu() - cpu0
            assembled = [RunFolder(p.parent).read_summary().counts.computed for p in (folder / "split").glob(f"*/*/{SUMMARY_JSON}") if "-shard" not in p.parent.name]
            same = _results(folder / "split") == _results(folder / "one") and len(_results(folder / "one")) == len(PROTOCOLS) * len(MODELS)
            mean = sum(per_shard) / split
            return {
                "benchmark": "sweep_split",
                "runs": len(PROTOCOLS) * len(MODELS), "units": len(computed), "split": split, "cases_per_run": limit,
                "one_process": {"wall_s": round(one_wall, 2), "cpu_s": round(one_cpu, 2)},
                "split_processes": {"wall_s": round(split_wall, 2), "cpu_s": round(split_cpu, 2)},
                "nodes_computed_per_shard": per_shard,
                "balance_max_over_mean": round(max(per_shard) / mean, 3) if mean else None,
                "assemble": {"wall_s": round(assemble_wall, 2), "cpu_s": round(assemble_cpu, 2), "nodes_computed": sum(assembled)},
                "byte_identical": same,
            }
    finally:
        server.stop()


if __name__ == "__main__":
    print(json.dumps(run(*(int(a) for a in sys.argv[1:])), indent=1))
