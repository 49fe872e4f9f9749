"""Image blobs in an S3-compatible object store (issue 26 item 4), against a real server: moto's
server mode in a subprocess on 127.0.0.1 (`s3_server`). Put-if-absent, hash checks on read, a
damaged object never used, a server killed mid-run (the run stops with a storage error, nothing
stored is lost, the resume finishes), and whole runs byte-identical to the folder store's."""

from __future__ import annotations

import hashlib
import itertools
import json
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


def test_the_viewer_says_once_why_the_images_of_an_unreachable_store_are_missing(tmp_path: Path, own_s3: S3Server) -> None:
    """Issue 34 item 10: two runs whose images live in an S3 store that has since become unreachable.
    `umni view` asks the store once (not once per run), says its error once on stderr and once in
    /api/index.json (naming both runs; the page shows it), and an image request answers 404 saying
    why, where it said nothing."""
    import re
    import sys
    import urllib.error
    import urllib.request

    url = blobs_url(own_s3, "viewer")
    for name in ("a", "b"):
        run(tmp_path / name, ["--cache", str(tmp_path / f"cache-{name}"), "--blobs", url], limit=1)
    own_s3.stop()  # the store is gone (the endpoint refuses connections)
    sha = re.findall(r'"image": ?"([0-9a-f]{64})"', (tmp_path / "a" / "results.jsonl").read_text())[0]

    process = subprocess.Popen([sys.executable, "-m", "umni", "view", str(tmp_path / "a"), str(tmp_path / "b")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        base = process.stdout.readline().split()[2] if process.stdout else ""
        with urllib.request.urlopen(base + "api/index.json", timeout=60) as response:
            index = json.loads(response.read())
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(base + f"img/{sha}.png", timeout=60)
        body = missing.value.read().decode()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    (error,) = index["store_errors"]
    assert error["blobs"] == url and error["runs"] == ["a", "b"]
    assert "Could not connect to the endpoint URL" in error["error"]
    assert missing.value.code == 404 and url in body and "Could not connect" in body
    said = [line for line in stderr.splitlines() if url in line]
    assert len(said) == 1 and "Could not connect" in said[0] and "images" in said[0], stderr


def test_a_store_that_stops_answering_while_viewed_is_said_once(tmp_path: Path, own_s3: S3Server, capsys: pytest.CaptureFixture[str]) -> None:
    """The store answered when the viewer started and is gone when a case is opened: the first image
    it cannot serve records its error (stderr once, the index for the page's next load), later
    images are not asked of it again (each would wait for the retries), nothing answers 500."""
    import re

    from umni.reporting.viewer import ViewerData

    url = blobs_url(own_s3, "viewed")
    run(tmp_path / "a", ["--cache", str(tmp_path / "cache"), "--blobs", url], limit=1)
    shas = sorted(set(re.findall(r'"image": ?"([0-9a-f]{64})"', (tmp_path / "a" / "results.jsonl").read_text())))
    data = ViewerData([tmp_path / "a"])
    assert data.image(shas[0], thumb=False) is not None and data.store_errors() == []
    own_s3.stop()
    assert data.image(shas[1], thumb=False) is None
    (error,) = data.store_errors()
    assert error["blobs"] == url and error["runs"] == ["a"] and "Could not connect" in error["error"]
    assert data.stores[url].blobs is None  # not asked again
    assert data.image(shas[2], thumb=False) is None and json.loads(data.index_json())["store_errors"] == [error]
    said = [line for line in capsys.readouterr().err.splitlines() if url in line]
    assert len(said) == 1, said
