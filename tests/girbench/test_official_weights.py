"""features=official without the extractors' weights on the machine: refused before any node runs.

Every run here is offline (HF_HUB_OFFLINE=1, empty hub and torch caches in tmp_path, every proxy a
closed loopback port): nothing may touch the network, and the check itself makes no network call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN = [sys.executable, "-m", "umni", "run", "girbench", "--model", "sim/umm", "--limit", "1", "--quiet", "--no-preflight"]


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    # any download that is still tried (today's code tried two) goes to a closed loopback port and fails at once
    closed = "http://127.0.0.1:9"
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), HF_HUB_CACHE=str(tmp_path / "hf" / "hub"),
               TORCH_HOME=str(tmp_path / "torch"), HTTP_PROXY=closed, HTTPS_PROXY=closed, ALL_PROXY=closed,
               http_proxy=closed, https_proxy=closed, all_proxy=closed, NO_PROXY="", no_proxy="")
    env.pop("UMNI_PRICES", None)
    return env


def run(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    args = [*RUN, "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")]
    for option in options:
        args += ["--option", option]
    return subprocess.run(args, env=env or offline_env(tmp_path), capture_output=True, text=True, timeout=300)


def node_events(out: Path) -> list[str]:
    events = out / "events.jsonl"
    if not events.exists():
        return []
    return [e["event"] for e in map(json.loads, events.read_text().splitlines()) if e["event"].startswith("node.")]


def test_official_uni_features_without_the_dinov3_weights_stop_the_run_before_any_node(tmp_path):
    done = run(tmp_path, "tasks=uni")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "features=embed" in done.stderr and "facebook/dinov3-vit7b16-pretrain-lvd1689m" in done.stderr
    assert done.stderr.count("features=official") == 1  # one message, not one per case
    assert node_events(tmp_path / "run") == []


def test_official_puzzle_features_without_the_inception_weights_stop_the_run_too(tmp_path):
    done = run(tmp_path, "tasks=puzzle")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "fid_weights=<local .pth file>" in done.stderr and "features=embed" in done.stderr
    assert str(tmp_path / "torch") in done.stderr  # where the standard weights were looked for
    assert node_events(tmp_path / "run") == []


def test_a_checkpoint_in_the_hub_cache_is_found_without_the_network(tmp_path):
    """A hub id whose snapshot is complete in the Hugging Face cache is found there (and loaded from
    that folder, so HF_HUB_OFFLINE runs work); a snapshot missing a shard is not taken for complete."""
    from umni_graphs.girbench.weights import local_checkpoint

    commit = "0" * 40
    repo = tmp_path / "models--umni-test--tiny-dinov3"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (snapshot / "config.json").write_text("{}")
    assert local_checkpoint("umni-test/tiny-dinov3", cache_dir=tmp_path) is None  # no weights yet
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (snapshot / "model.safetensors.index.json").write_text(json.dumps(index))
    (snapshot / "model-00001-of-00002.safetensors").write_bytes(b"x")
    assert local_checkpoint("umni-test/tiny-dinov3", cache_dir=tmp_path) is None  # a shard missing
    (snapshot / "model-00002-of-00002.safetensors").write_bytes(b"x")
    assert local_checkpoint("umni-test/tiny-dinov3", cache_dir=tmp_path) == snapshot
    assert local_checkpoint("umni-test/other", cache_dir=tmp_path) is None


def test_embed_features_need_no_local_weights(tmp_path):
    from umni_graphs.girbench.weights import missing_extractors

    assert missing_extractors(None, None) == []
    problems = missing_extractors(str(tmp_path / "no-such-folder"), str(tmp_path / "absent.pth"))
    assert len(problems) == 2 and all("--option features=embed" in p for p in problems)
