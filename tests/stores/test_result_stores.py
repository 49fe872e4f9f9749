"""The result store contract, on SQLite and on a real PostgreSQL server (parametrized `store`)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from umni.store.cache import Cache
from umni.store.results import row_checksum
from umni.store.sqlite import SqliteResults
from umni.store.urls import open_blobs, open_results
from umni.util.errors import ConfigError, StorageError


def _raw_update(cache: Cache, key: str, output_text: str) -> None:
    """Change a row's stored output behind the store's back (damage)."""
    results = cache.results
    if isinstance(results, SqliteResults):
        results.db.execute("UPDATE results SET output=? WHERE key=?", (output_text, key))
    else:
        results.session.run(lambda conn: conn.execute("UPDATE umni_results SET output=%s WHERE key=%s", (output_text, key)))


def test_the_first_row_written_wins_and_is_returned(store, tmp_path: Path) -> None:
    first, second = Cache(store.cache, blobs=store.blobs), Cache(store.cache, blobs=store.blobs)  # two processes' views
    try:
        assert asyncio.run(first.store("k", "generate", {"value": 1})) == {"value": 1}
        # another process computed the same key (a float differing in the last place): it gets the first row
        assert asyncio.run(second.store("k", "generate", {"value": 1.0000000000000002})) == {"value": 1}
        assert second.get("k") == {"value": 1}
        assert len(list(first.results.rows())) == 1
    finally:
        first.close()
        second.close()


def test_get_many_returns_only_verified_hits(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        for i in range(3):
            cache.put_if_absent(f"k{i}", "compute", {"value": i})
        _raw_update(cache, "k1", '{"value": 99}')  # fails its checksum now
        found = asyncio.run(cache.lookup_many(["k0", "k1", "k2", "missing", "k0"]))
        assert found == {"k0": {"value": 0}, "k2": {"value": 2}}
    finally:
        cache.close()


def test_a_damaged_row_is_a_miss_and_the_next_write_replaces_it(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        cache.put_if_absent("k", "compute", {"value": 1})
        _raw_update(cache, "k", '{"value": 2}')
        assert cache.get("k") is None
        assert asyncio.run(cache.store("k", "compute", {"value": 3})) == {"value": 3}
        assert cache.get("k") == {"value": 3}
        assert cache.integrity_errors() == []
    finally:
        cache.close()


def test_provenance_is_stored_beside_the_result_and_not_in_its_key(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        cache.provenance = {**cache.provenance, "torch_threads": 1}
        asyncio.run(cache.store("k", "generate", {"value": 1}))
        cache.provenance = {**cache.provenance, "torch_threads": 2}
        asyncio.run(cache.store("k", "generate", {"value": 1}))
        (row,) = list(cache.results.rows())
        provenance = json.loads(row.provenance)
        assert provenance["torch_threads"] == 1  # the copy that was kept says where it was made
        assert {"host", "python", "umni", "libraries", "device"} <= set(provenance)
        assert row.checksum == row_checksum("k", "generate", row.output)  # provenance is not in the row's identity
    finally:
        cache.close()


def test_a_burst_of_writes_shares_commits(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)

    async def burst() -> list[dict]:
        return await asyncio.gather(*(cache.store(f"k{i}", "compute", {"value": i}) for i in range(200)))

    try:
        assert asyncio.run(burst()) == [{"value": i} for i in range(200)]
        assert cache.results.commits < 200  # one writer, batched: not one commit per result
        assert asyncio.run(cache.lookup_many([f"k{i}" for i in range(200)])) == {
            f"k{i}": {"value": i} for i in range(200)
        }
    finally:
        cache.close()


def test_forget_removes_a_result(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        cache.put_if_absent("k", "compute", {"value": 1})
        asyncio.run(cache.results.forget("k"))
        assert cache.get("k") is None
    finally:
        cache.close()


_OPEN_AND_WRITE = """
import sys, time
from umni.store.cache import Cache
location, blobs, index, at = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
time.sleep(max(0.0, at - time.time()))  # every process opens the fresh store at the same moment
cache = Cache(location, blobs=blobs)
cache.put_if_absent("from-" + index, "compute", {"value": int(index)})
cache.close()
"""


def test_several_processes_creating_the_schema_at_once_all_succeed(store) -> None:
    processes = 6
    at = time.time() + 3.0  # after every interpreter has started and imported umni
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AND_WRITE, store.cache, store.blobs, str(i), str(at)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    errors = [w.communicate(timeout=120)[1] for w in workers]
    assert [w.returncode for w in workers] == [0] * processes, errors
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        assert sorted(row.key for row in cache.results.rows()) == sorted(f"from-{i}" for i in range(processes))
    finally:
        cache.close()


def test_an_unreachable_server_is_a_storage_error_naming_the_store_without_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(StorageError) as caught:
        open_results(f"postgresql://umni:s3cret@127.0.0.1:{port}/db?connect_timeout=5")
    assert f"postgresql://umni@127.0.0.1:{port}/db" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_store_and_blob_urls(tmp_path: Path) -> None:
    results, blobs = open_results(f"sqlite://{tmp_path}/c")
    assert (
        isinstance(results, SqliteResults)
        and results.path == tmp_path / "c" / "cache.db"
        and blobs == tmp_path / "c" / "blobs"
    )
    results.close_now()
    results, blobs = open_results(f"sqlite://{tmp_path}/one.db")
    assert results.path == tmp_path / "one.db" and blobs == tmp_path / "blobs"
    results.close_now()
    assert open_blobs(f"file://{tmp_path}/b").root == tmp_path / "b"
    with pytest.raises(ConfigError, match="unknown store scheme 'redis'"):
        open_results("redis://localhost/0")
    with pytest.raises(ConfigError, match="known: file, s3.*register one with umni.stores.register_blob_scheme"):
        open_blobs("gs://bucket/prefix")
    with pytest.raises(ConfigError, match="three slashes"):
        open_blobs("file://host/dir")


def test_the_runner_reads_a_network_store_only_through_its_async_interface(pg_url: str, tmp_path: Path) -> None:
    """A lookup on the scheduling path must not block the event loop on a network round trip: with
    the store's synchronous methods refusing, a run that hits the cache must still finish."""
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph
    from umni.util.spec import Spec
    from umni_adapters.sim import SimBackend  # the reference backend

    def graph() -> Graph:
        g = Graph("case-1")
        image = g.generate("draw", ["a red cube"])
        g.answer("q", [image, "what colour is the cube?"], ["red", "blue"])
        return g

    cache = Cache(pg_url, blobs=tmp_path / "blobs")
    try:
        bindings = Bindings(
            {"generate": SimBackend(Spec.parse("sim/umm")), "understand": SimBackend(Spec.parse("sim/umm"))}
        )
        first = asyncio.run(Runner(bindings, cache).run_graph(graph()))
        assert {o.status for o in first.values()} == {"computed"}
        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("a synchronous store call on the event loop")

        for name in ("get_now", "put_now", "forget_now"):  # only the async methods remain
            setattr(cache.results, name, refuse)
        second = asyncio.run(Runner(bindings, cache).run_graph(graph()))
        assert {o.status for o in second.values()} == {"cached"}
        assert second["q"].output == first["q"].output
    finally:
        cache.close()


