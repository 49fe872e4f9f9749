"""The local-model plumbing shared by the transformers and diffusers backends."""

from __future__ import annotations

import threading
from pathlib import Path

from umni_adapters.local_models import LOAD_LOCK, ModelCache, fingerprint_files


def test_model_cache_loads_once_under_the_load_lock():
    cache: ModelCache[object] = ModelCache()
    loads: list[bool] = []

    def load() -> object:
        # an RLock reports ownership only through acquire(blocking=False) from another thread
        held = threading.Thread(target=lambda: loads.append(not LOAD_LOCK.acquire(blocking=False)))
        held.start()
        held.join()
        return object()

    threads = [threading.Thread(target=lambda: cache.get("model", load)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [True]  # one load, and another thread could not take LOAD_LOCK meanwhile
    first = cache.get("model", load)
    assert cache.get("model", load) is first
    cache.clear()
    assert cache.get("model", load) is not first


def test_fingerprint_follows_names_and_bytes(tmp_path: Path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"a" * 8)
    first = fingerprint_files(tmp_path, [weights])
    assert first.startswith("sha256:") and fingerprint_files(tmp_path, [weights]) == first
    weights.write_bytes(b"b" * 8)  # same size, new content
    assert fingerprint_files(tmp_path, [weights]) != first
    assert fingerprint_files(tmp_path, [weights], prefix=b"config") != fingerprint_files(tmp_path, [weights])
