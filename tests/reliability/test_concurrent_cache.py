"""Two `umni run` processes at once: one shared cache is safe, one shared run directory is refused."""

from __future__ import annotations

import fcntl
import json
import subprocess

from reliability_support import read_results, umni_run_command

from umni.cli import main
from umni.store import Cache

LIMIT = 4


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