def test_a_server_that_stays_away_fails_writes_with_one_storage_error_after_the_reconnect_bound(tmp_path: Path) -> None:
    from pg_server import PostgresServer

    server = PostgresServer().start()
    try:
        url = server.create_database("gone") + "?reconnect_timeout=2"
        cache = Cache(url, blobs=tmp_path / "blobs")
        assert asyncio.run(cache.store("before", "compute", {"value": 1})) == {"value": 1}
    finally:
        server.stop()

    async def write() -> None:  # bounded: a writer left waiting forever fails here instead of hanging
        await asyncio.wait_for(cache.store("after", "compute", {"value": 2}), timeout=60)

    try:
        for _ in range(2):  # a fresh loop each time: its writes must fail the same way
            started = time.monotonic()
            with pytest.raises(StorageError) as caught:
                asyncio.run(write())
            assert time.monotonic() - started < 30
            message = str(caught.value)
            assert "could not reconnect within 2 s (reconnect_timeout in the store URL)" in message
            assert "\n" not in message and message.startswith(f"postgresql://umni@127.0.0.1:{server.port}/gone")
    finally:
        cache.close()


def test_provenance_names_the_backend_and_its_device(tmp_path: Path) -> None:
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph
    from umni.util.spec import Spec
    from umni_adapters.sim import SimBackend

    class OnSecondGpu(SimBackend):  # the reference backend, placed as a local model would be
        device = "cuda:1"
        dtype = "bfloat16"

    g = Graph("case-1")
    g.generate("draw", ["a red cube"])
    cache = Cache(tmp_path / "cache")
    try:
        asyncio.run(Runner(Bindings({"generate": OnSecondGpu(Spec.parse("sim/umm"))}), cache).run_graph(g))
        (row,) = list(cache.results.rows())
        provenance = json.loads(row.provenance)
        assert (provenance["backend"], provenance["device"], provenance["dtype"]) == ("sim/umm", "cuda:1", "bfloat16")
    finally:
        cache.close()


def test_many_first_lookups_at_once_share_one_connection(pg_url: str, tmp_path: Path) -> None:
    """300 lookups started together on a fresh event loop (a run's first wave of nodes) must not
    each open connections: the test server allows 200 clients."""
    cache = Cache(pg_url, blobs=tmp_path / "blobs")
    cache.put_if_absent("k7", "compute", {"value": 7})

    async def wave() -> list[dict | None]:
        return await asyncio.gather(*(cache.lookup(f"k{i}") for i in range(300)))

    try:
        found = asyncio.run(wave())
        assert found[7] == {"value": 7} and sum(f is not None for f in found) == 1
    finally:
        cache.close()


def test_two_writers_storing_the_same_keys_in_opposite_orders_do_not_deadlock(store) -> None:
    """Two processes computing the same work commit overlapping batches at the same moment. On
    PostgreSQL, rows inserted in different orders by two open transactions wait on each other,
    and the server kills one of them ('deadlock detected'): a run died with a StorageError."""
    import threading

    keys = [f"{i:064x}" for i in range(300)]
    errors: list[BaseException] = []

    def writer(order: list[str]) -> None:
        cache = Cache(store.cache, blobs=store.blobs)

        async def burst() -> None:
            await asyncio.gather(*(cache.store(key, "answer", {"key": key}) for key in order))

        try:
            for _ in range(3):
                asyncio.run(burst())
        except BaseException as exc:
            errors.append(exc)
        finally:
            cache.close()

    threads = [threading.Thread(target=writer, args=(order,)) for order in (keys, keys[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    check = Cache(store.cache, blobs=store.blobs)
    try:
        assert asyncio.run(check.lookup_many(keys)) == {key: {"key": key} for key in keys}
    finally:
        check.close()
