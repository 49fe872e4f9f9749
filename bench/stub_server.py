"""The test suite's OpenAI-compatible stub server, run in its own process for the latency benchmark.

In the benchmark's own process the server's threads would compete with the engine for the GIL, and
the engine would be charged for the server's work. ``python -m bench.stub_server --latency L``
prints the base URL on its first line and serves until its standard input closes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .repo import REPO, load_repo_module


def load_stub_module() -> Any:
    """tests/support/openai_server.py, the stub OpenAI-compatible server."""
    return load_repo_module("tests/support/openai_server.py", "umni_bench_openai_server", "the HTTP latency benchmark")


class StubProcess:
    """A running stub server: its base URL, and after it stops, the CPU seconds it used."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cpu_seconds: float | None = None


@contextmanager
def stub_server(latency: float) -> Iterator[StubProcess]:
    """Start the server in a child process; yields it once it listens."""
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.stub_server", "--latency", repr(latency)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    server: StubProcess | None = None
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if not line.startswith("http://"):
            raise RuntimeError(f"the stub server did not start (it printed {line!r})")
        server = StubProcess(line)
        yield server
    finally:
        try:
            rest, _ = child.communicate(timeout=10)  # closes the child's stdin, which stops it
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        else:
            for item in rest.split():
                if item.startswith("cpu_seconds=") and server is not None:
                    server.cpu_seconds = float(item.split("=", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    module = load_stub_module()
    with module.OpenAIStubServer(latency=args.latency, responder=lambda chat: "Answer: A") as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or exits)
    print(f"cpu_seconds={time.process_time():.6f}", flush=True)


if __name__ == "__main__":
    main()
