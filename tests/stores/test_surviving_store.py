"""A PostgreSQL store that survives (issue 35 item 4): one connection per process by default, a server
restart in the middle of a run or of a sweep task changes nothing in the results, a write the restart
caught mid-transaction is written again and one it committed is not written twice, and a server that
stays away ends the run with one StorageError once `reconnect_timeout` has passed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_server import PostgresServer
from store_runs import NODES_PER_CASE, RUN_TIMEOUT, command, event_lines, summary

from umni.store.cache import Cache
from umni.store.postgres import PostgresResults
from umni.util.errors import ConfigError, StorageError

LIMIT = 12
SLOW = "sim/umm?latency=0.03"  # long enough (about 2 s) for a restart to land in the middle


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of the test's own, which it may restart."""
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


def slow_command(out: Path, url: str, blobs: Path) -> list[str]:
    return [part if part != "sim/umm?latency=0.01" else SLOW for part in command(out, ["--cache", url, "--blobs", str(blobs)], limit=LIMIT)]


def peak_connections(server: PostgresServer, database: str, proc: subprocess.Popen[str]) -> int:
    """The most client connections to `database` seen while `proc` runs (pg_stat_activity, polled;
    the server's own workers on the database, such as autovacuum's, are not the run's)."""
    most = 0
    with psycopg.connect(server.url(), autocommit=True) as watch:
        while proc.poll() is None:
            count = watch.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'", (database,)).fetchone()
            most = max(most, int(count[0]))
            time.sleep(0.005)
    return most


def finished(proc: subprocess.Popen[str]) -> str:
    _, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, stderr
    return stderr


@pytest.fixture
def vacuuming_server() -> Iterator[PostgresServer]:
    """A server whose autovacuum visits each database every second: its workers show in
    pg_stat_activity under the database they clean, beside the clients (a count of every backend
    of the run's database saw 2 now and then on a loaded machine)."""
    server = PostgresServer(settings={"autovacuum_naptime": "1"}).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_run_and_a_sweep_task_hold_one_connection_each_by_default(tmp_path: Path, vacuuming_server: PostgresServer) -> None:
    pg_server = vacuuming_server
    url = pg_server.create_database("one_connection")
    proc = subprocess.Popen(slow_command(tmp_path / "run", url, tmp_path / "blobs"), stderr=subprocess.PIPE, text=True)
    assert peak_connections(pg_server, "one_connection", proc) == 1
    finished(proc)
    url = pg_server.create_database("one_connection_sweep")
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        f"out: {tmp_path / 'sweep'}\ncache: {url}\nblobs: {tmp_path / 'blobs'}\nprotocols: [umnibench]\n"
        f"models: ['{SLOW}', 'sim/umm?latency=0.02']\nlimit: 6\nshards: 2\n"
    )
    proc = subprocess.Popen([sys.executable, "-m", "umni", "sweep", str(sweep), "--shard", "1/1"], stderr=subprocess.PIPE, text=True)
    assert peak_connections(pg_server, "one_connection_sweep", proc) == 1  # four units at once, their claims, the assembly
    finished(proc)


def test_pool_size_in_the_url_sets_the_connections_and_a_bad_one_is_refused(pg_url: str, tmp_path: Path) -> None:
    results = PostgresResults(pg_url + "?pool_size=3&reconnect_timeout=5")
    try:
        assert (results.session.options.pool_size, results.session.options.reconnect_timeout) == (3, 5.0)

        async def burst() -> None:
            await asyncio.gather(*(results.get_many([f"k{i}"]) for i in range(30)))

        asyncio.run(burst())
        assert 1 <= results.session.connections() <= 3
    finally:
        results.close_now()
    # libpq's own settings in the URL reach libpq as they were written (a space stays %20, not +)
    results = PostgresResults(pg_url + "?options=-c%20application_name%3Dumni-test&pool_size=2")
    try:
        assert results.session.run(lambda conn: conn.execute("SHOW application_name").fetchone()[0]) == "umni-test"
    finally:
        results.close_now()
    with pytest.raises(ConfigError, match=r"pool_size='0' in the store URL: Input should be greater than or equal to 1"):
        PostgresResults(pg_url + "?pool_size=0")


