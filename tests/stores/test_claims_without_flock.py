"""Claims without flock (issue 35 item 5): with a PostgreSQL store, run-folder locks and sweep unit
claims are advisory locks in the database, so a filesystem that refuses flock is safe; across a
reconnect a held lock is taken again, or, when another process took it meanwhile, its holder stops.
With a SQLite store on a shared filesystem umni says at start that locks depend on the filesystem,
and a filesystem that refuses flock is one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from umni.cli import main
from umni.store.pglocks import lock_key
from umni.store.postgres import PostgresResults
from umni.util.errors import InputError, StorageError
from umni.util.mounts import filesystem_of, shared_filesystem

#: Runs `umni` on a machine whose filesystem refuses flock (NFS without a lock manager answers ENOLCK).
NO_FLOCK = """
import errno, fcntl, os, sys, time
def refuse(*args, **kwargs):
    raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
fcntl.flock = refuse
at = float(sys.argv[1])
time.sleep(max(0.0, at - time.time()))  # both racers start at the same moment
from umni.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _holder_pid(url: str, key: int) -> int | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid::bigint = %s AND objid::bigint = %s",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        ).fetchone()
    return None if row is None else int(row[0])


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))


def test_an_advisory_lock_keeps_out_other_processes_and_a_second_holder_here(pg_url: str, tmp_path: Path) -> None:
    first, second = PostgresResults(pg_url), PostgresResults(pg_url)  # two processes' sessions
    try:
        held = first.locks.try_hold(tmp_path / "run", ".lock")
        assert held is not None and (tmp_path / "run").is_dir() and not (tmp_path / "run" / ".lock").exists()
        assert second.locks.try_hold(tmp_path / "run", ".lock") is None
        assert first.locks.try_hold(tmp_path / "run", ".lock") is None  # as flock: one holder, even in one process
        assert second.locks.try_hold(tmp_path / "other", ".lock") is not None
        held.release()
        assert second.locks.try_hold(tmp_path / "run", ".lock") is not None
    finally:
        first.close_now()
        second.close_now()


def test_a_lock_is_taken_again_when_its_connection_comes_back(pg_url: str, tmp_path: Path) -> None:
    holder, other = PostgresResults(pg_url), PostgresResults(pg_url)
    try:
        held = holder.locks.try_hold(tmp_path / "run", ".lock")
        assert held is not None
        key = lock_key(str((tmp_path / "run").resolve() / ".lock"))
        old = _holder_pid(pg_url, key)
        assert old == holder.session.links[0].pid
        _terminate(pg_url, old)  # the connection drops: the server lets the lock go
        assert holder.get_now("anything") is None  # the next call reconnects and takes the lock first
        assert _holder_pid(pg_url, key) == holder.session.links[0].pid != old
        assert other.locks.try_hold(tmp_path / "run", ".lock") is None
        held.check()
        held.release()
        assert _holder_pid(pg_url, key) is None
    finally:
        holder.close_now()
        other.close_now()


def test_a_lock_another_process_took_meanwhile_stops_its_old_holder(pg_url: str, tmp_path: Path) -> None:
    holder, thief = PostgresResults(pg_url), PostgresResults(pg_url)
    try:
        held = holder.locks.try_hold(tmp_path / "run", ".lock")
        assert held is not None
        _terminate(pg_url, holder.session.links[0].pid)
        assert thief.locks.try_hold(tmp_path / "run", ".lock") is not None  # while the holder was away
        with pytest.raises(StorageError, match=r"the lock on .*/run/\.lock was lost while the connection to the database was down"):
            holder.get_now("anything")
        with pytest.raises(StorageError, match="was lost"):
            held.check()
        with pytest.raises(StorageError, match="was lost"):  # every later call: the holder stops
            holder.put_now("k", "compute", {"value": 1})
        held.release()  # nothing to release; no error on the way out
    finally:
        holder.close_now()
        thief.close_now()


def test_a_lock_still_held_by_this_process_old_server_process_is_taken_back(pg_url: str, tmp_path: Path) -> None:
    """After a network cut the server may keep the old server process (and its locks) until it notices:
    the reconnected process ends it and takes the lock."""
    results = PostgresResults(pg_url)
    try:
        held = results.locks.try_hold(tmp_path / "run", ".lock")
        assert held is not None
        link = results.session.links[0]
        ghost, ghost_pid = link.conn, link.pid  # the server keeps this one; the process has lost sight of it
        link.conn = None
        assert results.get_now("anything") is None  # reconnects
        key = lock_key(str((tmp_path / "run").resolve() / ".lock"))
        assert held.lost is None and _holder_pid(pg_url, key) == link.pid != ghost_pid
        assert not _alive(pg_url, ghost_pid)
        ghost.close()
    finally:
        results.close_now()


def _alive(url: str, pid: int) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        return bool(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0])


