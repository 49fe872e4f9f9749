"""Third-party backends are found through the `umni.backends` entry-point group."""

import sys
from pathlib import Path

from umni.backends import create_backend, known_providers
from umni.util.spec import Spec

PLUGIN = Path(__file__).parents[2] / "examples" / "plugin"


def test_example_plugin_is_discovered_through_entry_points(tmp_path, monkeypatch):
    # What `pip install examples/plugin` leaves behind: the package on the path and its metadata.
    dist = tmp_path / "umni_paintbox-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: umni-paintbox\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[umni.backends]\npaintbox = umni_paintbox:PaintboxBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(PLUGIN))
    assert "paintbox" in known_providers()
    backend = create_backend(Spec.parse("paintbox/flat?size=16"))
    assert backend.fills() == {"generate", "edit"}

    import anyio

    reply = anyio.run(lambda: backend.generate(["a red square"]))
    assert reply.image.size == (16, 16) and reply.image.getpixel((0, 0)) == (220, 40, 40)
    sys.modules.pop("umni_paintbox", None)
