"""Test-only helpers shared by the reliability tests: commands, result files, timed stub server."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.openai_server import ChatRequest, OpenAIStubServer
from umni.util.policy import RetryPolicy

#: The reference backend with a small per-call latency, so a run lasts long enough to be interrupted.
SIM = "sim/umm?latency=0.01"

#: Retry policy for fault tests: same shape as the default, waits scaled down so runs take seconds.
FAST_RETRY = RetryPolicy(max_attempts=4, budget_seconds=20.0, initial_wait=0.02, max_wait=1.0, jitter=0.01)


def umni_run_command(out: Path, cache: Path, *, limit: int, model: str = SIM, concurrency: int = 3) -> list[str]:
    """`python -m umni run umnibench ...` as a subprocess command line."""
    return [
        sys.executable, "-m", "umni", "run", "umnibench", "--model", model, "--out", str(out),
        "--cache", str(cache), "--limit", str(limit), "--concurrency", str(concurrency), "--quiet",
    ]  # fmt: skip


def read_results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def run_db_case_ids(out: Path) -> list[str]:
    """Case ids stored in a run directory's run.db (opened read-only; [] when there is none yet)."""
    path = out / "run.db"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "cases" not in tables:
            return []
        return [r[0] for r in conn.execute("SELECT case_id FROM cases ORDER BY position")]
    finally:
        conn.close()


def files_containing(roots: list[Path], needle: bytes) -> list[Path]:
    """Every file under `roots` whose bytes contain `needle` (run dirs, caches, SQLite WAL files)."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and needle in path.read_bytes():
                found.append(path)
    return found


def letter_by_hash(chat: ChatRequest) -> str:
    """A stub responder that answers every multiple-choice prompt with a fixed, prompt-derived letter.

    Deterministic across runs and servers, so a faulty run can be compared with a fault-free one.
    """
    text = "\n".join(chat.texts)
    letters = re.findall(r"(?m)^([A-Z])\.\s", text)
    if not letters:
        return "no options here"
    digest = hashlib.sha256(text.encode()).digest()
    return f"Answer: {letters[digest[0] % len(letters)]}"


class TimedStub(OpenAIStubServer):
    """The stub server, stamping each request with its arrival time (``request.arrived``)."""

    def _record(self, request: Any) -> None:
        request.arrived = time.monotonic()
        super()._record(request)

    def arrivals(self, path_suffix: str = "") -> list[float]:
        with self._lock:
            return [r.arrived for r in self.requests if r.path.endswith(path_suffix)]


def openai_spec(server: OpenAIStubServer, *, timeout: float = 2.0, **params: str) -> str:
    """The stub as a run's model. It draws through the images endpoints: image_api=images says so,
    so no probe before the run takes a fault of the schedule or adds to the counts."""
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return f"openai/stub-umm?base_url={server.base_url}&timeout={timeout}&image_api=images{extra}"
