"""`umni status DIR` (issue 26 item 6): a split sweep's units done, running with heartbeat age, stale
or pending, with the finished units' totals; a run directory with its shard directories."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.stores.test_sweep_shards import sweep_file
from umni.cli import main


def test_a_split_sweep_shows_each_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    split = sweep_file(tmp_path, "split", "cache")
    assert main(["sweep", str(split), "--shard", "2/4"]) == 0  # units 1 and 5
    record = tmp_path / "split" / "units" / "u00002.json"  # a unit whose process stopped beating
    plan = json.loads((tmp_path / "split" / "units" / "plan.json").read_text())["units"]
    record.write_text(json.dumps({**plan[2], "state": "running", "host": "node7", "pid": 12, "heartbeat": time.time() - 600}))
    capsys.readouterr()
    assert main(["status", str(tmp_path / "split")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("u00001  done") and out[5].startswith("u00005  done")
    assert out[2].startswith("u00002  stale") and "heartbeat 600s ago on node7 pid 12" in out[2]
    assert out[0].startswith("u00000  pending")
    assert out[8] == "2 done, 0 running, 1 stale, 5 pending"
    assert out[9].startswith("finished: ") and "computed" in out[9]


def test_a_sharded_run_shows_its_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "umnibench", "--limit", "4", "--quiet", "--model", "sim/umm", "--out", str(tmp_path / "r"),
              "--cache", str(tmp_path / "c")]
    assert main([*common, "--shard", "1/2"]) == 0
    capsys.readouterr()
    assert main(["status", str(tmp_path / "r")]) == 0  # not assembled yet: its shards are shown
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("r-shard1of2  done") and out[-1] == "1 done, 0 running, 0 pending"
    assert main(["status", str(tmp_path / "nothing")]) == 2
