"""Image blobs in an S3-compatible object store (issue 26 item 4), against a real server: moto's
server mode in a subprocess on 127.0.0.1 (`s3_server`). Put-if-absent, hash checks on read, a
damaged object never used, a server killed mid-run (the run stops with a storage error, nothing
stored is lost, the resume finishes), and whole runs byte-identical to the folder store's."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from PIL import Image
from s3_server import S3Server
from store_runs import RUN_TIMEOUT, command, run

from umni.protocols.protocol import get_protocol
from umni.store.cache import Cache
from umni.store.objectstore import S3Blobs
from umni.store.urls import open_blobs
from umni.util.errors import ConfigError, StorageError


def _bundled_cases() -> int:
    protocol = get_protocol("umnibench")
    return len(protocol.load(protocol.bundled_cases(), protocol.parse_options({})).cases)


#: Every bundled UmniBench case: the whole benchmark on sim/umm.
LIMIT = _bundled_cases()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """results.jsonl of the run on the folder store."""
    tmp = tmp_path_factory.mktemp("folder")
    run(tmp / "out", ["--cache", str(tmp / "cache"), "--blobs", str(tmp / "blobs")], limit=LIMIT)
    return (tmp / "out" / "results.jsonl").read_bytes()


_prefixes = itertools.count()


@pytest.fixture
def prefix() -> str:
    return f"t{next(_prefixes)}"


def blobs_url(server: S3Server, prefix: str) -> str:
    return f"s3://umni-blobs/{prefix}?endpoint_url={server.endpoint}"


def test_objects_are_content_addressed_and_never_rewritten(s3: S3Server, prefix: str) -> None:
    store = open_blobs(blobs_url(s3, prefix))
    assert isinstance(store, S3Blobs)
    ref = store.put(Image.new("RGB", (8, 8), (10, 20, 30)))
    key = f"umni-blobs/{prefix}/{ref.sha256[:2]}/{ref.sha256}.png"
    client = s3.client()
    first = client.info(key)["ETag"]
    again = open_blobs(blobs_url(s3, prefix))  # another process: the object is there, so nothing is written
    assert again.put(Image.new("RGB", (8, 8), (10, 20, 30))) == ref
    assert client.info(key, refresh=True)["LastModified"] == client.info(key)["LastModified"] and client.info(key)["ETag"] == first
    assert again.verify(ref.sha256) and again.open(ref).getpixel((0, 0)) == (10, 20, 30)
    assert hashlib.sha256(client.cat_file(key)).hexdigest() == ref.sha256


@pytest.mark.parametrize("damage", [b"not a png", "truncated"])
def test_a_damaged_object_is_reported_never_used_and_repaired_by_the_next_put(s3: S3Server, prefix: str, damage: bytes | str) -> None:
    image = Image.new("RGB", (16, 16), (200, 1, 2))
    ref = open_blobs(blobs_url(s3, prefix)).put(image)
    key = f"umni-blobs/{prefix}/{ref.sha256[:2]}/{ref.sha256}.png"
    good = s3.client().cat_file(key)
    s3.client().pipe_file(key, good[: len(good) // 2] if damage == "truncated" else damage)
    reader = open_blobs(blobs_url(s3, prefix))
    assert reader.exists(ref.sha256) and not reader.verify(ref.sha256)
    with pytest.raises(FileNotFoundError, match="is damaged"):
        reader.open(ref)
    reader.put(image)  # replaces the damaged object (conditional on its ETag), as the folder store rewrites a damaged file
    assert s3.client().cat_file(key) == good and open_blobs(blobs_url(s3, prefix)).verify(ref.sha256)


def test_a_put_that_loses_the_race_to_another_writer_keeps_the_sound_object(s3: S3Server, prefix: str) -> None:
    data = b"the same bytes from two shards"
    sha = hashlib.sha256(data).hexdigest()
    store = open_blobs(blobs_url(s3, prefix))
    assert isinstance(store, S3Blobs)
    s3.client().pipe_file(f"umni-blobs/{store.key(sha)}", data)  # written between our HEAD and our PUT
    looked = store._etag
    store._etag = lambda name, seen=[]: None if not seen and not seen.append(1) else looked(name)  # type: ignore[method-assign]
    store.put_png(data, 1, 1)  # If-None-Match refuses the PUT; the object there is sound: done
    assert store.verify(sha)


def test_bad_urls_and_a_missing_bucket_are_config_errors(s3: S3Server, prefix: str) -> None:
    with pytest.raises(ConfigError, match="bucket 'no-such-bucket' does not exist"):
        open_blobs(f"s3://no-such-bucket/x?endpoint_url={s3.endpoint}")
    with pytest.raises(ConfigError, match="unknown parameter"):
        open_blobs(f"s3://umni-blobs/x?endpoint_url={s3.endpoint}&bogus=x")
    with pytest.raises(ConfigError, match="names a bucket"):
        open_blobs("s3:///x")


def test_an_unreachable_server_is_a_storage_error(s3: S3Server, prefix: str) -> None:
    store = S3Blobs(blobs_url(s3, prefix), retries=2)
    ref = store.put(Image.new("L", (4, 4), 9))
    s3.kill()
    with pytest.raises(StorageError, match="object store request failed"):
        store.verify(ref.sha256)
    s3.start()  # back with what it stored
    assert S3Blobs(blobs_url(s3, prefix)).verify(ref.sha256)


def test_a_run_with_s3_blobs_is_byte_identical_to_the_folder_store(tmp_path: Path, s3: S3Server, reference: bytes) -> None:
    run(tmp_path / "s3", ["--cache", str(tmp_path / "c2"), "--blobs", "s3://umni-blobs/run"], limit=LIMIT,
        env={"AWS_ENDPOINT_URL": s3.endpoint})  # the endpoint from the environment, as AWS tools take it
    assert (tmp_path / "s3" / "results.jsonl").read_bytes() == reference
    client = s3.client()
    stored = client.cat(client.find("umni-blobs/run"))  # every object, in one batch of requests
    assert stored and all(hashlib.sha256(data).hexdigest() == Path(key).stem for key, data in stored.items())
    assert list((tmp_path / "s3" / "images").iterdir())  # the report's images came out of the object store


def test_the_server_dying_mid_run_stops_it_and_the_resume_is_byte_identical(tmp_path: Path, s3: S3Server, reference: bytes) -> None:
    store_args = ["--cache", str(tmp_path / "c2"), "--blobs", f"s3://umni-blobs/killed?endpoint_url={s3.endpoint}"]
    out = tmp_path / "s3"
    proc = subprocess.Popen(command(out, store_args, limit=LIMIT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "AWS_MAX_ATTEMPTS": "2"})  # botocore's own setting: give up sooner  # fmt: skip
    while not (out / "events.jsonl").exists() or (out / "events.jsonl").stat().st_size < 4000:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.01)
    s3.kill()  # SIGKILL: the server is gone in the middle of the run
    _, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 1, stderr
    assert "object store request failed" in stderr and "Traceback" not in stderr
    assert not (out / "summary.json").exists()

    s3.start()  # back, with every object it had stored
    cache = Cache(store_args[1], blobs=store_args[3])
    try:
        assert cache.integrity_errors() == []  # every stored result's image is there and sound
    finally:
        cache.close()
    run(out, store_args, limit=LIMIT)
    assert (out / "results.jsonl").read_bytes() == reference



def test_a_request_the_dying_server_cut_off_leaves_no_traceback_behind(s3: S3Server, prefix: str, caplog) -> None:
    """aiohttp streams a request's body in a task of its own; when the server dies mid-request the
    request fails (a StorageError, reported once) and that task's exception was never retrieved, so
    asyncio logged it, traceback and all, on stderr at some later moment (a fresh-clone CI run
    failed on it). Such network errors of orphaned tasks are dropped; anything else still reaches
    asyncio's own handler."""
    import aiohttp

    blobs = S3Blobs(blobs_url(s3, prefix))
    loop = blobs._fs.loop
    cut_off = {"message": "Task exception was never retrieved", "exception": aiohttp.ClientOSError(32, "Broken pipe")}
    other = {"message": "Task exception was never retrieved", "exception": ValueError("a bug")}
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.call_soon_threadsafe(loop.call_exception_handler, cut_off)
        loop.call_soon_threadsafe(loop.call_exception_handler, other)
        done = threading.Event()
        loop.call_soon_threadsafe(done.set)
        assert done.wait(5)
    logged = [r.getMessage() + str(r.exc_info) for r in caplog.records if r.name == "asyncio"]
    assert len(logged) == 1 and "a bug" in logged[0]
