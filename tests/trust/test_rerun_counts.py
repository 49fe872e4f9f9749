"""A run repeated, resumed after a kill, or assembled again by a sweep reports exactly the counts
and coverage of the uninterrupted run (issue 34 item 4). GENIUS and AEGIS skip nodes by design
(GENIUS stops its judge rounds early, AEGIS draws only the images an answer asks for): those
skipped nodes stay skipped, never turning into cached ones that inflate the coverage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: Each protocol with a command whose cases skip some nodes: GENIUS's first six cases, all of AEGIS's.
COMMANDS = {
    "genius": ["--limit", "6"],
    "aegis": [],
}
#: sim/umm slowed a little per call, so that a run lasts long enough to be killed in the middle.
MODEL = "sim/umm?skill=0.3&latency=0.02"
TIMEOUT = 180


def umni(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "umni", *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done


def run_command(protocol: str, out: Path, cache: Path) -> list[str | Path]:
    return ["run", protocol, "--model", MODEL, *COMMANDS[protocol], "--out", out, "--cache", cache, "--concurrency", "1", "--quiet"]


def counted(out: Path) -> dict[str, Any]:
    """What a run reports about its nodes, apart from where this invocation found each result."""
    counts = json.loads((out / "summary.json").read_text())["counts"]
    return {**{k: v for k, v in counts.items() if k not in ("computed", "cached")}, "results": counts["computed"] + counts["cached"]}


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines of `umni run`'s report that describe the run, not this invocation."""
    return [line for line in done.stdout.splitlines() if line.startswith(("overall:", "coverage:"))]


def skipping_case_recorded(out: Path) -> bool:
    """Whether the run's event log shows a case with skipped nodes finished and recorded in run.db:
    its ``case.done`` line, then any later line (the record is written right after the event)."""
    path = out / "events.jsonl"
    lines = path.read_text().splitlines()[:-1] if path.exists() else []  # the last one may be half-written
    for at, line in enumerate(lines):
        if '"event":"case.done"' in line and json.loads(line)["statuses"].get("skipped"):
            return at + 1 < len(lines)
    return False


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Each protocol's uninterrupted run: its counts and its report lines."""
    tmp = tmp_path_factory.mktemp("reference")
    found = {}
    for protocol in COMMANDS:
        done = umni(*run_command(protocol, tmp / protocol, tmp / "cache"), cwd=tmp)
        found[protocol] = (counted(tmp / protocol), said(done))
        assert found[protocol][0]["skipped"] > 0  # the premise: these cases skip nodes
        assert found[protocol][0]["failed"] == 0
    return found


@pytest.mark.parametrize("protocol", COMMANDS)
def test_running_a_finished_run_again_reports_the_same_counts_and_coverage(tmp_path: Path, protocol: str, reference) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    umni(*run_command(protocol, out, cache), cwd=tmp_path)
    again = umni(*run_command(protocol, out, cache), cwd=tmp_path)
    counts, lines = reference[protocol]
    assert counted(out) == counts
    assert said(again) == lines
    summary = json.loads((out / "summary.json").read_text())["counts"]
    assert summary["computed"] == 0 and summary["cached"] == counts["results"]  # every result reused, nothing more


@pytest.mark.parametrize("protocol", COMMANDS)
def test_a_run_killed_midway_and_resumed_reports_what_the_uninterrupted_run_does(tmp_path: Path, protocol: str, reference) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    command = [sys.executable, "-m", "umni", *map(str, run_command(protocol, out, cache))]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while not skipping_case_recorded(out) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert process.poll() is None, "the run finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)  # as a lost node or an OOM kill: no chance to tidy up
    process.wait(timeout=30)
    assert (out / "INCOMPLETE").exists()
    resumed = umni(*run_command(protocol, out, cache), cwd=tmp_path)
    counts, lines = reference[protocol]
    assert counted(out) == counts
    assert said(resumed) == lines


def test_a_sweep_assembled_twice_writes_the_same_leaderboard(tmp_path: Path, reference) -> None:
    """No `limit:` (a sweep's applies to every protocol): AEGIS runs its command of `reference`,
    GENIUS all its bundled cases."""
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f'out: {tmp_path / "out"}\ncache: {tmp_path / "cache"}\nprotocols: [genius, aegis]\nmodels: ["{MODEL}"]\n')
    umni("sweep", sweep, cwd=tmp_path)
    first = (tmp_path / "out" / "leaderboard.md").read_text()
    runs = {json.loads(p.read_text())["protocol"]: p.parent for p in (tmp_path / "out").rglob("summary.json")}
    genius = counted(runs["genius"])
    umni("sweep", sweep, cwd=tmp_path)  # every run finished: assembled again from run.db
    assert (tmp_path / "out" / "leaderboard.md").read_text() == first
    assert counted(runs["aegis"]) == reference["aegis"][0]
    assert counted(runs["genius"]) == genius and genius["skipped"] > 0
