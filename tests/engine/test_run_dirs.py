"""Run directories (issue 10.7, 16.3): never overwrite what is not a run, never shrink a fuller run,
and never resume results made by another command, whether or not run.json is still there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from PIL import Image

from umni.cli import main
from umni.protocols.protocol import get_protocol


def umni(*args: object) -> int:
    return main([str(a) for a in args])


def records(out: Path) -> int:
    return len((out / "results.jsonl").read_text().splitlines())


def test_a_non_empty_folder_that_is_not_a_run_is_refused(tmp_path, capsys):
    out = tmp_path / "sweep-x"
    out.mkdir()
    (out / "leaderboard.md").write_text("keep me")
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 1, "--out", out, "--cache", tmp_path / "c", "--quiet") == 2
    assert "not a umni run directory" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir() if p.name != ".lock") == ["leaderboard.md"]
    assert (out / "leaderboard.md").read_text() == "keep me"


def test_a_limited_run_never_shrinks_a_fuller_one_and_a_wider_one_extends_it(tmp_path, capsys):
    out, cache = tmp_path / "run", tmp_path / "c"
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 3, "--out", out, "--cache", cache, "--quiet") == 0
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 1, "--out", out, "--cache", cache, "--quiet") == 2
    assert "would shrink it" in capsys.readouterr().err
    assert records(out) == 3
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 5, "--out", out, "--cache", cache, "--quiet") == 0
    assert records(out) == 5
    assert "extended this run from the first 3 case(s) to the first 5" in json.loads((out / "summary.json").read_text())["extended"]


def test_run_db_is_tied_to_its_command_even_without_run_json(tmp_path, capsys):
    out, cache = tmp_path / "run", tmp_path / "c"
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 2, "--out", out, "--cache", cache, "--quiet") == 0
    (out / "run.json").unlink()
    assert umni("run", "umnibench", "--model", "sim/umm?skill=0.3", "--limit", 2, "--out", out, "--cache", cache, "--quiet") == 2
    assert "run.db was made by a different command" in capsys.readouterr().err
    # the same command resumes, and run.json is written again
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 2, "--out", out, "--cache", cache, "--quiet") == 0
    assert (out / "run.json").exists()


def test_replacing_a_case_image_is_a_new_case_set(tmp_path, capsys):
    cases = tmp_path / "cases"
    shutil.copytree(get_protocol("genius").bundled_cases(), cases)
    out, cache = tmp_path / "run", tmp_path / "c"
    assert umni("run", "genius", "--model", "sim/umm", "--cases", cases, "--limit", 2, "--out", out, "--cache", cache, "--quiet") == 0
    image = next(p for p in sorted(cases.rglob("*.png")))
    with Image.open(image) as im:
        size = im.size
    Image.new("RGB", size, (1, 2, 3)).save(image)
    assert umni("run", "genius", "--model", "sim/umm", "--cases", cases, "--limit", 2, "--out", out, "--cache", cache, "--quiet") == 2
    assert "differs in: cases" in capsys.readouterr().err


def test_without_run_json_a_limit_still_never_shrinks_run_db(tmp_path, capsys):
    out, cache = tmp_path / "run", tmp_path / "c"
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 3, "--out", out, "--cache", cache, "--quiet") == 0
    (out / "run.json").unlink()
    assert umni("run", "umnibench", "--model", "sim/umm", "--limit", 1, "--out", out, "--cache", cache, "--quiet") == 2
    assert "would shrink it" in capsys.readouterr().err
    assert records(out) == 3