def _run_with_restart(server: PostgresServer, cmd: list[str], progress: Path, at_line: int) -> dict[str, float]:
    """Start `cmd`, restart the server once `progress` (a run folder) logged `at_line` events, and
    wait for the command; the timings of both."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while event_lines(progress) < at_line:
        assert proc.poll() is None, f"the run ended before the restart: {proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() - started < RUN_TIMEOUT
        time.sleep(0.002)
    restart_at = time.monotonic() - started
    away = server.restart(down_for=1.0)
    assert proc.poll() is None, "the run ended while the server was away"
    finished(proc)
    timings = {"restart_at_s": restart_at, "server_away_s": away, "run_s": time.monotonic() - started}
    print(f"restart timings: {timings}")
    return timings


def _assert_store_whole(url: str, blobs: Path, nodes: int) -> None:
    cache = Cache(url, blobs=blobs)
    try:
        assert cache.integrity_errors() == []
        assert len(list(cache.results.rows())) == nodes  # each result once
    finally:
        cache.close()


def test_a_server_restart_in_the_middle_of_a_run_changes_nothing(tmp_path: Path, own_server: PostgresServer) -> None:
    calm_url = own_server.create_database("calm")
    calm = subprocess.run(slow_command(tmp_path / "calm", calm_url, tmp_path / "blobs"), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert calm.returncode == 0, calm.stderr
    url = own_server.create_database("restarted")
    out = tmp_path / "restarted"
    # a third of the way in: cases finished before the restart, the rest after it
    timings = _run_with_restart(own_server, slow_command(out, url, tmp_path / "blobs"), out, LIMIT * NODES_PER_CASE // 3)
    assert timings["run_s"] > timings["restart_at_s"] + timings["server_away_s"]
    assert (out / "results.jsonl").read_bytes() == (tmp_path / "calm" / "results.jsonl").read_bytes()
    counts = summary(out)["counts"]
    assert counts["computed"] + counts["cached"] == LIMIT * NODES_PER_CASE and counts["failed"] == 0
    _assert_store_whole(url, tmp_path / "blobs", LIMIT * NODES_PER_CASE)


def test_a_server_restart_in_the_middle_of_a_sweep_task_changes_nothing(tmp_path: Path, own_server: PostgresServer) -> None:
    def sweep_file(name: str, url: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            f"out: {tmp_path / name}\ncache: {url}\nblobs: {tmp_path / 'blobs'}\nprotocols: [umnibench]\n"
            f"models: ['{SLOW}']\nlimit: {LIMIT}\nshards: 2\n"
        )
        return path

    calm = sweep_file("calm", own_server.create_database("calm_sweep"))
    assert subprocess.run([sys.executable, "-m", "umni", "sweep", str(calm), "--shard", "1/1"], capture_output=True, timeout=RUN_TIMEOUT).returncode == 0
    url = own_server.create_database("restarted_sweep")
    task = [sys.executable, "-m", "umni", "sweep", str(sweep_file("restarted", url)), "--shard", "1/1"]
    label = next(p.name for p in (tmp_path / "calm" / "umnibench").iterdir() if "-shard" not in p.name)  # the assembled run
    first_unit = tmp_path / "restarted" / "umnibench" / f"{label}-shard1of2"
    _run_with_restart(own_server, task, first_unit, LIMIT * NODES_PER_CASE // 6)
    for name in ("leaderboard.json", f"umnibench/{label}/results.jsonl"):
        calm_text = (tmp_path / "calm" / name).read_text().replace(str(tmp_path / "calm"), "<out>")
        assert (tmp_path / "restarted" / name).read_text().replace(str(tmp_path / "restarted"), "<out>") == calm_text
    _assert_store_whole(url, tmp_path / "blobs", LIMIT * NODES_PER_CASE)
    with psycopg.connect(url, autocommit=True) as conn:  # every claim was released
        assert conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0] == 0


def _end_own_connection(results: PostgresResults) -> None:
    """End the store's server process from outside, as a restart does."""
    (pid,) = [link.pid for link in results.session.links]
    with psycopg.connect(results.session._dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))  # returns once it has ended


