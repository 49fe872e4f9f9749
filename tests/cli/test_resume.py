"""A run killed with SIGKILL at any moment and started again ends exactly like an uninterrupted run."""

import json
import os
import random
import signal
import subprocess
import sys
import time

from umni.store.cache import Cache
from umni.store.runfolder import RunFolder


def command(out, cache, limit=8):
    return [sys.executable, "-m", "umni", "run", "umnibench", "--model", "sim/umm?latency=0.02",
            "--out", str(out), "--cache", str(cache), "--limit", str(limit), "--concurrency", "3", "--quiet"]


def test_sigkill_and_resume_give_identical_results(tmp_path):
    reference = tmp_path / "reference"
    subprocess.run(command(reference, tmp_path / "cache-ref"), check=True, capture_output=True)

    out, cache = tmp_path / "killed", tmp_path / "cache"
    rng = random.Random(7)
    for _ in range(4):
        proc = subprocess.Popen(command(out, cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 2.0))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        store = Cache(cache)
        assert store.integrity_errors() == []
        store.close()
    subprocess.run(command(out, cache), check=True, capture_output=True)

    got = (out / "results.jsonl").read_text().splitlines()
    want = (reference / "results.jsonl").read_text().splitlines()
    assert got == want
    ids = [json.loads(line)["case_id"] for line in got]
    assert len(ids) == len(set(ids)) == 8
    summary = RunFolder(out).read_summary()
    assert summary.scores.root == json.loads((reference / "summary.json").read_text())["scores"]
