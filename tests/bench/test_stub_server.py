"""`python -m bench.stub_server` stands in for a model server: every protocol that only needs
generate, edit, understand and judge runs against it with no failed node.

The stub used to answer ``Answer: A`` to every chat, which no judge parser accepts, so a GENIUS run
through it failed every judge node; these runs keep its replies readable by each protocol.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from umni.cli import main

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def stub_url() -> Iterator[str]:
    """The stub in its own process on a port we chose, so `--port` is exercised too."""
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.stub_server", "--port", str(port)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1", url
        yield url
    finally:
        child.communicate(timeout=10)  # closing its stdin stops it


@pytest.mark.parametrize("protocol", ["genius", "wise", "aegis", "umnibench"])
def test_protocol_runs_through_the_stub_with_no_failed_node(protocol: str, stub_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = main([
        "run", protocol, "--model", f"openai/stub?base_url={stub_url}", "--out", str(out),
        "--cache", str(tmp_path / "cache"), "--quiet", "--max-attempts", "1",
    ])  # fmt: skip
    assert code == 0
    counts = json.loads((out / "summary.json").read_text())["counts"]
    assert counts["computed"] > 0 and counts["failed"] == 0 and counts["blocked"] == 0, counts


def test_default_port_is_free_and_printed() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.stub_server"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    child.communicate(timeout=10)
    assert url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1].split("/")[0]) > 0