def _sweep(tmp_path: Path, cache: str) -> Path:
    path = tmp_path / "race.yaml"
    path.write_text(
        f"out: {tmp_path / 'race'}\ncache: {cache}\nblobs: {tmp_path / 'blobs'}\nprotocols: [umnibench]\n"
        "models: ['sim/umm?latency=0.01', 'sim/umm?latency=0.01&skill=0.5', 'sim/umm?latency=0.01&skill=0.7']\n"
        "limit: 4\nshards: 2\n"
    )
    return path


def test_two_tasks_racing_on_the_same_units_without_flock_run_each_unit_once(tmp_path: Path, pg_url: str) -> None:
    sweep = _sweep(tmp_path, pg_url)
    at = str(time.time() + 4.0)  # after both interpreters have started
    racers = [
        subprocess.Popen([sys.executable, "-c", NO_FLOCK, at, "sweep", str(sweep), "--shard", part], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for part in ("1/1", "1/1")
    ]
    outputs = [r.communicate(timeout=300) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], [err for _, err in outputs]
    units = json.loads((tmp_path / "race" / "units" / "plan.json").read_text())["units"]
    assert len(units) == 6
    for unit in units:
        record = json.loads((tmp_path / "race" / "units" / f"{unit['unit']}.json").read_text())
        assert record["state"] == "done" and record["pid"] in {r.pid for r in racers}
        events = [json.loads(line)["event"] for line in (Path(unit["out"]) / "events.jsonl").read_text().splitlines()]
        assert events.count("run.start") == 1, unit  # one process ran it, once
        assert json.loads((Path(unit["out"]) / "summary.json").read_text())["counts"]["cached"] == 0  # nobody computed it before
    ran = [out.count(" computed, ") for out, _ in outputs]  # a line per unit a task ran
    assert sum(ran) == 6
    assert (tmp_path / "race" / "leaderboard.md").is_file()


def test_without_flock_a_sqlite_store_is_one_clear_error(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, f"sqlite://{tmp_path / 'cache'}")
    done = subprocess.run([sys.executable, "-c", NO_FLOCK, "0", "sweep", str(sweep), "--shard", "1/1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "this filesystem refuses file locks (flock: No locks available)" in lines[0]
    assert "use a PostgreSQL store" in lines[0]


MOUNTS = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
90 27 0:51 / {shared} rw,relatime - nfs4 fileserver:/export rw,vers=4.2
91 90 0:52 / {shared}/scratch\\040space rw - lustre 10.0.0.1@tcp:/scratch rw,flock
"""


def test_the_mount_table_names_the_filesystem_of_a_path(tmp_path: Path) -> None:
    table = MOUNTS.format(shared=tmp_path / "shared")
    assert filesystem_of(tmp_path / "shared" / "runs" / "x", table) == "nfs4"  # not made yet: its ancestor's
    assert filesystem_of(tmp_path / "shared" / "scratch space" / "y", table) == "lustre"
    assert filesystem_of(tmp_path / "sharedother", table) == "ext4"
    assert shared_filesystem(tmp_path / "local", table) is None
    assert filesystem_of(tmp_path, "") is None


def test_at_start_a_sqlite_store_on_a_shared_filesystem_says_locks_depend_on_it(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(MOUNTS.format(shared=tmp_path / "shared"))
    monkeypatch.setattr("umni.util.mounts.MOUNTINFO", table)
    args = ["run", "umnibench", "--model", "sim/umm", "--limit", "1", "--quiet", "--blobs", str(tmp_path / "blobs")]
    assert main([*args, "--out", str(tmp_path / "shared" / "a"), "--cache", str(tmp_path / "cache")]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "shared filesystem" in line]
    assert notes == [
        f"umni: note: {tmp_path / 'shared' / 'a'} is on a shared filesystem (nfs4): with a SQLite store, run-folder locks "
        "and sweep unit claims are file locks (flock) and hold across machines only if it honours them; a PostgreSQL "
        "store keeps them in the database"
    ]
    assert main([*args, "--out", str(tmp_path / "shared" / "b"), "--cache", pg_url]) == 0
    assert "shared filesystem" not in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "local"), "--cache", str(tmp_path / "cache")]) == 0
    assert "shared filesystem" not in capsys.readouterr().err


def test_a_run_folder_locked_in_the_database_refuses_a_second_run(tmp_path: Path, pg_url: str) -> None:
    holder = PostgresResults(pg_url)
    try:
        held = holder.locks.try_hold(tmp_path / "run", ".lock")
        assert held is not None
        with pytest.raises(InputError, match="another umni process is using this run directory"):
            from umni.run.config import build_config
            from umni.run.evaluation import evaluate

            evaluate(build_config({"protocol": "umnibench", "model": "sim/umm", "out": tmp_path / "run", "cache": pg_url, "limit": 1, "progress": False}))
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == []  # left as found
    finally:
        holder.close_now()
