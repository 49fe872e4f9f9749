"""The test suite's OpenAI-compatible stub server, run in its own process.

The latency benchmark runs it apart because in the benchmark's own process the server's threads
would compete with the engine for the GIL, and the engine would be charged for the server's work.
It also stands in for a model server by hand: ``python -m bench.stub_server [--port N] [--latency L]``
prints the base URL on its first line and serves until its standard input closes, so
``umni run genius --model 'openai/stub?base_url=URL'`` runs every protocol end to end without a model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .repo import REPO, load_repo_module


def load_stub_module() -> Any:
    """tests/support/openai_server.py, the stub OpenAI-compatible server."""
    return load_repo_module("tests/support/openai_server.py", "umni_bench_openai_server", "the stub server")


#: A judge's answer template line, ``Label: <lo-hi>`` (GENIUS and WISE end their judge prompts with these).
MARK_TEMPLATE = re.compile(r"(?m)^[ \t*_]*([A-Za-z][A-Za-z ]{0,40}?)[ \t*_]*:[ \t]*<\s*(\d+)\s*-\s*(\d+)\s*>[ \t]*$")
#: How many answers a checklist judge (AEGIS) must give: ``answer_list holds exactly N entries``.
CHECKLIST_SIZE = re.compile(r"exactly (\d+) entries")
CHECKLIST_ITEM = re.compile(r"(?m)^\s*\d+\.\s+\S")
#: The option lines the OpenAI backend appends to a multiple-choice question (``A. text``).
OPTION_LINE = re.compile(r"(?m)^([A-Z])\.\s+\S")


def _pick(text: str, salt: str, choices: int) -> int:
    """A choice that depends only on the prompt, so runs repeat exactly but scores are not all equal."""
    return int.from_bytes(hashlib.sha256(f"{salt}\n{text}".encode()).digest()[:4], "big") % choices


def protocol_reply(texts: list[str]) -> str:
    """A reply every protocol's parser accepts: a checklist judgement as JSON, marks for each
    ``Label: <lo-hi>`` template, a letter for a multiple-choice question, else a plain sentence.

    A stub that answered ``Answer: A`` to everything made every judge reply a parse failure."""
    text = "\n".join(texts)
    if "answer_list" in text:
        size = CHECKLIST_SIZE.search(text)
        n = int(size.group(1)) if size else len(CHECKLIST_ITEM.findall(text))
        answers = ["Y" if _pick(text, f"item {i}", 2) else "N" for i in range(n)]
        return json.dumps({"answer_list": answers, "reason_list": ["the stub server's verdict"] * n})
    marks = MARK_TEMPLATE.findall(text)
    if marks:
        return "\n".join(f"{label}: {int(lo) + _pick(text, label, int(hi) - int(lo) + 1)}" for label, lo, hi in marks)
    letters = OPTION_LINE.findall(text)
    if letters:
        return f"Answer: {letters[_pick(text, 'option', len(letters))]}"
    return "The stub server read the prompt and has nothing more to say."


class StubProcess:
    """A running stub server: its base URL, and after it stops, the CPU seconds it used."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cpu_seconds: float | None = None


@contextmanager
def stub_server(latency: float, port: int = 0) -> Iterator[StubProcess]:
    """Start the server in a child process; yields it once it listens."""
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.stub_server", "--latency", repr(latency), "--port", str(port)],
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)")
    args = parser.parse_args()
    module = load_stub_module()
    stub = module.OpenAIStubServer(latency=args.latency, port=args.port, responder=lambda chat: protocol_reply(chat.texts))
    with stub as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or exits)
    print(f"cpu_seconds={time.process_time():.6f}", flush=True)


if __name__ == "__main__":
    main()
