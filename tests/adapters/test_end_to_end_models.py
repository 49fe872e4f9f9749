"""UmniBench end to end with real model code: a tiny random Janus understands and draws, a tiny
random InstructPix2Pix edits. Weights are random, so the scores mean nothing; what is checked is
that every role runs through the real loading and calling paths, the run is complete and cached.
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pytest.importorskip("transformers")
pytest.importorskip("diffusers")

import tiny_diffusers  # noqa: E402
import tiny_hf  # noqa: E402

from umni.run.evaluation import RunRequest, evaluate  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("models")
    return tiny_hf.build_janus(base / "janus"), tiny_diffusers.build_tiny_ip2p(base / "ip2p")


def test_umnibench_with_tiny_real_models(models, tmp_path):
    janus, ip2p = models
    request = RunRequest(
        protocol="umnibench",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        model=f"hf/{janus}?mode=likelihood",  # a random model rambles; scoring option letters still measures it
        roles=[f"edit=diffusers/{ip2p}?steps=2"],
        limit=1,
        progress=False,
    )
    summary = evaluate(request).summary
    assert summary.bindings["generate"] == f"hf/{janus}?mode=likelihood" and summary.bindings["edit"].startswith("diffusers/")
    assert summary.calls == {"generate": 1, "edit": 2, "understand": 9}
    counts = summary.counts
    assert counts.nodes == 12 and counts.failed + counts.blocked == 0
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert all(q["mode"] == "likelihood" and q["correct"] is not None for q in record["questions"].values())
    assert summary.backends["generate"]["revision"]  # a local folder is identified by its contents

    again = evaluate(request).summary
    assert again.this_invocation is not None and again.this_invocation.calls == {} and again.counts.cached == 12


def test_rambling_letter_answers_are_counted_as_invalid_not_wrong(models, tmp_path):
    janus, ip2p = models
    request = RunRequest(
        protocol="umnibench",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        model=f"hf/{janus}",
        roles=[f"edit=diffusers/{ip2p}?steps=2"],
        limit=1,
        progress=False,
    )
    summary = evaluate(request).summary
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    # the random model writes no option letter: each answer is an invalid answer, none is scored
    invalid = [q for q in record["questions"].values() if q["failure"] == "invalid"]
    assert summary.failures["invalid"] == len(invalid)
    assert all(q["correct"] is None for q in invalid)
    answered = 9 - len(invalid)
    assert sum(summary.scores["answered"].values()) == answered
