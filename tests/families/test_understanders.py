"""Chat VLM families as understander (UmniBench) and judge (WISE), each a tiny random checkpoint run
through `umni.evaluate` with the real loading, chat-template and batching code.

Weights are random, so answers mean nothing: UmniBench runs with ``mode=likelihood`` (always a valid
option), and the WISE judge's unparseable replies are counted judge failures. What is checked is that
every question and every judgement reached the family's model and came back recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from umni.run.evaluation import RunRequest, evaluate

FAMILIES = ["qwen25_vl", "qwen3_vl", "llava_onevision", "idefics3"]


@pytest.mark.parametrize("family", FAMILIES)
def test_family_answers_umnibench_questions(family: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    model = f"hf/{tiny(family)}?mode=likelihood"
    request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                         roles=[f"understand={model}"], limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.bindings["understand"] == model
    assert summary.calls["understand"] == 9
    assert summary.counts.failed + summary.counts.blocked == 0
    assert sum(summary.scores["answered"].values()) == 9


@pytest.mark.parametrize("family", FAMILIES)
def test_family_judges_wise_images(family: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    model = f"hf/{tiny(family)}?max_new_tokens=8"
    request = RunRequest(protocol="wise", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                         roles=[f"judge={model}"], limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.bindings["judge"] == model
    assert summary.calls["judge"] >= 1
    assert summary.backends["judge"]["revision"]  # the local folder is identified by its contents
