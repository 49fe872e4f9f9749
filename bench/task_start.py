"""Benchmark — what a sweep task costs before (and instead of) any work.

A Slurm array task is a fresh Python process: whatever it imports and builds before it finds out
that it has nothing to do is paid by every task of every resubmitted array. This benchmark builds
two small sweeps of UmniBench on ``sim/umm`` into one store, fills them, then times fresh
processes of:

- ``python -c pass`` and ``python -c "import umni"`` (the floor and the front's import);
- ``python -c "import pydantic, numpy, anyio, jinja2, PIL.Image, yaml"``: the libraries a unit
  read from the store uses (its settings' models, the tables' bootstrap intervals, the engine's
  event loop, the report, images, the sweep file), imported and nothing done with them;
- ``umni sweep A --shard 1/2`` for a **done** unit: sweep A has ``limit`` cases and ``shards: 2``
  (two units); unit 1's record says done, unit 2 is left undone, so the task does not assemble. The
  file is the one the plan was made from, so the task reads the plan and the records as JSON
  (`umni.run.done_task`);
- the same for a done unit of sweep C (A's settings, its own folder) whose file gains a comment
  before each start: the plan was made from another file, so the task reads it through its models
  (**the full path**) and records the new file in the plan;
- the same command for a **cached** unit: every node of unit 1 is in the store (``umni sweep A``
  filled it in one process) but neither its record nor its run folder is there (both removed before
  each start), so the task runs its graphs from the store (its cases, checked to be more than none,
  come from the store: 0 computed), writes its run folder and marks it done;
- ``umni sweep B --shard 1/2`` of a **finished** sweep: B has ``shards: 4`` (four units dealt to two
  tasks by their work) and both tasks have run, so every unit is done and the sweep was assembled;
  this is the task a resubmitted array starts again.

Each command runs ``repeats`` times, interleaved; the table shows the median wall and CPU seconds
(the child's user + system time), each median wall over ``python -c pass``'s, all from one run, and
the best wall time of the repetitions (on a shared machine, the closest to an idle one's).

The processes keep their compiled bytecode in a folder of the benchmark's own
(``PYTHONPYCACHEPREFIX``; the fill runs write it), as an installed package has its ``.pyc`` files,
even where ``PYTHONDONTWRITEBYTECODE`` is set. ``--compile`` measures with every module compiled
from source in every process instead (what such an environment pays).

    python -m bench.task_start            # 7 repetitions, 4 cases
    python -m bench.task_start 15 4 --json task_start.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import calibrate, emit

_ROOT = Path(__file__).resolve().parents[1]
#: a unit with nothing to compute should start in at most this many seconds of wall (issue 35 item 3)
TARGET_S = 0.4


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _environment(bytecode: Path | None) -> dict[str, str]:
    """The children's environment: this repository first on the path; their bytecode kept under
    `bytecode` (None: never kept, every module compiled in every process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(_ROOT)
    if bytecode is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process running `command`."""
    cpu0, began = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - began, _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, cpu


def _sweep_file(folder: Path, name: str, limit: int, shards: int) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        f"out: {folder / name}\ncache: {folder / 'cache'}\nblobs: {folder / 'blobs'}\n"
        f"protocols: [umnibench]\nmodels: [sim/umm]\nlimit: {limit}\nshards: {shards}\n"
    )
    return path


def _record(sweep_out: Path, unit: str) -> dict[str, Any] | None:
    path = sweep_out / "units" / f"{unit}.json"
    return json.loads(path.read_text()) if path.is_file() else None


#: the libraries a unit read from the store imports (see the module docstring)
LIBRARIES = "import pydantic, numpy, anyio, jinja2, PIL.Image, yaml"


def run(repeats: int = 7, limit: int = 4, compile_each_time: bool = False) -> dict[str, Any]:
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = _environment(None if compile_each_time else folder / "bytecode")
        split = _sweep_file(folder, "a", limit, 2)
        edited = _sweep_file(folder, "c", limit, 2)
        finished = _sweep_file(folder, "b", limit, 4)
        umni = [python, "-m", "umni", "sweep"]
        _timed([*umni, str(split)], folder, env)  # fills the store (every run from one process; no unit records) and the bytecode
        _timed([*umni, str(edited), "--shard", "1/2"], folder, env)  # sweep C's unit 1 done (from the store)
        for part in ("1/2", "2/2"):  # the second task finds every unit done and assembles sweep B
            _timed([*umni, str(finished), "--shard", part], folder, env)
        if not (folder / "b" / "leaderboard.md").is_file():
            raise RuntimeError("sweep B was not assembled by its tasks")
        record = folder / "a" / "units" / "u00000.json"
        commands = {
            "python -c pass": [python, "-c", "pass"],
            'python -c "import umni"': [python, "-c", "import umni"],
            "libraries a cached unit uses": [python, "-c", LIBRARIES],
            "cached unit": [*umni, str(split), "--shard", "1/2"],
            "done unit": [*umni, str(split), "--shard", "1/2"],
            "done unit, the full path": [*umni, str(edited), "--shard", "1/2"],
            "task of a finished sweep": [*umni, str(finished), "--shard", "1/2"],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        board = (folder / "b" / "leaderboard.md").stat().st_mtime_ns
        reassembled = 0
        for repeat in range(repeats):
            for name, command in commands.items():
                if name == "done unit, the full path":
                    edited.write_text(edited.read_text() + f"# start {repeat}\n")
                if name == "cached unit":
                    state = _record(folder / "a", "u00000")
                    if state is not None:
                        shutil.rmtree(state["out"], ignore_errors=True)
                    record.unlink(missing_ok=True)
                times[name].append(_timed(command, folder, env))
                if name == "cached unit":
                    state = _record(folder / "a", "u00000")
                    counts = state["counts"] if state else {}
                    if state is None or state.get("state") != "done" or counts.get("computed") != 0 or not counts.get("cached"):
                        raise RuntimeError(f"the cached unit was not run from the store (or held no case): {state}")
            if _record(folder / "a", "u00001") is not None or _record(folder / "c", "u00001") is not None:
                raise RuntimeError("unit u00001 of sweep A or C has a record: the done-unit task would assemble the sweep")
            now = (folder / "b" / "leaderboard.md").stat().st_mtime_ns
            reassembled += now != board  # before `units/assembled.json`, every start assembled it again
            board = now
    floor = statistics.median(w for w, _ in times["python -c pass"])
    rows = {}
    for name, pairs in times.items():
        wall = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        rows[name] = {
            "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "wall_over_python": round(wall / floor, 2),
            "best_wall_s": round(min(w for w, _ in pairs), 3),
        }
    tasks = ("cached unit", "done unit", "done unit, the full path", "task of a finished sweep")
    return {
        "name": "task_start",
        "params": {"repeats": repeats, "limit": limit, "protocol": "umnibench", "model": "sim/umm", "bytecode_cached": not compile_each_time},
        "commands": rows,
        "target_wall_s": TARGET_S,
        "meets_target": {name: rows[name]["wall_s"] <= TARGET_S for name in tasks},
        #: starts of the finished sweep's task that assembled it again
        "finished_sweep_assembled_again": reassembled,
    }


def _table(result: dict[str, Any]) -> str:
    lines = [f"{'command':32} {'wall s':>8} {'CPU s':>8} {'wall / python -c pass':>22} {'best wall s':>12}"]
    for name, r in result["commands"].items():
        lines.append(f"{name:32} {r['wall_s']:8.3f} {r['cpu_s']:8.3f} {r['wall_over_python']:22.2f} {r['best_wall_s']:12.3f}")
    met = ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in result["meets_target"].items())
    lines.append(f"target: a unit with nothing to compute exits in ≤ {result['target_wall_s']} s wall: {met}")
    lines.append(f"the finished sweep's task assembled it again at {result['finished_sweep_assembled_again']} of its starts")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.task_start", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repeats", type=int, nargs="?", default=7, help="fresh processes per command (default: %(default)s)")
    parser.add_argument("limit", type=int, nargs="?", default=4, help="cases of each sweep's one run (default: %(default)s)")
    parser.add_argument("--compile", action="store_true", help="keep no bytecode: every process compiles every module it imports")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    before = calibrate()
    result = run(args.repeats, args.limit, args.compile)
    result["calibration"] = {"before_seconds": round(before, 3), "after_seconds": round(calibrate(), 3)}
    print(_table(result), file=sys.stderr)
    return emit(result, args.json)


if __name__ == "__main__":
    sys.exit(main())
