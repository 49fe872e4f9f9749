"""Every row of cache.db and run.db carries a checksum: a changed byte that `PRAGMA integrity_check`
cannot see is a cache miss (recomputed, row replaced) or a refusal naming run.db — never a score."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from reliability_support import read_results, umni_run_command

from umni.run.evaluation import RunRequest, evaluate
from umni.store.cache import Cache, RunStore
from umni.util.errors import StorageError

LIMIT = 3


def _run(out: Path, cache: Path) -> dict:
    return evaluate(RunRequest(protocol="umnibench", out=out, cache=cache, limit=LIMIT, model="sim/umm", progress=False)).summary


def _flip_answer(db: Path, table: str, column: str, old: str = '"index":0', new: str = '"index":1') -> int:
    """Rewrite `old` to `new` inside stored JSON, as one flipped byte would (a chosen option, a
    correctness bit); the file stays a valid database. Returns how many rows changed."""
    conn = sqlite3.connect(db)
    try:
        changed = conn.execute(
            f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?) > 0", (old, new, old)
        ).rowcount
        conn.commit()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    return changed


def test_a_changed_cache_row_is_a_miss_and_is_replaced(tmp_path):
    cache = tmp_path / "cache"
    reference = _run(tmp_path / "reference", cache)
    assert _flip_answer(cache / "cache.db", "results", "output") > 0
    damaged = Cache(cache)
    assert any("fails its checksum" in p for p in damaged.integrity_errors())
    damaged.close()

    again = _run(tmp_path / "again", cache)
    assert again.scores == reference.scores
    assert read_results(tmp_path / "again") == read_results(tmp_path / "reference")
    assert again.counts.computed > 0  # the damaged rows were computed again ...
    healed = Cache(cache)
    assert healed.integrity_errors() == []  # ... and replaced
    healed.close()


def test_a_changed_run_db_row_is_refused_naming_the_file(tmp_path):
    out, cache = tmp_path / "run", tmp_path / "cache"
    _run(out, cache)
    assert _flip_answer(out / "run.db", "cases", "record", '"predicted": 0', '"predicted": 1') > 0
    with pytest.raises(StorageError) as caught:
        _run(out, cache)
    assert "run.db" in str(caught.value) and "checksum" in str(caught.value)
    done = subprocess.run(umni_run_command(out, cache, limit=LIMIT, model="sim/umm"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "run.db" in done.stderr


def test_a_cache_from_before_checksums_still_opens_and_its_rows_are_misses(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    conn = sqlite3.connect(root / "cache.db")
    conn.execute("CREATE TABLE results (key TEXT PRIMARY KEY, kind TEXT NOT NULL, output TEXT NOT NULL, created REAL NOT NULL)")
    conn.execute("INSERT INTO results VALUES ('k', 'answer', ?, 0)", (json.dumps({"index": 1}),))
    conn.commit()
    conn.close()
    cache = Cache(root)
    assert cache.get("k") is None  # unverifiable: computed again
    cache.put("k", "answer", {"index": 0})
    assert cache.get("k") == {"index": 0}
    cache.close()


def test_a_run_db_from_before_checksums_is_refused_with_a_message(tmp_path):
    path = tmp_path / "run.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cases (case_id TEXT PRIMARY KEY, position INTEGER NOT NULL, complete INTEGER NOT NULL, record TEXT NOT NULL)")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="older umni"):
        RunStore(path)
