"""The benchmark suite still runs: `python -m bench --smoke` end to end, then its JSON is checked.

Timings on a shared CI machine say little, so targets are not asserted here; what is asserted is
what the suite's figures rest on: every benchmark ran, the module swap made no image calls, the
latency runs made exactly 12 calls per UmniBench case along a 4-call critical path, and every
object names the machine it ran on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_smoke_suite_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--json", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = {r["name"]: r for r in json.loads(out.read_text())}
    assert set(results) == {"engine_overhead", "latency_hiding", "module_swap", "scale", "local_batching", "inspect_compare", "stores", "hf_batching", "ray_overhead"}
    for result in results.values():
        assert "error" not in result
        assert result["mode"] == "smoke"
        assert {"cpu_count", "cpu_model", "platform", "python", "torch"} <= set(result["machine"])

    overhead = results["engine_overhead"]
    assert overhead["nodes"] == 20 * (9 + 1)
    assert overhead["engine_seconds"] > overhead["direct_seconds"] > 0

    for run in results["latency_hiding"]["runs"]:
        assert run["failed_nodes"] == 0
        assert run["calls"] == 8 * 12  # 8 cases x (3 images + 9 answers)
        assert run["critical_path_calls"] == 4  # generate -> edit -> edit -> answer
        assert run["ideal_seconds"] == max(96 * 0.01 / 4, 4 * 0.01)

    swap = results["module_swap"]
    assert swap["second_generate_edit_calls"] == 0
    assert swap["second_calls"] == {"understand": 6 * 9}
    assert swap["first_calls"] == {"edit": 12, "generate": 6, "understand": 54}

    scale = results["scale"]
    assert {int(n): r["cases"] for n, r in scale["sizes"].items()} == {8: 8, 24: 24}
    assert all(r["failed"] == 0 and r["peak_rss_bytes"] > 0 for r in scale["sizes"].values())

    batching = results["local_batching"]
    if "skipped" not in batching:
        assert batching["batched_calls"] == 1 and batching["sequential_calls"] == 2
        assert batching["max_pixel_difference"] <= 1
    stores = results["stores"]
    assert stores["params"]["nodes"] == 4 * (9 + 1)
    for store in ("sqlite", "postgresql"):  # PostgreSQL's server binaries are part of the test setup
        assert stores[store]["computed_us_per_node"] > 0 and stores[store]["cached_us_per_node"] > 0
        assert "umni benchmarks" in done.stdout


def test_task_start_benchmark_runs(tmp_path: Path) -> None:
    """`python -m bench.task_start` still runs: its cached unit holds a case read from the store (it
    raises otherwise) and the finished sweep's task never assembles it again."""
    out = tmp_path / "task_start.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.task_start", "1", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["commands"]) == {
        "python -c pass", 'python -c "import umni"', "libraries a cached unit uses", "cached unit", "done unit",
        "done unit, the full path", "task of a finished sweep",
    }
    assert result["finished_sweep_assembled_again"] == 0
