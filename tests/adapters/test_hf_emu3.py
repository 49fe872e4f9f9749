"""Emu3 through transformers' own Emu3ForConditionalGeneration, on a tiny random Emu3 built from config."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from umni.backends.roles import GENERATE, JUDGE, UNDERSTAND
from umni.run.evaluation import RunRequest, evaluate
from umni.util.spec import Spec
from umni_adapters.hf import HFBackend

pytest.importorskip("diffusers")


from tests.adapters import tiny_hf as tiny


@pytest.fixture(scope="module")
def emu3_dir(tmp_path_factory):
    return tiny.build_emu3(tmp_path_factory.mktemp("emu3"))


def emu3(folder: Path, query: str = "image_side=32") -> HFBackend:
    return HFBackend(Spec.parse(f"hf/{folder}?{query}"))


def test_emu3_fills_understand_judge_and_generate(emu3_dir):
    model = emu3(emu3_dir)
    assert model.kind == "emu3" and model.fills() == {UNDERSTAND, JUDGE, GENERATE}
    assert model.identity()["params"]["image_side"] == 32


def test_emu3_images_are_seeded_per_image_alone_or_concurrent(emu3_dir):
    model = emu3(emu3_dir)

    async def make(seed: int) -> bytes:
        return (await model.generate(["a red cube"], seed=seed)).image.tobytes()

    async def concurrent() -> list[bytes]:
        results: list[bytes] = [b""] * 4

        async def one(index: int) -> None:
            results[index] = await make(index + 1)

        async with anyio.create_task_group() as group:
            for index in range(4):
                group.start_soon(one, index)
        return results

    first = anyio.run(lambda: model.generate(["a red cube"], seed=1))
    # 32 px at 8 px a token = 4x4 visual tokens (plus 4 line ends and 3 closing tokens), decoded back to 32 px
    assert first.image.size == (32, 32) and first.usage.output_tokens == 4 * 5 + 3
    together = anyio.run(concurrent)
    assert together[0] == first.image.tobytes()
    assert anyio.run(make, 2) == together[1] != together[0]


def test_emu3_answers_in_text(emu3_dir):
    reply = anyio.run(lambda: emu3(emu3_dir).respond(["What colour is the cube?"], max_tokens=4))
    assert reply.usage.output_tokens <= 4 and reply.usage.input_tokens > 0


def test_emu3_generates_and_answers_in_a_real_run(emu3_dir, tmp_path):
    request = RunRequest(
        protocol="umnibench",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        model=f"hf/{emu3_dir}?image_side=32&mode=likelihood",
        roles=["edit=sim/umm"],
        limit=1,
        progress=False,
    )
    summary = evaluate(request).summary
    assert summary.calls["generate"] == 1 and summary.calls["understand"] > 0
    assert summary.counts.failed + summary.counts.blocked == 0
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert all(q["mode"] == "likelihood" for q in record["questions"].values())
