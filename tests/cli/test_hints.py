"""The commands a run prints as hints can be typed as they are (issue 27: `browse: umni view …` did
not work when umni was only installed in .venv/bin)."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from umni.cli import invoked_as


def test_a_program_only_in_a_venv_is_named_by_its_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    program = tmp_path / ".venv" / "bin" / "umni"
    program.write_text("")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invoked_as(str(program)) == ".venv/bin/umni"
    assert invoked_as(".venv/bin/umni") == ".venv/bin/umni"


def test_the_name_on_path_is_used_when_it_is_this_program(tmp_path, monkeypatch):
    program = tmp_path / "umni"
    program.write_text("")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin")
    assert invoked_as(str(program)) == "umni"


def test_python_dash_m_otherwise():
    assert invoked_as("/usr/lib/python3/pytest") == f"{shlex.quote(sys.executable)} -m umni"


def test_the_printed_browse_hint_runs(tmp_path):
    umni = Path(sys.executable).with_name("umni")
    out = tmp_path / "run"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(umni), "run", "umnibench", "--model", "sim/umm", "--limit", "1", "--out", str(out),
                           "--cache", str(tmp_path / "cache")], capture_output=True, text=True, env=env, check=True)  # fmt: skip
    hint = next(line for line in done.stdout.splitlines() if line.startswith("browse:"))
    words = shlex.split(hint.removeprefix("browse:"))
    assert words[0] == str(umni) or Path(words[0]).resolve() == umni.resolve()
    listed = subprocess.run([words[0], "runs", words[-1]], capture_output=True, text=True, env=env, check=True)
    assert "umnibench" in listed.stdout
