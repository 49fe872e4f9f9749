"""Image blobs left behind by a crash: a half-written or damaged blob must never be trusted.

Blobs are written to a ``.tmp-*`` file and renamed, so a kill mid-write leaves at worst a stray temp
file. A blob damaged afterwards (disk trouble, a user's tool, a kill in a copy) must be treated as
missing: reported by the integrity check, recomputed by the next run, and rewritten.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from reliability_support import read_results

from umni.run.evaluation import RunRequest, evaluate
from umni.store.cache import Cache

MODEL = "sim/umm"
LIMIT = 2


def run(out: Path, cache: Path) -> dict:
    return evaluate(RunRequest(protocol="umnibench", out=out, cache=cache, model=MODEL, limit=LIMIT, progress=False)).summary


def integrity(cache: Path) -> list[str]:
    store = Cache(cache)
    try:
        return store.integrity_errors()
    finally:
        store.close()


@pytest.fixture()
def warm(tmp_path: Path) -> tuple[Path, list[dict], str]:
    """A finished run's cache, its results, and the hash of the first case's generated image."""
    cache = tmp_path / "cache"
    run(tmp_path / "first", cache)
    records = read_results(tmp_path / "first")
    return cache, records, records[0]["stages"]["generation"]["image"]


def blob_path(cache: Path, sha: str) -> Path:
    return cache / "blobs" / sha[:2] / f"{sha}.png"


def test_a_leftover_temp_file_is_ignored(tmp_path, warm):
    cache, records, sha = warm
    stray = blob_path(cache, sha).parent / ".tmp-abc123.png"
    stray.write_bytes(blob_path(cache, sha).read_bytes()[:37])  # what a kill mid-write leaves
    assert integrity(cache) == []
    summary = run(tmp_path / "again", cache)
    assert read_results(tmp_path / "again") == records
    assert summary.counts.computed == 0  # nothing was recomputed because of the stray file


def test_a_missing_blob_is_reported_and_recomputed(tmp_path, warm):
    cache, records, sha = warm
    blob_path(cache, sha).unlink()
    assert any(sha[:12] in problem for problem in integrity(cache))
    summary = run(tmp_path / "again", cache)
    assert read_results(tmp_path / "again") == records
    assert summary.counts.computed == 1  # only the image whose blob was gone
    assert hashlib.sha256(blob_path(cache, sha).read_bytes()).hexdigest() == sha
    assert integrity(cache) == []


DAMAGE = {"truncated": lambda data: data[: len(data) // 2], "garbage": lambda data: b"\x89PNG not really", "empty": lambda data: b""}


def damage_blob(cache: Path, sha: str, how: str) -> Path:
    path = blob_path(cache, sha)
    path.write_bytes(DAMAGE[how](path.read_bytes()))
    return path


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_the_integrity_check_reports_a_damaged_blob(warm, how):
    cache, _, sha = warm
    damage_blob(cache, sha, how)
    assert any(sha[:12] in problem for problem in integrity(cache)), "the integrity check must see a damaged blob"


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_blob_is_recomputed_and_rewritten_not_trusted(tmp_path, warm, how):
    cache, records, sha = warm
    path = damage_blob(cache, sha, how)
    summary = run(tmp_path / "again", cache)  # must neither crash (report) nor fail nodes downstream
    assert not any(summary.failures.values()), summary.failures
    assert read_results(tmp_path / "again") == records
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha, "the damaged blob must be rewritten"
    report_copy = tmp_path / "again" / "images" / f"{sha}.png"
    assert hashlib.sha256(report_copy.read_bytes()).hexdigest() == sha, "the report must not show the damaged file"
