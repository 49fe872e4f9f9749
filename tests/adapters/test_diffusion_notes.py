"""What a diffusers model silently weakens is recorded on the node and counted in the summary.

A text-to-image pipeline cannot take GENIUS's interleaved context images (it draws from text only),
and Stable Diffusion's CLIP text encoder keeps 77 tokens of a longer prompt. diffusers only logs the
latter on the console; umni records both as node notes (``images_ignored``, ``prompt_truncated``)
and counts them in ``summary.json`` (``node_notes``).
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pytest.importorskip("diffusers")

import tiny_diffusers  # noqa: E402

from umni.run.evaluation import RunRequest, evaluate  # noqa: E402


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory):
    return tiny_diffusers.build_tiny_sd(tmp_path_factory.mktemp("models") / "sd")


def test_ignored_context_images_and_truncated_prompts_are_noted_and_counted(tiny_sd, tmp_path):
    request = RunRequest(
        protocol="genius",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        model="sim/umm",
        roles=[f"generate=diffusers/{tiny_sd}?steps=1"],
        limit=2,
        progress=False,
    )
    summary = evaluate(request).summary
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    notes = [note for record in records for node in record["nodes"].values() for note in node.get("notes", [])]
    ignored = [n for n in notes if n.startswith("images_ignored:")]
    truncated = [n for n in notes if n.startswith("prompt_truncated:")]
    # every bundled GENIUS case interleaves context images; the tiny SD pipeline draws from text only
    assert len(ignored) == len(records) == 2 and "StableDiffusionPipeline" in ignored[0]
    assert truncated and all("keeps 77 of the prompt's" in n for n in truncated)  # GENIUS contexts run long
    assert summary.node_notes.get("images_ignored") == 2
    assert summary.node_notes.get("prompt_truncated", 0) == len(truncated)


def test_a_short_text_only_prompt_has_no_note(tiny_sd):
    backend = tiny_diffusers.started(tiny_sd, steps=1)
    pipeline = backend.pipeline
    assert pipeline.truncation_notes("a red cube") == ()
    long_prompt = " ".join(["a red cube beside a blue ball"] * 20)
    [note] = pipeline.truncation_notes(long_prompt)
    assert note.startswith("prompt_truncated: tokenizer keeps 77 of the prompt's")
