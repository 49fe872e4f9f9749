"""Backend identity covers what changes outputs (issue 10.2): the full base URL of an HTTP backend,
and the bytes of local weights (remembered per file by size, mtime_ns and inode)."""

from __future__ import annotations

import os

from umni.util.filehash import file_sha256
from umni.util.spec import Spec
from umni_adapters.diffusion import _fingerprint_directory
from umni_adapters.hf_loading import local_revision
from umni_adapters.openai_http import OpenAIBackend


def identity(url: str) -> str:
    return OpenAIBackend(Spec.parse(f"openai/m?base_url={url}")).identity_hash()


def test_two_servers_on_one_host_are_two_identities():
    assert identity("http://127.0.0.1:8120/v1") != identity("http://127.0.0.1:8121/v1")
    assert identity("http://127.0.0.1:8120/v1") != identity("http://127.0.0.1:8120/other/v1")
    assert identity("https://api.example.com/v1") == identity("https://api.example.com:443/v1/")


def _checkpoint(folder, weights: bytes) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "tiny"}')
    path = folder / "model.safetensors"
    path.write_bytes(weights)


def test_weights_overwritten_in_place_with_the_same_size_change_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("UMNI_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "ckpt"
    _checkpoint(folder, b"\x00" * 4096)
    hf_before, diffusion_before = local_revision(folder), _fingerprint_directory(folder)
    weights = folder / "model.safetensors"
    stat = weights.stat()
    with open(weights, "r+b") as handle:  # same size, same inode, new bytes
        handle.write(b"\x01" * 4096)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert local_revision(folder) != hf_before
    assert _fingerprint_directory(folder) != diffusion_before


def test_a_file_hash_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("UMNI_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "w.bin"
    path.write_bytes(b"abc")
    first = file_sha256(path)
    assert (tmp_path / "cache" / "file-hashes.db").exists()
    assert file_sha256(path) == first
    path.write_bytes(b"abd")
    assert file_sha256(path) != first
