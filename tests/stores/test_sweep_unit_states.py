"""A split sweep's unit records kept honest (issue 34 item 7): a unit whose task fails reads
`failed` with its error line (and runs again when resubmitted), a malformed record is one line
naming its file in `umni status`, `umni sweep --shard` and the viewer, a unit whose finish holds
the event loop keeps beating, a task of another split touches no record, and a task whose sweep
file was edited after the plan was written is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from umni.cli import main
from umni.run import evaluation, units
from umni.run.status import status_of
from umni.run.sweep import run_sweep_shard
from umni.util.secrets import register_secret


def sweep_file(tmp: Path, *, limit: int = 3, extra: str = "") -> Path:
    path = tmp / "sweep.yaml"
    path.write_text(
        f"out: {tmp / 'out'}\ncache: {tmp / 'cache'}\nprotocols: [umnibench]\n"
        f'models: [sim/umm, "sim/umm?skill=0.5"]\nlimit: {limit}\n{extra}'
    )
    return path


def plan_of(tmp: Path) -> list[dict[str, Any]]:
    return json.loads((tmp / "out" / "units" / "plan.json").read_text())["units"]


def record_of(tmp: Path, unit: str) -> dict[str, Any]:
    return json.loads((tmp / "out" / "units" / f"{unit}.json").read_text())


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_failed_unit_reads_failed_with_its_error_and_runs_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sweep_file(tmp_path)
    assert main(["sweep", str(path), "--emit", "slurm"]) == 0
    first = Path(plan_of(tmp_path)[0]["out"])
    first.parent.mkdir(parents=True)
    first.write_text("a file where the unit's run directory goes")
    task = subprocess.run([sys.executable, "-m", "umni", "sweep", str(path), "--shard", "1/2"], capture_output=True, text=True, timeout=300)
    assert task.returncode != 0 and "Traceback" not in task.stderr
    record = record_of(tmp_path, "u00000")
    assert record["state"] == "failed" and "a file is in the way" in record["error"] and "\n" not in record["error"]
    capsys.readouterr()
    assert main(["status", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("u00000  failed") and "a file is in the way" in out[0] and "sweep shard 1/2" in out[0]
    assert out[2] == "0 done, 0 running, 0 stale, 1 failed, 1 pending"
    assert "submit the sweep's tasks again" in out[3]
    first.unlink()  # the cause fixed: the same task runs the unit again
    assert main(["sweep", str(path), "--shard", "1/2"]) == 0
    assert record_of(tmp_path, "u00000")["state"] == "done" and "error" not in record_of(tmp_path, "u00000")


def test_a_unit_whose_task_is_stopped_reads_failed(tmp_path: Path) -> None:
    """SIGTERM (a Slurm time limit, scancel) while a unit runs: its record says it was stopped, not
    `running` until it reads stale."""
    path = sweep_file(tmp_path, limit=20)
    path.write_text(path.read_text().replace('"sim/umm?skill=0.5"', '"sim/umm?latency=0.5"'))
    record = tmp_path / "out" / "units" / "u00001.json"
    task = subprocess.Popen([sys.executable, "-m", "umni", "sweep", str(path), "--shard", "2/2"], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (record.is_file() and record_of(tmp_path, "u00001")["state"] == "running") and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # some nodes under way
    task.terminate()
    _, err = task.communicate(timeout=120)
    assert task.returncode == 1 and "terminated (SIGTERM)" in err and "Traceback" not in err
    stopped = record_of(tmp_path, "u00001")
    assert stopped["state"] == "failed" and stopped["error"].startswith("stopped before it finished")


def test_a_failed_units_error_line_keeps_no_secret() -> None:
    from umni.util.secrets import error_line

    register_secret("sk-unit-state-secret")
    error = RuntimeError("cannot reach postgresql://umni:hunter22@db:5432/umni?sslmode=require&password=hunter33\n"
                         "  key sk-unit-state-secret refused")
    line = error_line(error)
    assert line == "RuntimeError: cannot reach postgresql://db:5432/umni?sslmode=require key *** refused"
    assert "\n" not in line and "hunter" not in line and "sk-unit-state-secret" not in line


@pytest.mark.parametrize("text", ["[1, 2]", "null-heartbeat", '{"unit": "u00000", "run": 0, "sta'])
def test_a_malformed_unit_record_is_one_line_naming_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    path = sweep_file(tmp_path)
    assert main(["sweep", str(path), "--emit", "slurm"]) == 0
    record = tmp_path / "out" / "units" / "u00001.json"
    if text == "null-heartbeat":
        text = json.dumps({**plan_of(tmp_path)[1], "state": "running", "host": "n1", "pid": 7, "heartbeat": None})
    record.write_text(text)
    capsys.readouterr()
    assert main(["status", str(tmp_path / "out")]) == 2  # every unit shown, the unreadable one naming its file
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("u00000  pending") and out[1].startswith(f"u00001  unreadable {record}: not a UnitRecord")
    assert "delete it to run unit u00001 again" in out[1] and out[2] == "0 done, 0 running, 0 stale, 0 failed, 1 pending, 1 unreadable"
    assert main(["sweep", str(path), "--shard", "1/2"]) == 2
    err = capsys.readouterr().err.strip()
    assert str(record) in err and "delete it to run unit u00001 again" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out" / "units" / "u00000.json").exists()  # refused before any unit ran


def test_the_viewer_shows_a_malformed_unit_record_rather_than_a_500(tmp_path: Path) -> None:
    from umni.reporting.viewer import make_server

    path = sweep_file(tmp_path)
    assert main(["sweep", str(path), "--emit", "slurm"]) == 0
    (tmp_path / "out" / "units" / "u00000.json").write_text("[1, 2]")
    server = make_server([tmp_path / "out"], status=lambda p: status_of(p).to_json())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/api/status", timeout=30) as response:
            assert response.status == 200
            (entry,) = json.loads(response.read())
        (tmp_path / "out" / "units" / "plan.json").write_text('{"units": 3}')  # the plan itself: the entry says why
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/api/status", timeout=30) as response:
            assert response.status == 200
            (broken,) = json.loads(response.read())
    finally:
        server.shutdown()
        server.server_close()
    item = entry["items"][0]
    assert item["state"] == "unreadable" and "u00000.json: not a UnitRecord" in item["detail"] and "delete it" in item["detail"]
    assert entry["items"][1]["state"] == "pending"
    assert "plan.json: not a UnitPlan" in broken["error"] and "delete it" in broken["error"]


def test_a_unit_whose_finish_holds_the_event_loop_keeps_beating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The finish (summary, tables, report) runs on the event loop; here it is made to hold the loop
    for seven heartbeats, and the unit reads running throughout, not stale."""
    monkeypatch.setattr(units, "HEARTBEAT_S", 0.4)
    monkeypatch.setattr("umni.run.status.HEARTBEAT_S", 0.4)
    seen: list[str] = []
    build_summary = evaluation.build_summary

    def slow_summary(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3.0)  # holds the loop, as a long report does
        seen.append(status_of(tmp_path / "out").items[0]["state"])
        return build_summary(*args, **kwargs)

    monkeypatch.setattr(evaluation, "build_summary", slow_summary)
    outcome = run_sweep_shard(sweep_file(tmp_path), "1/2")
    assert len(outcome.ran) == 1 and seen == ["running"]
    assert record_of(tmp_path, "u00000")["state"] == "done"


