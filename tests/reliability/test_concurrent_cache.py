"""Two `umni run` processes at once: one shared cache is safe, one shared run directory is refused."""

from __future__ import annotations

import fcntl
import json
import subprocess
import threading

from reliability_support import read_results, umni_run_command

from umni.cli import main
from umni.store.cache import Cache
from umni.store.sqlite import connect

LIMIT = 4


def test_many_openers_of_a_fresh_cache_file_all_get_it(tmp_path):
    # Several processes opening a new cache at once: SQLite refuses some of them "database is
    # locked" at once while switching the file to WAL (seen in CI as a run that died at start).
    refused = []
    for attempt in range(150):
        path = tmp_path / f"fresh-{attempt}" / "cache.db"
        start = threading.Barrier(4)

        def open_it(path=path, start=start):
            start.wait()
            try:
                connect(path).close()
            except Exception as exc:  # noqa: BLE001 - any refusal is the failure under test
                refused.append(f"{path.parent.name}: {exc}")

        openers = [threading.Thread(target=open_it) for _ in range(4)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
    assert refused == []


def test_two_runs_sharing_a_cache_both_finish_uncorrupted(tmp_path):
    cache = tmp_path / "cache"
    outs = [tmp_path / "a", tmp_path / "b"]
    procs = [subprocess.Popen(umni_run_command(out, cache, limit=LIMIT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for out in outs]  # fmt: skip
    for proc in procs:
        try:
            _, stderr = proc.communicate(timeout=120)  # a deadlock would end here, not hang CI
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError("two runs sharing a cache did not finish within 120 s") from None
        assert proc.returncode == 0, stderr

    store = Cache(cache)
    try:
        assert store.integrity_errors() == []
        (rows,) = store.db.execute("SELECT count(*) FROM results").fetchone()
    finally:
        store.close()
    assert rows == LIMIT * 12  # every node stored, whichever process computed it (the key is the primary key)

    first, second = (read_results(out) for out in outs)
    assert first == second
    assert [r["case_id"] for r in first] == [r["case_id"] for r in second] and len(first) == LIMIT

    # A third, sequential run over the shared cache computes nothing.
    done = subprocess.run(umni_run_command(tmp_path / "c", cache, limit=LIMIT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["counts"]["computed"] == 0
    assert read_results(tmp_path / "c") == first


def test_a_run_directory_in_use_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with open(out / ".lock", "w") as held:  # as another umni process holds it during its run
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code = main(["run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "cache"),
                     "--limit", "1", "--quiet"])  # fmt: skip
    assert code == 2
    assert "another umni process" in capsys.readouterr().err
    assert not (out / "summary.json").exists()
