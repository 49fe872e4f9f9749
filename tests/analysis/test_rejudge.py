"""Re-judging re-runs only the judge, records both judges, and refuses to recompute anything else."""

import json
import shutil

from umni.cli import main
from umni.store.runfolder import RunFolder


def test_rejudge_runs_only_judge_nodes(tmp_path, capsys):
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["run", "wise", "--model", "sim/umm", "--limit", "6", "--out", str(run), "--cache", str(cache), "--quiet"]) == 0
    first = json.loads((run / "summary.json").read_text())
    assert first["calls"] == {"generate": 6, "judge": 6}

    new = tmp_path / "rejudged"
    assert main(["rejudge", str(run), "--role", "judge=sim/umm?skill=0.2", "--out", str(new)]) == 0
    summary = RunFolder(new).read_summary()
    assert summary.calls == {"judge": 6}
    assert summary.lineage.judges.model_dump() == {"original": "sim/umm", "new": "sim/umm?skill=0.2"}
    assert summary.bindings["judge"] == "sim/umm?skill=0.2" and summary.bindings["generate"] == "sim/umm"
    assert summary.scores["judge"] == "sim/umm?skill=0.2"
    assert json.loads((new / "run.json").read_text())["lineage"]["rejudged_from"] == str(run.resolve())


def test_rejudge_never_regenerates_missing_work(tmp_path, capsys):
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["run", "wise", "--model", "sim/umm", "--limit", "3", "--out", str(run), "--cache", str(cache), "--quiet"]) == 0
    shutil.rmtree(cache)  # the generated images are gone from the cache
    new = tmp_path / "rejudged"
    assert main(["rejudge", str(run), "--role", "judge=sim/umm?seed=4", "--out", str(new)]) == 0
    summary = RunFolder(new).read_summary()
    assert summary.calls == {}
    assert summary.failures["input"] == 3  # recorded, not recomputed


def test_rejudge_only_rebinds_the_judge(tmp_path, capsys):
    assert main(["rejudge", str(tmp_path), "--role", "generate=sim/umm"]) == 2
    assert "judge" in capsys.readouterr().err
