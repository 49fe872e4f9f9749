"""The UMM template plugin (examples/umni_umm_template), with its named stand-in for a user's own
inference call (``inference.StandInUMM``), found through its entry point and run through a real
protocol in every role, as a BAGEL or OmniGen2 plugin completed from it would be.

The package is put on the path with the metadata ``pip install`` writes, so discovery goes through
``importlib.metadata`` exactly as for an installed plugin.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image

from umni.backends import create_backend
from umni.util.errors import ConfigError
from umni.util.spec import Spec

pytest.importorskip("torch")

PLUGIN = Path(__file__).parents[2] / "examples" / "umni_umm_template"


@pytest.fixture
def checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    dist = tmp_path / "site" / "umni_myumm-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: umni-myumm\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[umni.backends]\nmyumm = umni_myumm:MyUMMBackend\n")
    monkeypatch.syspath_prepend(str(dist.parent))
    monkeypatch.syspath_prepend(str(PLUGIN))
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "my-umm"}))
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 4)  # stands in for the weights
    yield folder
    for name in [m for m in sys.modules if m.startswith("umni_myumm")]:
        sys.modules.pop(name)


async def _together(calls):
    results: list = [None] * len(calls)

    async def one(index, call):
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return results


def test_the_template_runs_umnibench_in_every_role(checkpoint: Path, tmp_path: Path) -> None:
    from umni.run.evaluation import RunRequest, evaluate

    model = f"myumm/{checkpoint}?size=32&steps=2"
    request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", model=model,
                         limit=1, progress=False)
    summary = evaluate(request).summary
    assert summary.counts.failed + summary.counts.blocked == 0, summary.counts
    assert summary.calls["generate"] >= 1 and summary.calls["understand"] >= 1
    assert summary.backends["generate"]["model_version"]


def test_batched_results_equal_alone_and_seeds_matter(checkpoint: Path) -> None:
    made = create_backend(Spec.parse(f"myumm/{checkpoint}?size=16&batch_size=4&temperature=1"))
    source = Image.new("RGB", (20, 12), (10, 200, 30))
    for make in (lambda s: made.generate([f"a red cube {s}"], seed=s),
                 lambda s: made.edit([source], f"make it red {s}", seed=s),
                 lambda s: made.choose(["which?"], ["red", "green", "blue"], seed=s)):
        calls = [lambda s=s, make=make: make(s) for s in range(4)]
        alone = [anyio.run(call) for call in calls]
        before = len(made._batcher.stats.sizes)
        together = anyio.run(_together, calls)
        assert made._batcher.stats.sizes[before:] == [4]
        for one, batched in zip(alone, together):
            if hasattr(one, "image"):
                assert np.array_equal(np.asarray(one.image), np.asarray(batched.image))
            else:
                assert one == batched
    first, second = (anyio.run(lambda s=s: made.generate(["same"], seed=s)) for s in (0, 1))
    assert np.asarray(first.image).tobytes() != np.asarray(second.image).tobytes()


def test_checkpoint_code_needs_the_users_opt_in_and_weights_change_the_identity(checkpoint: Path) -> None:
    before = create_backend(Spec.parse(f"myumm/{checkpoint}")).identity()
    (checkpoint / "model.safetensors").write_bytes(b"other weights")
    assert create_backend(Spec.parse(f"myumm/{checkpoint}")).identity() != before
    (checkpoint / "modeling_my_umm.py").write_text("raise SystemExit('checkpoint code ran')\n")
    with pytest.raises(ConfigError, match="trust_remote_code=true"):
        create_backend(Spec.parse(f"myumm/{checkpoint}"))
    trusted = create_backend(Spec.parse(f"myumm/{checkpoint}?trust_remote_code=true"))
    assert trusted.identity()["params"] == create_backend(Spec.parse(f"myumm/{checkpoint}?trust_remote_code=1")).identity()["params"]