def _write_that_loses_its_connection(results: PostgresResults, *, after_commit: bool) -> Any:
    """`_write_batch` whose first call loses its connection: before COMMIT (the server aborts the
    transaction) or after it (the client sees an error for a transaction that committed)."""
    original = PostgresResults._write_batch
    calls = {"n": 0}

    def write(conn: Any, batch: list[Any]) -> Any:
        calls["n"] += 1
        if calls["n"] > 1:
            return original(conn, batch)
        if after_commit:
            original(conn, batch)
            _end_own_connection(results)
            conn.execute("SELECT 1")  # the reply a restart would have cut off
        with conn.transaction():
            conn.execute("INSERT INTO umni_results(key, kind, output, created) VALUES ('partial', 'x', '{}', 0)")
            _end_own_connection(results)
            conn.execute("SELECT 1")
        raise AssertionError("unreachable: the connection was ended")

    return write, calls


@pytest.mark.parametrize("after_commit", [False, True], ids=["aborted", "committed"])
def test_a_write_cut_off_by_a_restart_is_stored_exactly_once(pg_url: str, after_commit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    results = PostgresResults(pg_url)
    try:
        write, calls = _write_that_loses_its_connection(results, after_commit=after_commit)
        monkeypatch.setattr(PostgresResults, "_write_batch", staticmethod(write))

        async def burst() -> list[dict[str, Any]]:
            return await asyncio.gather(*(results.put_if_absent(f"k{i}", "compute", {"value": i}) for i in range(20)))

        assert asyncio.run(burst()) == [{"value": i} for i in range(20)]  # each caller's own output: no winner in the way
        assert calls["n"] == 2 and results.session.reconnects == 1
        keys = sorted(row.key for row in results.rows())
        assert keys == sorted(f"k{i}" for i in range(20))  # no 'partial' row, nothing twice
        if after_commit:  # the rewrite found the committed rows and left them as they were
            created = results.session.run(lambda conn: conn.execute("SELECT count(DISTINCT created) FROM umni_results").fetchone()[0])
            assert created == 1
    finally:
        results.close_now()


def test_reads_and_sync_writes_go_on_after_the_connection_is_cut(pg_url: str) -> None:
    results = PostgresResults(pg_url)
    try:
        results.put_now("a", "compute", {"value": 1})
        _end_own_connection(results)
        assert results.get_now("a") == {"value": 1}
        _end_own_connection(results)
        assert asyncio.run(results.get_many(["a", "b"])) == {"a": {"value": 1}}
        _end_own_connection(results)
        results.forget_now("a")
        assert results.get_now("a") is None and results.session.reconnects == 3
    finally:
        results.close_now()


def test_an_unreachable_server_at_start_fails_at_once(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(StorageError, match="Connection refused|connection refused"):
        PostgresResults(f"postgresql://umni@127.0.0.1:{port}/db")  # default reconnect_timeout: 300 s
    assert time.monotonic() - started < 30


def test_emit_slurm_warns_when_the_array_would_hold_more_connections_than_the_server_admits(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from umni.cli import main

    def emit(cache: str, slurm: str = "") -> str:
        path = tmp_path / "s.yaml"
        path.write_text(f"out: {tmp_path / 'sweep'}\ncache: '{cache}'\nprotocols: [umnibench]\nmodels: [sim/umm]\nshards: 250\n{slurm}")
        assert main(["sweep", str(path), "--emit", "slurm"]) == 0
        return capsys.readouterr().err

    # the test server admits 200 clients, 3 of them kept for superusers
    assert emit(pg_url) == (
        f"umni: warning: the array opens up to 250 task(s) at once × 1 connection(s) = 250 connections to {pg_url}, more "
        "than its max_connections (200, 3 of them reserved for superusers); cap the array with `slurm: {max_jobs: 197}` "
        "in the sweep file or raise max_connections\n"
    )
    assert emit(pg_url, "slurm: {max_jobs: 150}\n") == ""
    assert "= 300 connections" in emit(pg_url + "?pool_size=2", "slurm: {max_jobs: 150}\n")
    assert "{max_jobs: 98}" in emit(pg_url + "?pool_size=2", "slurm: {max_jobs: 150}\n")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gone = f"postgresql://umni@127.0.0.1:{port}/db"
    said = emit(gone)
    assert said.startswith(f"umni: note: could not read max_connections from {gone} (OperationalError: connection failed")
    assert said.endswith("; the array opens up to 250 task(s) at once × 1 connection(s) = 250 connections\n")
    assert said.count("\n") == 1
    assert emit(f"sqlite://{tmp_path / 'cache'}") == ""
