"""Storage faults: a full or read-only disk stops the run with one line and exit 1, is never booked
as a node failure, and a resume once the disk is fixed gives the uninterrupted result.

The faults are real: a small tmpfs that fills up (ENOSPC) and a tmpfs remounted read-only (EROFS).
Mounting needs root; elsewhere these tests are skipped and the fault classification is still
covered by `test_storage_error_classification`.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_support import read_results, umni_run_command

from umni.store.runfolder import RunFolder
from umni.util.errors import StorageError
from umni.util.storage import storage_error

LIMIT = 12


def _mount(target: Path, options: str) -> bool:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True)
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (too small for the run's images), unmounted afterwards."""
    target = tmp_path / "disk"
    target.mkdir()
    if os.geteuid() != 0 or not _mount(target, "size=256k,mode=0755"):
        pytest.skip("needs root to mount a tmpfs")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _run(out: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(umni_run_command(out, cache, limit=LIMIT, model="sim/umm"), capture_output=True, text=True, timeout=180)


def _assert_one_line(stderr: str, *expected: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and lines[0].startswith("umni: error:"), stderr
    assert any(word in lines[0] for word in expected), stderr


def _node_failures(out: Path) -> list[dict]:
    if not (out / "run.db").exists():
        return []
    conn = sqlite3.connect(f"file:{out / 'run.db'}?mode=ro", uri=True)
    try:
        records = [json.loads(r[0]) for r in conn.execute("SELECT record FROM cases")]
    finally:
        conn.close()
    return [n["failure"] for r in records for n in r["nodes"].values() if "failure" in n]


def test_a_full_disk_stops_the_run_and_resume_gives_the_uninterrupted_result(tmp_path, small_disk):
    reference = _run(tmp_path / "reference", tmp_path / "reference-cache")
    assert reference.returncode == 0, reference.stderr

    out, cache = tmp_path / "run", small_disk / "cache"
    full = _run(out, cache)
    assert full.returncode == 1, full.stdout + full.stderr
    _assert_one_line(full.stderr, "no space left", "database or disk is full")
    assert not (out / "summary.json").exists()  # no score from a part of the cases
    assert _node_failures(out) == []  # the disk's fault is nobody's node outcome

    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)  # space freed
    resumed = _run(out, cache)
    assert resumed.returncode == 0, resumed.stderr
    assert read_results(out) == read_results(tmp_path / "reference")
    summary = RunFolder(out).read_summary()
    assert summary.counts.failed == 0 and summary.counts.blocked == 0


def test_a_read_only_cache_stops_the_run_with_one_line(tmp_path, small_disk):
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    cache = small_disk / "cache"
    first = _run(tmp_path / "first", cache)
    assert first.returncode == 0, first.stderr
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    out = tmp_path / "second"
    done = subprocess.run(
        umni_run_command(out, cache, limit=LIMIT + 4, model="sim/umm"), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 1, done.stdout + done.stderr
    _assert_one_line(done.stderr, "read-only", "readonly", "unable to open")
    assert _node_failures(out) == []


def test_an_out_on_a_read_only_disk_is_one_line(tmp_path, small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    done = _run(small_disk / "run", tmp_path / "cache")
    assert done.returncode == 1, done.stdout + done.stderr
    _assert_one_line(done.stderr, "read-only")


def test_an_out_that_is_a_file_or_unwritable_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cmd = [sys.executable, "-m", "umni", "run", "umnibench", "--model", "sim/umm", "--limit", "1", "--quiet",
           "--cache", str(tmp_path / "cache")]  # fmt: skip
    for out in (blocker, blocker / "run"):
        done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        _assert_one_line(done.stderr, "a-file")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "/x/blob.png"), "no space left"),
        (OSError(errno.EROFS, "Read-only file system", "/x/blob.png"), "read-only"),
        (PermissionError(errno.EACCES, "Permission denied", "/x/blob.png"), "permission denied"),
        (sqlite3.DatabaseError("database disk image is malformed"), "malformed"),
        (sqlite3.OperationalError("disk I/O error"), "disk I/O error"),
        (sqlite3.OperationalError("database or disk is full"), "full"),
    ],
)
def test_storage_error_classification(error, expected):
    typed = storage_error(error, "/x/cache.db")
    assert isinstance(typed, StorageError) and expected in str(typed)
    assert "\n" not in str(typed)


@pytest.mark.parametrize("error", [FileNotFoundError(errno.ENOENT, "gone"), sqlite3.OperationalError("no such table: x"), ValueError("x")])
def test_other_errors_are_not_storage_faults(error):
    assert storage_error(error, "/x") is None
