"""SIGTERM stops a command through cancellation at an `await`, never by an exception raised mid-statement.

CI once saw `umni sweep` print its "terminated" line and then never exit: the exception the old
handler raised at an arbitrary bytecode can leave a lock or a thread behind. These tests send the
signal while the main thread runs plain code inside a task and check where the stop lands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from umni.util.stopping import Terminated, on_sigterm, run_async

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_sigterm_during_plain_code_lands_at_the_next_await() -> None:
    seen: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:  # the handler runs here; before the fix it raised here
                pass
            seen.append("plain code finished")
            await anyio.sleep(30)
            seen.append("slept")  # never
        except BaseException as exc:
            seen.append(type(exc).__name__)
            raise

    with on_sigterm(), pytest.raises(Terminated):
        run_async(work)
    assert seen == ["plain code finished", "CancelledError"]


def test_cleanup_that_awaits_still_runs_after_sigterm() -> None:
    cleaned: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await anyio.sleep(30)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)
                cleaned.append("closed")

    with on_sigterm(), pytest.raises(Terminated):
        run_async(work)
    assert cleaned == ["closed"]


def test_sigterm_outside_a_loop_raises_at_once_and_the_previous_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with on_sigterm(), pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_run_without_a_signal_is_untouched() -> None:
    async def work() -> int:
        await anyio.sleep(0)
        return 7

    with on_sigterm():
        assert run_async(work) == 7


def test_umni_run_stops_on_sigterm_and_resumes(tmp_path: Path) -> None:
    """The command as a user runs it: SIGTERM mid-run exits 1 with one line; the same command finishes it."""
    command = [sys.executable, "-X", "faulthandler", "-m", "umni", "run", "umnibench", "--model", "sim/umm?latency=0.3",
               "--limit", "4", "--concurrency", "2", "--quiet", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = tmp_path / "out" / "events.jsonl"
    deadline = time.monotonic() + 120
    while not (events.exists() and "node.done" in events.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-2000:]
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack: the test says where it hung
        pytest.fail("no exit 60 s after SIGTERM:\n" + process.communicate()[1][-6000:])
    assert process.returncode == 1, err[-3000:]
    assert "Traceback" not in err and err.strip().endswith("terminated (SIGTERM); run the same command again to resume")
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
