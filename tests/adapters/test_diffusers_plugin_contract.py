"""The example plugin (examples/umni_plugin_example): a model with its own code, found through
its entry point and run in a real graph, as a Bagel or OmniGen2 plugin would be.

The package is put on the path with the metadata ``pip install`` writes, so discovery goes
through ``importlib.metadata`` exactly as for an installed plugin.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image

from umni.backends import create_backend, known_providers
from umni.util.errors import ConfigError
from umni.util.spec import Spec

pytest.importorskip("torch")

PLUGIN = Path(__file__).parents[2] / "examples" / "umni_plugin_example"


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    dist = tmp_path / "site" / "umni_tinydraw-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: umni-tinydraw\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[umni.backends]\ntinydraw = umni_tinydraw:TinyDrawBackend\n")
    monkeypatch.syspath_prepend(str(dist.parent))
    monkeypatch.syspath_prepend(str(PLUGIN))
    from umni_tinydraw.model import write_random

    yield write_random(tmp_path / "checkpoint")
    for name in [m for m in sys.modules if m.startswith("umni_tinydraw")]:
        sys.modules.pop(name)


def test_the_plugin_is_found_validates_its_spec_and_keeps_edit_sizes(installed: Path) -> None:
    assert "tinydraw" in known_providers()
    with pytest.raises(ConfigError, match="size"):
        create_backend(Spec.parse(f"tinydraw/{installed}?size=-3"))
    with pytest.raises(ConfigError, match="no TinyDraw checkpoint"):
        create_backend(Spec.parse(f"tinydraw/{installed}/missing"))
    made = create_backend(Spec.parse(f"tinydraw/{installed}?size=24"))
    assert made.fills() == {"generate", "edit"}
    anyio.run(made.start)
    drawn = anyio.run(lambda: made.generate(["a red cube"], seed=1))
    assert drawn.image.size == (24, 24)
    again = anyio.run(lambda: made.generate(["a red cube"], seed=1))
    assert np.array_equal(np.asarray(again.image), np.asarray(drawn.image))
    source = Image.new("RGB", (37, 21), (10, 200, 30))
    edited = anyio.run(lambda: made.edit([source], "make it red", seed=1))
    assert edited.image.size == (37, 21)


def test_the_plugin_runs_in_a_real_graph(installed: Path, tmp_path: Path) -> None:
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph
    from umni.store.cache import Cache

    spec = f"tinydraw/{installed}?size=32"
    graph = Graph("tinydraw")
    drawn = graph.generate("draw", ["a red cube"])
    graph.edit("recolour", drawn, "make the cube green")
    graph.answer("colour", [drawn, "What colour is the cube?"], options=["red", "green"])
    runner = Runner(Bindings.from_specs("sim/umm", [f"generate={spec}", f"edit={spec}"]), Cache(tmp_path / "cache"))
    outcomes = anyio.run(runner.run_graph, graph)
    assert all(outcome.ok for outcome in outcomes.values()), {k: o.failure for k, o in outcomes.items()}
    edited = outcomes["recolour"].image
    assert edited is not None and (edited.width, edited.height) == (32, 32)
