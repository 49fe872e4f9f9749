"""SIGKILL at random moments, then resume: nothing lost, nothing duplicated, nothing damaged.

Each chain kills `umni run` several times at seeded random moments (before startup finishes, in the
middle of cases, while results are being written), checks the cache and run.db after every kill,
and finally lets the run finish. The results must be those of a run that was never interrupted.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from reliability_support import read_results, run_db_case_ids, umni_run_command

from umni.store.cache import Cache, RunStore
from umni.store.runfolder import RunFolder

LIMIT = 4
CHAINS = 5
KILLS_PER_CHAIN = 4  # 20 kills in all
RUN_TIMEOUT = 120
NODES_PER_CASE = 12


def cached_results(cache: Path) -> int:
    if not (cache / "cache.db").exists():
        return 0
    conn = sqlite3.connect(f"file:{cache / 'cache.db'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet
        return 0
    finally:
        conn.close()


def run_to_end(out: Path, cache: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(umni_run_command(out, cache, limit=LIMIT), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started


def kill_after(out: Path, cache: Path, seconds: float) -> int | None:
    """Start a run, SIGKILL it after `seconds` (unless it finished first); its exit code if it did."""
    proc = subprocess.Popen(umni_run_command(out, cache, limit=LIMIT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=seconds)
        return proc.returncode
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return None


def assert_undamaged(out: Path, cache: Path) -> None:
    if (cache / "cache.db").exists():
        store = Cache(cache)
        try:
            assert store.integrity_errors() == []
        finally:
            store.close()
    ids = run_db_case_ids(out)  # opens read-only and runs PRAGMA integrity_check
    assert len(ids) == len(set(ids))
    if (out / "run.db").exists():
        RunStore(out / "run.db").close()  # and the engine itself can open it


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], float]:
    tmp = tmp_path_factory.mktemp("reference")
    seconds = run_to_end(tmp / "out", tmp / "cache")
    return read_results(tmp / "out"), seconds


def test_sigkill_at_random_moments_then_resume_loses_and_duplicates_nothing(tmp_path, reference):
    want, duration = reference
    rng = random.Random(20240611)
    kills_that_landed = 0
    for chain in range(CHAINS):
        out, cache = tmp_path / f"out{chain}", tmp_path / f"cache{chain}"
        finished_before: dict[str, dict] = {}
        for _ in range(KILLS_PER_CHAIN):
            code = kill_after(out, cache, rng.uniform(0.05, duration * 1.1))
            assert code in (None, 0)
            kills_that_landed += code is None
            assert_undamaged(out, cache)
            # A case recorded as finished stays finished, unchanged, through later kills.
            stored = {r["case_id"]: r for r in RunStore(out / "run.db").records()} if (out / "run.db").exists() else {}
            for case_id, record in finished_before.items():
                assert stored[case_id] == record
            finished_before = stored
        run_to_end(out, cache)
        assert_undamaged(out, cache)
        got = read_results(out)
        assert [r["case_id"] for r in got] == [r["case_id"] for r in want]  # none lost, none twice
        assert got == want
        summary = RunFolder(out).read_summary()
        assert summary.counts.cases == LIMIT and not any(summary.failures.values())
    assert kills_that_landed >= CHAINS * KILLS_PER_CHAIN // 2, "most kills should interrupt a live run"


def test_resume_writes_the_same_results_file_as_an_uninterrupted_run(tmp_path, reference):
    """Byte-level: results.jsonl must not depend on whether a node ran before or after a crash."""
    want, _ = reference
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = subprocess.Popen(umni_run_command(out, cache, limit=LIMIT, concurrency=1), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + RUN_TIMEOUT
    # Kill once a case is recorded and more results are cached than recorded cases account for:
    # a later case is half done.
    def half_done() -> bool:
        recorded = len(run_db_case_ids(out))
        return recorded > 0 and cached_results(cache) > NODES_PER_CASE * recorded + 1

    while not half_done() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert 0 < len(run_db_case_ids(out)) < LIMIT, "the kill should land between the first and the last case"
    assert cached_results(cache) > NODES_PER_CASE * len(run_db_case_ids(out)), "a case should be half done"
    run_to_end(out, cache)
    assert read_results(out) == want
