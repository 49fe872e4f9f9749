"""`umni run … --ray auto` with no cluster running (issue 14): the command starts a local cluster of
its own, gives the in-process results, and leaves no Ray process behind when it exits.

A module of its own, with no cluster fixture: the other Ray tests' cluster is shut down before this
module runs, so `--ray auto` finds nothing to join."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from umni.cli import main

pytest.importorskip("ray")

#: What the command lines of a local Ray cluster's processes hold (its binaries, services and workers).
_RAY_MARKS = ("ray/core/src/ray", "ray/_private/", "ray/dashboard/", "ray/autoscaler/", "default_worker.py", "ray::")


def ray_processes(marker: str) -> set[int]:
    """The Ray processes whose environment holds `marker`: those of the cluster one command started
    (Ray's services and workers inherit the driver's environment), not other clusters on the machine."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(mark in command for mark in _RAY_MARKS) and marker.encode() in environ:
            found.add(int(entry.name))
    return found


def test_ray_auto_starts_its_own_cluster_and_stops_it(tmp_path: Path) -> None:
    common = ["umnibench", "--limit", "3", "--quiet"]
    assert main(["run", *common, "--model", "sim/umm", "--out", str(tmp_path / "local"), "--cache", str(tmp_path / "c1")]) == 0
    marker = f"UMNI_TEST_CLUSTER={uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | dict([marker.split("=")])
    done = subprocess.run(
        [sys.executable, "-m", "umni", "run", *common, "--model", "sim/umm?placement=ray&replicas=2&cpus=0.5",
         "--ray", "auto", "--out", str(tmp_path / "ray"), "--cache", str(tmp_path / "c2")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "ray" / "results.jsonl").read_bytes() == (tmp_path / "local" / "results.jsonl").read_bytes()
    # the cluster the command started goes with it (processes may take a moment to exit after it)
    deadline = time.monotonic() + 30
    while (left := ray_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"Ray processes left behind: {sorted(left)}"
