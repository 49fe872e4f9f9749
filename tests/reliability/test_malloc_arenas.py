"""The command line asks glibc for two malloc arenas (a 20,000-case run's memory crept with one
per worker thread), and leaves a user's own MALLOC_ARENA_MAX alone."""

import subprocess
import sys

import pytest

from umni.util.memory import limit_malloc_arenas

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or "glibc" not in " ".join(__import__("platform").libc_ver()),
                           reason="glibc's mallopt")


@glibc
def test_glibc_agrees_to_two_arenas() -> None:
    code = "from umni.util.memory import limit_malloc_arenas; print(limit_malloc_arenas())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PATH": ""})
    assert done.stdout.strip() == "True"


def test_a_users_own_setting_wins(monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
