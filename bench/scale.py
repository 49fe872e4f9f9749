"""Benchmark 4 — scale: time per case and peak memory as the case count grows.

Each size runs UmniBench with ``sim/umm`` at zero latency in a fresh Python process (so peak RSS
belongs to that run alone), the whole `evaluate` path included: loading and validating the case
file, the runner, the cache and run store, and the results, summary and HTML report at the end.
The child reports its own wall time, CPU time and peak resident set size.

``python -m bench.scale --child CASES_FILE WORKDIR`` is the child's entry point.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .cases import write_cases

REPO = Path(__file__).resolve().parents[1]
TIME_RATIO_TARGET = 1.2
#: Issue 27: a 20,000-case UmniBench run within 300 MiB (case set, records and finish included).
RSS_TARGET_BYTES = 300 << 20


def _peak_rss_bytes() -> int:
    """This process's peak resident set size.

    On Linux ``ru_maxrss`` carries over the parent's peak from before ``exec`` (the benchmark
    parent can be far larger than the child), so the high-water mark of this process's own memory
    map, ``VmHWM`` in /proc/self/status, is read instead where it exists.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB, macOS bytes


def child(cases_file: Path, workdir: Path) -> dict[str, Any]:
    from umni.run.evaluation import RunRequest, evaluate
    from umni.util.memory import limit_malloc_arenas

    limit_malloc_arenas()  # as `umni run` does at its start

    rss_before = _peak_rss_bytes()
    wall, cpu = time.perf_counter(), time.process_time()
    result = evaluate(
        RunRequest(protocol="umnibench", cases=cases_file, out=workdir / "run", cache=workdir / "cache", model="sim/umm", progress=False)
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    counts = result.summary.counts
    return {
        "cases": counts.cases,
        "nodes": counts.nodes,
        "failed": counts.failed + counts.blocked,
        "seconds": wall,
        "cpu_seconds": cpu,
        "peak_rss_bytes": _peak_rss_bytes(),
        "rss_after_imports_bytes": rss_before,
    }


def _run_size(root: Path, n: int) -> dict[str, Any]:
    cases_file = write_cases(root / f"cases-{n}.jsonl", n)
    workdir = root / f"size-{n}"
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", "--child", str(cases_file), str(workdir)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    process_seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"scale run with {n} cases failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_seconds"] = process_seconds
    figures["ms_per_case"] = figures["seconds"] / n * 1e3
    figures["cpu_ms_per_case"] = figures["cpu_seconds"] / n * 1e3
    figures["peak_rss_mib"] = figures["peak_rss_bytes"] / 2**20
    return figures


def run(*, sizes: tuple[int, int]) -> dict[str, Any]:
    small, large = sizes
    with tempfile.TemporaryDirectory(prefix="umni-bench-scale-") as tmp:
        root = Path(tmp)
        results = {str(n): _run_size(root, n) for n in (small, large)}
    time_ratio = results[str(large)]["ms_per_case"] / results[str(small)]["ms_per_case"]
    peak = results[str(large)]["peak_rss_bytes"]
    return {
        "name": "scale",
        "title": f"Scale: sim/umm at zero latency, {small:,} vs {large:,} cases (fresh process each)",
        "params": {"sizes": [small, large]},
        "sizes": results,
        "time_per_case_ratio": time_ratio,
        "peak_rss_mib_large": peak / 2**20,
        "meets_target": time_ratio <= TIME_RATIO_TARGET and peak <= RSS_TARGET_BYTES,
        "target": f"ms/case at {large:,} <= {TIME_RATIO_TARGET} x ms/case at {small:,}; peak RSS at {large:,} <= {RSS_TARGET_BYTES >> 20} MiB",
    }


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), Path(sys.argv[3]))))
    else:
        raise SystemExit("usage: python -m bench.scale --child CASES_FILE WORKDIR (run the suite with python -m bench)")
