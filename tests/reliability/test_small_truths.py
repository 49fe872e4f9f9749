"""Small truths, each once wrong: a run directory is read only when complete, files honour the
umask, every loader confines symlinks, damaged state gives one line (not a traceback), a sweep
cannot collide with itself, and JSON Lines split on newlines only."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from umni.protocols.caseio import confined_path
from umni.reporting.agreement import run_judgements
from umni.run.evaluation import RunRequest, evaluate
from umni.run.rejudge import rejudge
from umni.store.completion import MARKER
from umni.util.errors import InputError, InputErrors, StorageError
from umni.util.jsonfiles import jsonl_lines
from umni_graphs.girbench.dataset import load_visual_logic_cases

REPO = Path(__file__).resolve().parents[2]


def umni(*args: str | Path, cwd: Path | None = None, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "umni", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def run_request(out: Path, cache: Path, limit: int = 2) -> RunRequest:
    return RunRequest(protocol="umnibench", out=out, cache=cache, limit=limit, model="sim/umm", progress=False)


# ------------------------------------------------------------------------- completion marker


def test_a_run_dir_interrupted_while_writing_outputs_is_refused_by_every_reader(tmp_path):
    out, cache = tmp_path / "run", tmp_path / "cache"
    evaluate(run_request(out, cache, limit=1))
    (out / "report.html").unlink()
    (out / "report.html").mkdir()  # the last output cannot be written: a real EISDIR
    (out / "report.html" / "keep").write_text("x")
    with pytest.raises(StorageError):
        evaluate(run_request(out, cache, limit=2))  # widening the run rewrites every output
    assert (out / "results.jsonl").exists() and (out / "summary.json").exists()  # written, but not all
    assert (out / MARKER).exists()

    board = umni("leaderboard", out)
    assert board.returncode == 2
    one_line(board, "incomplete", str(out))
    with pytest.raises(InputError, match="incomplete"):
        rejudge(out, "sim/umm?skill=0.5")
    with pytest.raises(InputError, match="incomplete"):
        run_judgements(out)

    shutil.rmtree(out / "report.html")
    evaluate(run_request(out, cache))  # resuming completes it
    assert not (out / MARKER).exists()
    assert umni("leaderboard", out).returncode == 0


# ------------------------------------------------------------------------------------- umask


@pytest.mark.parametrize(("umask", "mode"), [("002", 0o664), ("077", 0o600)])
def test_outputs_and_cache_files_honour_the_umask(tmp_path, umask, mode):
    out, cache = tmp_path / "run", tmp_path / "cache"
    command = " ".join([f"umask {umask};", sys.executable, "-m", "umni", "run", "umnibench", "--model", "sim/umm",
                        "--limit", "1", "--quiet", "--out", str(out), "--cache", str(cache)])  # fmt: skip
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = [out / n for n in ("results.jsonl", "summary.json", "run.json", "report.html", "run.db", "events.jsonl")]
    files += [cache / "cache.db", *sorted((cache / "blobs").rglob("*.png"))[:3]]
    assert len(files) == 10
    modes = {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {oct(mode)}, modes


# ------------------------------------------------------------------------------- confinement


def test_girbench_refuses_a_symlink_out_of_its_data_folder(tmp_path):
    root = tmp_path / "data"
    sudoku = root / "VisualLogic" / "sudoku"
    sudoku.mkdir(parents=True)
    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(b"not for the judge")
    (root / "VisualLogic" / "innocent.png").symlink_to(secret)
    (sudoku / "1.json").write_text(json.dumps({"grid_size": 4, "question_image": "innocent.png"}))
    with pytest.raises(InputError) as caught:
        load_visual_logic_cases(root)
    problems = caught.value.errors if isinstance(caught.value, InputErrors) else [caught.value]
    assert any(p.field == "question_image" and "symlink" in p.message for p in problems), caught.value.describe()


def test_a_hub_snapshot_may_link_into_its_own_blob_store_but_nowhere_else(tmp_path):
    repo = tmp_path / "hub" / "datasets--org--bench"
    snapshot = repo / "snapshots" / "0123abcd"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "blobs" / "f00d").write_bytes(b"png")
    (snapshot / "a.png").symlink_to(repo / "blobs" / "f00d")
    assert confined_path(snapshot, "a.png") == (repo / "blobs" / "f00d").resolve()
    (tmp_path / "secret").write_bytes(b"x")
    (snapshot / "b.png").symlink_to(tmp_path / "secret")
    with pytest.raises(ValueError, match="through a symlink"):
        confined_path(snapshot, "b.png")
    with pytest.raises(ValueError, match="outside"):
        confined_path(snapshot, "../../blobs/f00d")  # named outside, not linked: refused


# ------------------------------------------------------------------------- one-line errors


def test_a_damaged_cache_db_is_one_line(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cache.db").write_bytes(b"this was a database once" * 100)
    done = umni("run", "umnibench", "--model", "sim/umm", "--limit", "1", "--quiet", "--out", tmp_path / "run", "--cache", cache)
    assert done.returncode == 1
    one_line(done, "cache.db")


def test_a_non_utf8_run_json_is_one_line(tmp_path):
    out, cache = tmp_path / "run", tmp_path / "cache"
    args = ("run", "umnibench", "--model", "sim/umm", "--limit", "1", "--quiet", "--out", out, "--cache", cache)
    assert umni(*args).returncode == 0
    (out / "run.json").write_bytes(b'{"protocol": "umnibench\xff\xfe"}')
    again = umni(*args)
    assert again.returncode == 2
    one_line(again, "run.json")
    judged = umni("rejudge", out, "--role", "judge=sim/umm")
    assert judged.returncode == 2
    one_line(judged, "run.json")


# ----------------------------------------------------------------------------------- sweeps


def write_sweep(tmp_path: Path, models: list[str], limit: int = 2) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps({"name": "t", "out": str(tmp_path / "sweep"), "cache": str(tmp_path / "cache"),
                                "protocols": ["umnibench"], "models": models, "limit": limit}))  # fmt: skip
    return path


def test_a_sweep_listing_one_model_twice_is_refused_with_one_line(tmp_path):
    done = umni("sweep", write_sweep(tmp_path, ["sim/umm", "sim/umm"]))
    assert done.returncode == 2
    one_line(done, "twice")


def test_a_sweep_started_twice_at_once_refuses_the_second(tmp_path):
    # the first sweep's model takes 30 s a call, so it is surely still running when the second starts;
    # it is killed afterwards (a killed sweep resumes like any run)
    path = write_sweep(tmp_path, ["sim/umm?latency=30"], limit=1)
    first = subprocess.Popen([sys.executable, "-m", "umni", "sweep", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while first.poll() is None and time.monotonic() < deadline:  # wait until its runs have started
            if (tmp_path / "sweep").exists() and list((tmp_path / "sweep").rglob("events.jsonl")):
                break
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        second = umni("sweep", path)
        assert second.returncode == 2
        one_line(second, "another umni")
    finally:
        first.kill()
        first.communicate(timeout=60)


# ------------------------------------------------------------------------------- JSON Lines


def test_jsonl_lines_split_on_newline_only():
    assert jsonl_lines('{"a": "x\u2028y"}\r\n{"b": "\u0085"}\n') == ['{"a": "x\u2028y"}', '{"b": "\u0085"}', ""]


def test_a_case_with_a_line_separator_inside_a_string_loads_and_runs(tmp_path):
    record = json.loads((REPO / "cases/umnibench/cases.jsonl").read_text(encoding="utf-8").split("\n")[0])
    record["concept"] = "stacking\u2028and covering"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert "\u2028" in cases.read_text(encoding="utf-8")
    from umni_graphs.umnibench import PROTOCOL

    loaded = PROTOCOL.load(cases, PROTOCOL.parse_options({}))
    assert len(loaded.cases) == 1 and "\u2028" in loaded.cases[0].concept
    out = tmp_path / "run"
    done = umni("run", "umnibench", "--cases", cases, "--model", "sim/umm", "--quiet", "--out", out, "--cache", tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "\u2028" in (out / "results.jsonl").read_text(encoding="utf-8")  # written raw ...
    board = umni("leaderboard", out)  # ... and read back whole
    assert board.returncode == 0, board.stderr
