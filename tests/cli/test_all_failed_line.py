"""A run whose every node failed exits 0 (failures are results) but says so last, naming
--fail-on-error (issue 27: a typo'd base_url gave 100 % failed nodes and a quiet exit 0)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from umni.cli import main


def test_every_node_failed_names_fail_on_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = f"openai/typo?base_url=http://127.0.0.1:{port}/v1&timeout=1"
    common = ["run", "umnibench", "--limit", "1", "--quiet", "--model", spec, "--max-attempts", "1",
              "--cache", str(tmp_path / "c")]
    assert main([*common, "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert "every node failed or was blocked" in err[-1] and "--fail-on-error" in err[-1]
    assert main([*common, "--out", str(tmp_path / "o2"), "--fail-on-error"]) == 3


def test_a_healthy_run_says_nothing_of_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "umnibench", "--limit", "1", "--quiet", "--model", "sim/umm", "--out", str(tmp_path / "o"),
                 "--cache", str(tmp_path / "c")]) == 0
    assert "every node failed" not in capsys.readouterr().err
