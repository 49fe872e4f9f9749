"""Benchmark — models loaded per sweep when its Slurm tasks run one unit each, against `group: model`.

The sweep is the lab example (`examples/lab/sweep.yaml`: umnibench and wise × two sim/umm models,
judged by a third bound as an API judge, 2 case shards, generation before judging), written into a
scratch folder once with ``group: unit`` and once with ``group: model``. Its jobs are emitted as for
Slurm and every array task is run in order (``umni sweep FILE --task NAME:T``, each with its own
backends, as a separate Slurm task would have), then the assemble job. A load is a backend's
``start()`` (where a real model reads its weights), counted per spec around sim/umm's real start.
Reported per way: array tasks, loads per model and in all, wall and CPU seconds of the tasks.

    python bench/sweep_loads.py
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from umni.cli import main
from umni.run.sweep_file import load_sweep, work_units
from umni.run.sweep_jobs import arrays
from umni_adapters.sim import SimBackend

_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = _ROOT / "examples" / "lab" / "sweep.yaml"


def _count_loads() -> Counter[str]:
    counted: Counter[str] = Counter()
    real = SimBackend.start

    async def counting(self: SimBackend) -> None:
        counted[str(self.spec)] += 1
        await real(self)

    SimBackend.start = counting  # type: ignore[method-assign]
    return counted


def _run(folder: Path, group: str, loads: Counter[str]) -> dict[str, object]:
    settings = yaml.safe_load(EXAMPLE.read_text())
    settings.update(group=group, out=str(folder / f"out-{group}"), cache=str(folder / f"store-{group}"))
    path = folder / f"sweep-{group}.yaml"
    path.write_text(yaml.safe_dump(settings))
    sweep = load_sweep(path)
    jobs = arrays(sweep, work_units(sweep), path)
    loads.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    tasks = 0
    with contextlib.redirect_stdout(io.StringIO()):
        for job in jobs:
            for task in range(1, len(job.tasks) + 1):
                assert main(["sweep", str(path), "--task", f"{job.name}:{task}"]) == 0
                tasks += 1
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert main(["sweep", str(path), "--assemble"]) == 0
    return {"group": group, "units": len(work_units(sweep)), "tasks": tasks, "loads": dict(loads), "total": sum(loads.values()),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def main_bench() -> None:
    loads = _count_loads()
    with tempfile.TemporaryDirectory() as scratch:
        rows = [_run(Path(scratch), group, loads) for group in ("unit", "model")]
    for row in rows:
        per_model = ", ".join(f"{spec} {n}" for spec, n in sorted(row["loads"].items()))  # type: ignore[attr-defined]
        print(f"group: {row['group']:<5}  {row['units']} units in {row['tasks']} tasks  loads {row['total']} ({per_model})  "
              f"tasks {row['wall_s']} s wall, {row['cpu_s']} s CPU")
    before, after = rows[0]["total"], rows[1]["total"]
    print(f"models loaded per sweep: {before} -> {after} ({before / after:.1f}x fewer)")  # type: ignore[operator]


if __name__ == "__main__":
    sys.exit(main_bench())
