"""The real-size throughput benchmark still runs: `python -m bench.real_size --size tiny` end to end.

The tiny size builds the same two architectures (Qwen2.5-VL as the judge, Janus-Pro as the unified
model) at the smallest sizes their code accepts, saves them, loads them through `hf/<folder>` specs
and drives the backend's role methods concurrently. What is asserted is what the GPU figures rest on,
never a timing: every model built and loaded, every role measured at batch 1 and at batch 8, and the
backend's micro-batcher really formed batches of 1 and of 8 (so the two figures compare what they
claim to compare); the report names the device, torch and the random-weights caveat.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("transformers")


def test_tiny_run_measures_every_role_at_batch_1_and_8(tmp_path: Path) -> None:
    out = tmp_path / "real_size.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.real_size", "--size", "tiny", "--device", "cpu", "--out", str(out),
         "--time-limit", "600"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert "RANDOM weights" in report["note"]
    assert report["machine"]["device"] == "cpu" and report["machine"]["torch"]
    assert "device_name" in report["machine"]

    roles = {"qwen2.5-vl-7b": {"judge", "answer"}, "janus-pro-7b": {"generate", "answer"}}
    assert [m["model"] for m in report["models"]] == list(roles)
    for model in report["models"]:
        assert "error" not in model, model.get("traceback")
        assert model["parameters"] > 0 and model["load_seconds"] >= 0
        measured = {(m["role"], m["batch_size"]): m for m in model["measurements"]}
        assert set(measured) == {(role, size) for role in roles[model["model"]] for size in (1, 8)}
        for (_role, size), entry in measured.items():
            assert "error" not in entry, entry.get("traceback")
            assert entry["items"] == entry["requests_per_round"] * entry["rounds"] > 0
            assert entry["items_per_second"] > 0 and entry["seconds"] > 0
            # the batcher joined the concurrent requests as asked: all ones, or full batches of 8
            assert entry["batch_sizes_formed"] == [size] * (entry["items"] // size)
            assert entry["output_tokens_mean"] and entry["input_tokens_mean"]
        assert set(model["batch8_over_batch1"]) == roles[model["model"]]
