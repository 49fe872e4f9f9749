"""Benchmark — models taking turns on a Ray cluster too small to hold them all (`umni.run.turns`).

The sweep: 2 protocols (umnibench, wise) × 4 sim models, ``limit`` cases each, each model a pool of
one replica asking for ``cpus: 1`` and answering after ``latency`` seconds (so a model's work takes
time, as a real one's does). It runs three ways in this one process: in process without Ray; on a
local Ray cluster of 2 logical CPUs, where the models must take turns two at a time; and on one of 4,
where all four load at once. Reported: wall and CPU seconds of each way (this process; Ray's own
processes are not counted), each model's loads (1 expected) and CPU-hours held, the most pools held
at once, the turns / all-at-once wall ratio, and whether every run's results.jsonl is byte-identical
to the in-process sweep's.

Run: python -m bench.model_turns [limit] [latency]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.machine import cpu_seconds
from umni.store.runfolder import EVENTS_JSONL, RESULTS_JSONL

PROTOCOLS = ["umnibench", "wise"]
MODELS = ["sim/umm?skill=0.3", "sim/umm?skill=0.5", "sim/umm?skill=0.7", "sim/umm?skill=0.9"]


def _sweep(folder: Path, name: str, limit: int, latency: float, placed: bool) -> tuple[Path, float, float]:
    from umni.cli import main

    models = [f"{m}&latency={latency:g}" for m in MODELS]  # latency is operational: the same cache keys
    path = folder / f"{name}.yaml"
    text = f"out: {folder / name}\ncache: {folder / name}-cache\nprotocols: {json.dumps(PROTOCOLS)}\nmodels: {json.dumps(models)}\nlimit: {limit}\n"
    if placed:
        text += "placement:\n" + "".join(f'  "{m}": {{cpus: 1}}\n' for m in models)
    path.write_text(text)
    cpu0, started = cpu_seconds(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the sweep's own lines; stdout is the JSON result
        code = main(["sweep", str(path)])
    if code != 0:
        raise RuntimeError(f"sweep {name} failed")
    return folder / name, time.perf_counter() - started, cpu_seconds() - cpu0


def _results(out: Path) -> dict[str, bytes]:
    return {p.parent.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.glob(f"*/*/{RESULTS_JSONL}"))}


def _most_at_once(out: Path) -> int:
    """The most pools held at one moment, from each release's time and seconds held."""
    events = [json.loads(line) for line in (out / EVENTS_JSONL).read_text().splitlines()]
    spans = []
    for event in events:
        if event["event"] == "pool.release":
            end = datetime.fromisoformat(event["time"]).timestamp()
            spans.append((end - event["seconds"], end))
    return max(sum(1 for s, e in spans if s <= start + 1e-3 < e) for start, _ in spans)


def _on_cluster(folder: Path, name: str, cpus: int, limit: int, latency: float) -> tuple[Path, float, float]:
    import ray

    ray.init(num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        return _sweep(folder, name, limit, latency, placed=True)
    finally:
        ray.shutdown()


def run(limit: int = 4, latency: float = 0.05) -> dict[str, Any]:
    try:
        import ray  # noqa: F401
    except ImportError:
        return {"name": "model_turns", "skipped": "Ray is not installed (pip install 'umni[ray]')"}
    with tempfile.TemporaryDirectory(prefix="umni-turns-") as tmp:
        folder = Path(tmp)
        plain, plain_wall, plain_cpu = _sweep(folder, "plain", limit, latency, placed=False)
        turns, turns_wall, turns_cpu = _on_cluster(folder, "turns", 2, limit, latency)
        wide, wide_wall, wide_cpu = _on_cluster(folder, "wide", 4, limit, latency)
        pools = json.loads((turns / "sweep.json").read_text())["pools"]
        expected = _results(plain)
        return {
            "name": "model_turns",
            "params": {"protocols": PROTOCOLS, "models": len(MODELS), "cases_per_run": limit, "latency_s": latency},
            "in_process": {"wall_s": round(plain_wall, 2), "cpu_s": round(plain_cpu, 2)},
            "turns_2_cpus": {"wall_s": round(turns_wall, 2), "cpu_s": round(turns_cpu, 2), "most_pools_at_once": _most_at_once(turns)},
            "all_at_once_4_cpus": {"wall_s": round(wide_wall, 2), "cpu_s": round(wide_cpu, 2), "most_pools_at_once": _most_at_once(wide)},
            "turns_over_all_at_once_wall": round(turns_wall / wide_wall, 2),
            "loads_per_model": {p["spec"]: p["loads"] for p in pools},
            "cpu_hours_per_model": {p["spec"]: round(p["cpu_hours"], 5) for p in pools},
            "byte_identical": _results(turns) == expected and _results(wide) == expected and len(expected) == len(PROTOCOLS) * len(MODELS),
        }


if __name__ == "__main__":
    print(json.dumps(run(*(float(a) if i else int(a) for i, a in enumerate(sys.argv[1:]))), indent=1))
