"""A sweep split into work units (issue 26 item 1): `umni sweep FILE --shard I/N` over (run, case
shard) units into one shared store, the shard that finds every unit done assembling the leaderboard,
a resubmitted shard skipping finished units, and `--emit slurm` writing an array script that runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.stores.store_runs import NODES_PER_CASE
from umni.cli import main
from umni.run.sweep import expand, load_sweep, work_units
from umni.run.units import Unit, deal, select, unit_weights
from umni.store.cache import Cache
from umni.util.sharding import Shard


def sweep_file(tmp: Path, out: str, cache: str) -> Path:
    path = tmp / f"{out}.yaml"
    path.write_text(
        f"out: {tmp / out}\ncache: {tmp / cache}\nprotocols: [umnibench]\n"
        'models: [sim/umm, "sim/umm?skill=0.5"]\nseeds: [0, 1]\nlimit: 4\nshards: 2\n'
        "slurm: {partition: gpu, time: '01:00:00', max_jobs: 3}\n"
    )
    return path


def run_outputs(out: Path) -> dict[str, bytes]:
    """results.jsonl of each assembled run (the shards' own directories left out)."""
    found = sorted(p for p in out.glob("umnibench/*/results.jsonl") if "-shard" not in p.parent.name)
    return {str(p.relative_to(out)): p.read_bytes() for p in found}


def test_units_are_dealt_deterministically_and_cover_the_sweep(tmp_path: Path) -> None:
    units = work_units(load_sweep(sweep_file(tmp_path, "s", "c")))
    assert len(units) == 8 and [u.index for u in units] == list(range(8))
    assert {str(u.shard) for u in units} == {"1/2", "2/2"}
    parts = [select(units, Shard(i, 3)) for i in (1, 2, 3)]
    assert sorted(u.index for part in parts for u in part) == list(range(8))
    assert [len(p) for p in parts] == [3, 3, 2]
    assert work_units(load_sweep(sweep_file(tmp_path, "s", "c"))) == units  # same file, same units


def test_units_are_dealt_by_their_work_the_same_on_every_machine(tmp_path: Path) -> None:
    sweep = load_sweep(sweep_file(tmp_path, "s", "c"))
    units = work_units(sweep)
    weights = unit_weights(units, expand(sweep))
    assert sum(weights) == 4 * 4 * NODES_PER_CASE  # 4 runs of 4 cases, each case shard weighed by its cases
    parts = [select(units, Shard(i, 3), weights) for i in (1, 2, 3)]
    assert sorted(u.index for part in parts for u in part) == list(range(8))
    loads = [sum(weights[u.index] for u in part) for part in parts]
    assert max(loads) - min(loads) <= max(weights)  # the longest-first deal's bound
    assert unit_weights(units, expand(sweep)) == weights  # read again: the same split
    fake = [Unit(i, i, None, tmp_path) for i in range(5)]
    assert deal(fake, 2, [1, 1, 1, 1, 4]) == [1, 1, 1, 1, 0]  # round robin would give 6 against 2
    assert deal(fake, 5, [1, 1, 1, 1, 4]) == [0, 1, 2, 3, 4]  # a Slurm array: task t runs unit t-1


def test_shards_into_one_store_assemble_to_the_one_process_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = sweep_file(tmp_path, "whole", "c-whole")
    assert main(["sweep", str(whole)]) == 0
    split = sweep_file(tmp_path, "split", "c-split")
    for i in (1, 2):
        assert main(["sweep", str(split), "--shard", f"{i}/3"]) == 0
        assert not (tmp_path / "split" / "leaderboard.md").exists()  # not every unit is done yet
    capsys.readouterr()
    assert main(["sweep", str(split), "--shard", "3/3"]) == 0
    assert "every one of 8 units is done" in capsys.readouterr().out
    assert run_outputs(tmp_path / "split") == run_outputs(tmp_path / "whole") and len(run_outputs(tmp_path / "whole")) == 4
    # the assembled runs computed nothing: every node came from the shards' store
    for summary in (tmp_path / "split").glob("umnibench/*/summary.json"):
        if "-shard" not in summary.parent.name:
            assert json.loads(summary.read_text())["counts"]["computed"] == 0
    board = json.loads((tmp_path / "split" / "leaderboard.json").read_text())
    assert board == json.loads((tmp_path / "whole" / "leaderboard.json").read_text().replace("/whole/", "/split/"))
    # resubmitted: every unit of the shard is skipped
    sweep = load_sweep(split)
    units = work_units(sweep)
    mine = select(units, Shard(1, 3), unit_weights(units, expand(sweep)))
    assert main(["sweep", str(split), "--shard", "1/3"]) == 0
    assert f"skipped {len(mine)} unit(s) already done" in capsys.readouterr().out


def test_the_emitted_slurm_script_runs_one_unit_per_task(tmp_path: Path) -> None:
    split = sweep_file(tmp_path, "split", "c-split")
    assert main(["sweep", str(split), "--emit", "slurm"]) == 0
    script = tmp_path / "split" / "slurm" / "units-1.sbatch"  # one array: no phases, one resource class
    text = script.read_text()
    assert "#SBATCH --array=1-8%3" in text and "#SBATCH --partition=gpu" in text and "#SBATCH --time=01:00:00" in text
    assert '"units-1:${SLURM_ARRAY_TASK_ID}"' in text
    subprocess.run(["bash", "-n", str(script)], check=True)
    done = subprocess.run(["bash", str(script)], env={**os.environ, "SLURM_ARRAY_TASK_ID": "5"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads((tmp_path / "split" / "units" / "plan.json").read_text())["units"]
    records = {u["unit"]: json.loads(p.read_text()) for u in plan if (p := tmp_path / "split" / "units" / f"{u['unit']}.json").exists()}
    assert list(records) == ["u00004"] and records["u00004"]["state"] == "done"


def test_a_bad_slurm_option_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("protocols: [umnibench]\nmodels: [sim/umm]\nslurm: {array: '1-3'}\n")
    assert main(["sweep", str(path), "--emit", "slurm"]) == 2
    assert "slurm option 'array'" in capsys.readouterr().err


def test_case_shard_folders_are_parts_of_a_run_not_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34 item 3: after a sweep of `shards: 2` ran as `--shard I/N` tasks, `umni leaderboard`,
    `umni runs` and the viewer list the 4 assembled runs, never the `-shardIofN` folders beside them
    (those are parts of a run: run.json names their --shard); a shard folder named itself is still read."""
    from umni.reporting.runset import find_runs
    from umni.reporting.viewer_data import ViewerData

    split = sweep_file(tmp_path, "split", "c-split")
    for i in (1, 2, 3):
        assert main(["sweep", str(split), "--shard", f"{i}/3"]) == 0
    out = tmp_path / "split"
    parts = sorted(p.parent for p in out.glob("umnibench/*-shard*of2/summary.json"))
    assert len(parts) == 8  # the parts are there, each a finished folder of its own
    runs = [r.path for r in find_runs([out])]
    assert len(runs) == 4 and not any("-shard" in str(p) for p in runs)
    capsys.readouterr()
    assert main(["leaderboard", str(out)]) == 0
    board = capsys.readouterr().out
    header = next(line for line in board.splitlines() if line.startswith("| Stage |"))
    assert header.count("sim/umm") == 4 and "shard" not in board
    assert main(["runs", str(out)]) == 0
    listed = capsys.readouterr().out
    assert "-shard" not in listed and len([line for line in listed.splitlines() if "umnibench" in line]) == 4
    assert sorted(r.run.path for r in ViewerData([out]).runs) == sorted(runs)
    assert [r.path for r in find_runs([parts[0]])] == [parts[0]]  # named itself: read as asked


def test_a_task_whose_units_are_done_loads_no_engine_backend_or_store(tmp_path: Path) -> None:
    """What a resubmitted Slurm array's finished tasks pay (a task per unit): the sweep file and the
    unit records, no more (bench/task_start.py times it)."""
    split = sweep_file(tmp_path, "split", "c")
    assert main(["sweep", str(split), "--shard", "1/8"]) == 0
    code = (
        "import sys; from umni.cli import main; assert main(['sweep', sys.argv[1], '--shard', '1/8']) == 0; "
        "print(*sorted(m for m in ('umni.engine.runner', 'umni.store.cache', 'umni.backends.bindings', 'umni_adapters', 'umni_graphs', 'numpy', 'PIL', 'anyio') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(split)], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "skipped" in done.stdout and done.stdout.splitlines()[-1] == ""


def test_a_sweep_task_that_runs_units_and_assembles_opens_its_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """One store for the units and the assembly: two opened one after the other were two PostgreSQL
    connections for a moment (the server still listed the first while the assembly connected)."""
    opened: list[object] = []
    real_init = Cache.__init__

    def counted(self: Cache, *args: Any, **kwargs: Any) -> None:
        opened.append(args)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Cache, "__init__", counted)
    assert main(["sweep", str(sweep_file(tmp_path, "split", "c")), "--shard", "1/1"]) == 0
    assert "every one of 8 units is done" in capsys.readouterr().out
    assert len(opened) == 1


_HEAVY = ("umni.engine.runner", "umni.store.cache", "umni.backends.bindings", "umni_adapters", "umni_graphs", "umni.protocols.protocol", "numpy", "PIL", "anyio")


def _fresh_task(split: Path, part: str, cwd: Path, flag: str = "--shard", heavy: tuple[str, ...] = _HEAVY) -> tuple[str, list[str]]:
    """`umni sweep FILE --shard PART` (or `flag`) in a fresh process: what it printed, and which of
    the `heavy` modules it imported."""
    code = (
        "import sys; from umni.cli import main; assert main(['sweep', sys.argv[1], sys.argv[3], sys.argv[2]]) == 0; "
        f"print(*sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(split), part, flag], capture_output=True, text=True, check=True, cwd=cwd)
    *printed, loaded = done.stdout.splitlines()
    return "\n".join(printed), loaded.split()


def test_tasks_deal_units_by_the_weights_the_plan_keeps(tmp_path: Path) -> None:
    """A task of fewer shards than units deals them by their work; the first task weighs them (it
    reads every protocol's cases) and keeps the weights in the plan, so a resubmitted task whose
    units are done loads no protocol, and every task deals by the same numbers."""
    split = sweep_file(tmp_path, "split", "c")
    assert main(["sweep", str(split), "--shard", "1/3"]) == 0
    plan = json.loads((tmp_path / "split" / "units" / "plan.json").read_text())
    sweep = load_sweep(split)
    units = work_units(sweep)
    assert plan["weights"] == unit_weights(units, expand(sweep))
    printed, loaded = _fresh_task(split, "1/3", tmp_path)
    assert f"skipped {len(select(units, Shard(1, 3), plan['weights']))} unit(s) already done" in printed
    assert loaded == []
    # weights that do not fit the plan's units (an older umni's plan, a hand edit) are weighed again
    plan["weights"] = [1]
    (tmp_path / "split" / "units" / "plan.json").write_text(json.dumps(plan))
    assert main(["sweep", str(split), "--shard", "1/3"]) == 0
    assert json.loads((tmp_path / "split" / "units" / "plan.json").read_text())["weights"] == unit_weights(units, expand(sweep))


def test_a_resubmitted_task_of_an_assembled_sweep_does_not_assemble_it_again(tmp_path: Path) -> None:
    """Every unit done and the sweep assembled since the last one finished: a task started again
    (a resubmitted array) reads the records and exits, loading no engine, protocol or store; a unit
    run again, or a leaderboard that is gone, has the next task assemble again."""
    split = sweep_file(tmp_path, "split", "c")
    out = tmp_path / "split"
    for i in (1, 2, 3):
        assert main(["sweep", str(split), "--shard", f"{i}/3"]) == 0
    board = (out / "leaderboard.md").stat().st_mtime_ns
    printed, loaded = _fresh_task(split, "2/3", tmp_path)
    assert "every one of 8 units is done" in printed and "assembled by an earlier task" in printed
    assert loaded == [] and (out / "leaderboard.md").stat().st_mtime_ns == board
    # a unit run again (its record and folder removed): the task that runs it assembles again
    record = json.loads((out / "units" / "u00000.json").read_text())
    (out / "units" / "u00000.json").unlink()
    for name in ("summary.json",):
        (Path(record["out"]) / name).unlink()
    owner = next(i for i in (1, 2, 3) if any(u.index == 0 for u in select(work_units(load_sweep(split)), Shard(i, 3), json.loads((out / "units" / "plan.json").read_text())["weights"])))
    printed, _ = _fresh_task(split, f"{owner}/3", tmp_path)
    assert "every one of 8 units is done" in printed and "assembled by an earlier task" not in printed
    assert (out / "leaderboard.md").stat().st_mtime_ns != board
    # the leaderboard removed by hand: assembled again
    (out / "leaderboard.md").unlink()
    printed, _ = _fresh_task(split, "1/3", tmp_path)
    assert "assembled by an earlier task" not in printed and (out / "leaderboard.md").is_file()
    # the assemble job (`--assemble`) keeps the same record: a task started after it exits as well
    (out / "leaderboard.md").unlink()
    assert main(["sweep", str(split), "--assemble"]) == 0
    printed, loaded = _fresh_task(split, "3/3", tmp_path)
    assert "assembled by an earlier task" in printed and loaded == []


def test_a_done_task_reads_the_plan_and_records_not_the_file_through_its_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the sweep file is the one the plan was made from, a task whose units are done reads the
    plan and the records as JSON (no pydantic) and prints what reading the file would have; another
    file (an edited `slurm:` time) takes the full path, which records the new file for the next."""
    monkeypatch.chdir(tmp_path)  # the working folder is part of what the plan was made from
    split = sweep_file(tmp_path, "split", "c")
    for i in (1, 2, 3):
        assert main(["sweep", str(split), "--shard", f"{i}/3"]) == 0
    plain = ("pydantic", *_HEAVY)
    fast, loaded = _fresh_task(split, "2/3", tmp_path, heavy=plain)
    assert loaded == [] and "assembled by an earlier task" in fast
    split.write_text(split.read_text().replace("01:00:00", "02:00:00"))  # operational: the same plan
    full, loaded = _fresh_task(split, "2/3", tmp_path, heavy=plain)
    assert full == fast and "pydantic" in loaded
    again, loaded = _fresh_task(split, "2/3", tmp_path, heavy=plain)
    assert again == fast and loaded == []
    # a shard of a sweep not yet finished, and the same from the full path
    other = sweep_file(tmp_path, "other", "c")
    assert main(["sweep", str(other), "--shard", "1/3"]) == 0
    fast, loaded = _fresh_task(other, "1/3", tmp_path, heavy=plain)
    assert loaded == [] and "the leaderboard is written when all 8 units are done" in fast
    other.write_text(other.read_text() + "# a comment\n")
    assert _fresh_task(other, "1/3", tmp_path, heavy=plain)[0] == fast


def test_a_done_array_task_reads_the_tasks_the_emitted_plan_keeps(tmp_path: Path) -> None:
    split = sweep_file(tmp_path, "split", "c")
    assert main(["sweep", str(split), "--emit", "slurm"]) == 0
    tasks = json.loads((tmp_path / "split" / "units" / "plan.json").read_text())["tasks"]
    assert tasks == {"units-1": [[f"u{i:05d}"] for i in range(8)]}
    assert main(["sweep", str(split), "--task", "units-1:3"]) == 0
    printed, loaded = _fresh_task(split, "units-1:3", Path.cwd(), flag="--task", heavy=("pydantic", *_HEAVY))
    assert loaded == []
    assert printed.splitlines() == ["  skipped 1 unit(s) already done", "task units-1:3 finished; the assemble job writes the leaderboard"]
    printed, loaded = _fresh_task(split, "units-1:4", Path.cwd(), flag="--task", heavy=("pydantic",))
    assert loaded == ["pydantic"] and "skipped" not in printed  # a unit to run: the full path


def test_what_a_done_task_cannot_tell_from_the_plan_the_full_path_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A variable `env:` lists that the task lacks, and a record that does not read, are refused in
    one line as before, not passed over as done."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UMNI_TEST_TOKEN", "x")
    split = sweep_file(tmp_path, "split", "c")
    split.write_text(split.read_text() + "env: [UMNI_TEST_TOKEN]\n")
    assert main(["sweep", str(split), "--shard", "1/3"]) == 0
    monkeypatch.delenv("UMNI_TEST_TOKEN")
    capsys.readouterr()
    assert main(["sweep", str(split), "--shard", "1/3"]) == 2
    assert "UMNI_TEST_TOKEN not set" in capsys.readouterr().err
    monkeypatch.setenv("UMNI_TEST_TOKEN", "x")
    record = next(p for p in sorted((tmp_path / "split" / "units").glob("u*.json")))
    record.write_text("{")
    assert main(["sweep", str(split), "--shard", "1/3"]) == 2
    assert f"{record.name}: not a UnitRecord" in capsys.readouterr().err


def test_a_done_task_finds_the_plan_of_a_sweep_without_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `out:` in the file: the sweep's folder is runs/sweep-<name or file stem> under the working
    folder, for the task read from the plan as for the full path."""
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "lab.yaml"
    sweep.write_text(f"cache: {tmp_path / 'c'}\nprotocols: [umnibench]\nmodels: [sim/umm]\nlimit: 4\nshards: 2\n")
    assert main(["sweep", str(sweep), "--shard", "1/2"]) == 0
    assert (tmp_path / "runs" / "sweep-lab" / "units" / "plan.json").is_file()
    printed, loaded = _fresh_task(sweep, "1/2", tmp_path, heavy=("pydantic", *_HEAVY))
    assert loaded == [] and "skipped 1 unit(s) already done" in printed
