"""Models behind servers nobody here wrote or behind the one shape UMM servers share.

1. ``transformers serve`` (Hugging Face's own OpenAI-compatible server, ``pip install
   'transformers[serving]'``) with a tiny random Qwen2.5-VL on 127.0.0.1, used through the
   ``openai/...?base_url=`` backend as UmniBench's understander and WISE's judge.
2. ``images_server.py``: a tiny OmniGen pipeline behind ``/v1/images/generations`` and
   ``/v1/images/edits`` (the endpoints vLLM-Omni and SGLang serve UMMs with), written with diffusers
   alone, running UmniBench's generate and edit roles end to end.

Each server is a subprocess started and stopped by the test on 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from umni.run.evaluation import RunRequest, evaluate


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Server:
    """A server subprocess on a free loopback port, up once ``/health`` answers 200; stopped on exit."""

    def __init__(self, command: list[str], log: Path, *, wait_s: float = 180) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [part.replace("{port}", str(self.port)) for part in command], stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )
        try:
            self._wait(wait_s)
        except BaseException:
            self.stop()
            raise

    def _wait(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.base}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not answer /health in {wait_s} s:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def served_vlm(tiny: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of `transformers serve` running the tiny Qwen2.5-VL on loopback."""
    for module in ("fastapi", "uvicorn", "openai"):  # transformers[serving]
        pytest.importorskip(module)
    folder = tiny("qwen25_vl")
    command = [str(Path(sys.executable).parent / "transformers"), "serve", str(folder), "--host", "127.0.0.1",
               "--port", "{port}", "--device", "cpu", "--dtype", "float32"]
    server = _Server(command, tmp_path_factory.mktemp("serve") / "serve.log")
    try:
        yield f"{server.base}/v1"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def served_images(tiny: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of images_server.py serving the tiny OmniGen pipeline on loopback."""
    script = Path(__file__).with_name("images_server.py")
    command = [sys.executable, str(script), str(tiny("omnigen")), "{port}"]
    server = _Server(command, tmp_path_factory.mktemp("images") / "images.log")
    try:
        yield f"{server.base}/v1"
    finally:
        server.stop()


def test_transformers_serve_answers_umnibench_questions(served_vlm: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    model = f"openai/{tiny('qwen25_vl')}?base_url={served_vlm}&max_tokens=8"
    request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                         roles=[f"understand={model}"], limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.calls["understand"] == 9
    assert summary.counts.blocked == 0
    # random weights rarely write a valid letter: such answers are counted, never dropped or guessed
    assert summary.counts.failed + sum(summary.scores["answered"].values()) == 9


def test_transformers_serve_judges_wise_images(served_vlm: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    model = f"openai/{tiny('qwen25_vl')}?base_url={served_vlm}&max_tokens=8"
    request = RunRequest(protocol="wise", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                         roles=[f"judge={model}"], limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.bindings["judge"] == model
    assert summary.calls["judge"] >= 1
    assert summary.counts.blocked == 0


def test_umnibench_runs_end_to_end_against_a_served_diffusers_pipeline(served_images: str, tmp_path: Path) -> None:
    """Generate and edit go to the image server; every image node comes back and is recorded."""
    model = f"openai/tiny-omnigen?base_url={served_images}&roles=generate,edit"
    request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                         roles=[f"generate={model}", f"edit={model}"], limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.counts.failed + summary.counts.blocked == 0, summary.counts
    assert summary.calls["generate"] >= 1 and summary.calls["edit"] >= 1
    served = httpx.get(served_images.removesuffix("/v1") + "/health").json()["calls"]
    assert served == summary.calls["generate"] + summary.calls["edit"]
