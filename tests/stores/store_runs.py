"""Test-only helpers: `umni run` subprocesses over a store under test, and their result files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The reference backend with a small per-call latency, so a run lasts long enough to be interrupted.
SIM = "sim/umm?latency=0.01"
RUN_TIMEOUT = 180
NODES_PER_CASE = 12  # a UmniBench case graph on the reference backend


def command(out: Path, store_args: list[str], *, limit: int, extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    return [
        sys.executable, "-m", "umni", "run", "umnibench", "--model", SIM, "--out", str(out), *store_args,
        "--limit", str(limit), "--concurrency", "3", "--quiet", *extra,
    ]  # fmt: skip


def run(
    out: Path, store_args: list[str], *, limit: int, extra: list[str] = (), env: dict[str, str] | None = None
) -> dict[str, Any]:  # type: ignore[assignment]
    """Run to the end (a failure shows the run's stderr)."""
    done = subprocess.run(command(out, store_args, limit=limit, extra=extra), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env={**os.environ, **(env or {})})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"stdout": done.stdout}


def start(out: Path, store_args: list[str], *, limit: int, extra: list[str] = ()) -> subprocess.Popen[str]:  # type: ignore[assignment]
    return subprocess.Popen(
        command(out, store_args, limit=limit, extra=extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def finish(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        try:
            _, stderr = proc.communicate(timeout=RUN_TIMEOUT)  # a deadlock ends here, not hang CI
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError(f"runs did not finish within {RUN_TIMEOUT} s") from None
        assert proc.returncode == 0, stderr


def event_lines(out: Path) -> int:
    path = out / "events.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def kill_at_line(proc: subprocess.Popen[str], out: Path, line: int) -> int | None:
    """SIGKILL `proc` as soon as its run's event log reaches `line` lines, unless it finished first
    (then its exit code). Progress, not a clock, picks the moment, so a slow machine kills as often."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while event_lines(out) < line:
        if proc.poll() is not None:
            return proc.returncode
        if time.monotonic() > deadline:
            break
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return None


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def case_ids(out: Path) -> list[str]:
    return [json.loads(line)["case_id"] for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