def test_a_task_of_another_split_touches_no_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sweep_file(tmp_path, extra="shards: 2\n")  # 2 runs x 2 case shards: 4 units
    assert main(["sweep", str(path), "--emit", "slurm"]) == 0
    folder = tmp_path / "out" / "units"
    live = {**plan_of(tmp_path)[0], "state": "running", "host": "node7", "pid": 12, "heartbeat": time.time(), "part": "1/4"}
    (folder / "u00000.json").write_text(json.dumps(live))  # task 1/4 of the array is running unit 0
    before = snapshot(folder)
    capsys.readouterr()
    assert main(["sweep", str(path), "--shard", "1/3"]) == 2
    err = capsys.readouterr().err
    assert "--shard 1/3" in err and "I/4" in err and "u00000" in err and len(err.strip().splitlines()) == 1
    assert snapshot(folder) == before and not (tmp_path / "out" / "umnibench").exists()
    assert main(["sweep", str(path), "--shard", "4/5"]) == 2  # 5 tasks for 4 units: an array made for another plan
    assert "this sweep has 4 units" in capsys.readouterr().err and snapshot(folder) == before
    (folder / "u00000.json").write_text(json.dumps({**live, "heartbeat": time.time() - 3600}))  # that task is gone
    assert main(["sweep", str(path), "--shard", "1/1"]) == 0  # another split takes over
    assert record_of(tmp_path, "u00000")["state"] == "done" and record_of(tmp_path, "u00000")["part"] == "1/1"


def test_a_task_whose_sweep_file_was_edited_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sweep_file(tmp_path, limit=3)
    assert main(["sweep", str(path), "--shard", "1/2"]) == 0
    folder = tmp_path / "out" / "units"
    before = snapshot(folder)
    sweep_file(tmp_path, limit=5)  # edited while the array runs
    capsys.readouterr()
    assert main(["sweep", str(path), "--shard", "2/2"]) == 2
    err = capsys.readouterr().err.strip()
    assert str(path) in err and "limit" in err and "out:" in err and len(err.splitlines()) == 1
    assert snapshot(folder) == before and not Path(plan_of(tmp_path)[1]["out"]).exists()
    assert main(["sweep", str(path), "--emit", "slurm"]) == 2  # nor is the plan of a started sweep replaced
    # a setting that changes no result (the Slurm time of a resubmission) is not a new sweep
    sweep_file(tmp_path, limit=3, extra="slurm: {time: '02:00:00'}\nconcurrency: 2\n")
    assert main(["sweep", str(path), "--shard", "2/2"]) == 0
    assert record_of(tmp_path, "u00001")["state"] == "done"
