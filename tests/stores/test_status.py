"""`umni status DIR` (issue 26 item 6): a split sweep's units done, running with heartbeat age, stale
or pending, with the finished units' totals; a run directory with its shard directories."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.stores.store_runs import NODES_PER_CASE
from tests.stores.test_sweep_shards import sweep_file
from umni.cli import main
from umni.run.status import status_of
from umni.run.sweep import expand, load_sweep, work_units
from umni.run.units import select, unit_weights
from umni.util.sharding import Shard


def test_a_split_sweep_shows_each_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    split = sweep_file(tmp_path, "split", "cache")
    sweep = load_sweep(split)
    units = work_units(sweep)
    ran = sorted(u.index for u in select(units, Shard(2, 4), unit_weights(units, expand(sweep))))
    assert main(["sweep", str(split), "--shard", "2/4"]) == 0
    stale, pending = [i for i in range(8) if i not in ran][:2]
    record = tmp_path / "split" / "units" / f"u{stale:05d}.json"  # a unit whose process stopped beating
    plan = json.loads((tmp_path / "split" / "units" / "plan.json").read_text())["units"]
    record.write_text(json.dumps({**plan[stale], "state": "running", "host": "node7", "pid": 12, "heartbeat": time.time() - 600}))
    capsys.readouterr()
    assert main(["status", str(tmp_path / "split")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(out[i].startswith(f"u{i:05d}  done") and "by sweep shard 2/4" in out[i] for i in ran)
    assert len(ran) == 2
    assert out[stale].startswith(f"u{stale:05d}  stale") and "heartbeat 600s ago on node7 pid 12" in out[stale]
    assert out[pending].startswith(f"u{pending:05d}  pending")
    assert out[8] == "2 done, 0 running, 1 stale, 0 failed, 5 pending"
    assert out[9].startswith("finished: ") and "computed" in out[9]


def test_a_sharded_run_shows_its_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "umnibench", "--limit", "4", "--quiet", "--model", "sim/umm", "--out", str(tmp_path / "r"),
              "--cache", str(tmp_path / "c")]
    assert main([*common, "--shard", "1/2"]) == 0
    capsys.readouterr()
    assert main(["status", str(tmp_path / "r")]) == 0  # not assembled yet: its shards are shown
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("r-shard1of2  done") and out[1:] == ["1 done, 0 running, 0 pending", "split into 2 shards: 1 of 2 done, shard(s) 2/2 not run"]
    assert main(["status", str(tmp_path / "nothing")]) == 2


def test_a_store_shows_its_results_writers_and_blobs(tmp_path: Path, store, capsys: pytest.CaptureFixture[str]) -> None:
    """`umni status STORE` on SQLite and PostgreSQL: two shard processes into one store are two writers."""
    common = ["run", "umnibench", "--limit", "4", "--quiet", "--model", "sim/umm", "--out", str(tmp_path / "r"), *store.cli()]
    for part in ("1/2", "2/2"):
        subprocess.run([sys.executable, "-m", "umni", *common, "--shard", part], check=True, capture_output=True, timeout=180)
    capsys.readouterr()
    assert main(["status", store.cache, "--blobs", store.blobs]) == 0
    out = capsys.readouterr().out.splitlines()
    writers = [line for line in out if " pid " in line]
    assert len(writers) == 2 and all(socket.gethostname() in w and "writing" in w for w in writers)
    stored = sum(int(w.split("  writing ")[1].split()[0]) for w in writers)
    assert stored == 4 * NODES_PER_CASE  # every node of the 4 cases, once
    assert out[len(writers)] == "2 writing, 0 idle"
    kinds = dict(reversed(item.split(" ", 1)) for item in out[len(writers) + 1].removeprefix("stored: ").split(", "))
    assert sum(int(n) for n in kinds.values()) == stored and {"generate", "edit"} <= set(kinds)
    blobs = [line for line in out if line.startswith("blobs: ")]
    assert blobs and int(blobs[0].split()[1]) == sum(1 for _ in (tmp_path / "blobs").rglob("*.png")) > 0
    status = status_of(store.cache, now=time.time() + 3600)  # an hour later every writer is idle
    assert status.counts == {"writing": 0, "idle": 2} and status.to_json()["kind"] == "store"


def test_a_run_whose_name_holds_glob_characters_shows_its_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34 item 9: an --out named `sh[1]` is a name, not a pattern."""
    out = tmp_path / "sh[1]"
    common = ["run", "umnibench", "--limit", "2", "--quiet", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "c")]
    assert main([*common, "--shard", "1/2"]) == 0
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sh[1]-shard1of2  done") and "1 done, 0 running, 0 pending" in lines


def test_shards_of_different_splits_are_listed_as_separate_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34 item 9: shards 1/2 and 2/2 are one split (complete), 1/3 another (1 of 3 shards done);
    each set is listed on its own and says whether its every shard is done."""
    out = tmp_path / "r"
    common = ["run", "umnibench", "--limit", "3", "--quiet", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "c")]
    for part in ("1/3", "2/2", "1/2"):
        assert main([*common, "--shard", part]) == 0
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["r-shard1of2", "r-shard2of2", "r-shard1of3"]
    assert "split into 2 shards: 2 of 2 done (complete)" in lines
    assert "split into 3 shards: 1 of 3 done, shard(s) 2/3, 3/3 not run" in lines
    status = status_of(out)
    assert [item["split"] for item in status.items] == ["2", "2", "3"]
