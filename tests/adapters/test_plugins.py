"""Third-party backends are found through the `umni.backends` entry-point group."""

import sys
from pathlib import Path

import pytest

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


def _broken_plugin(tmp_path: Path, group: str, target: str) -> None:
    """A plugin whose metadata names `target` (a module, or module:attribute that is not there), as a
    renamed class or a stale install leaves it."""
    dist = tmp_path / "umni_broken-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: umni-broken\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\nbroken = {target}\n")
    (tmp_path / "umni_broken.py").write_text("class Backend:\n    pass\n")


def test_a_plugin_naming_a_missing_class_is_one_line_naming_the_entry_point(tmp_path, monkeypatch):
    from umni.backends import create_backend
    from umni.util.errors import ConfigError

    _broken_plugin(tmp_path, "umni.backends", "umni_broken:RenamedBackend")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ConfigError) as caught:
            create_backend(Spec.parse("broken/x"))
    finally:
        sys.modules.pop("umni_broken", None)
    message = caught.value.message
    assert "umni.backends" in message and "umni_broken:RenamedBackend" in message and "umni-broken" in message
    assert "RenamedBackend" in message and "\n" not in message


def test_a_protocol_plugin_whose_module_is_gone_is_one_line(tmp_path, monkeypatch):
    from umni.protocols.protocol import get_protocol
    from umni.util.errors import ConfigError

    _broken_plugin(tmp_path, "umni.protocols", "umni_broken_gone:Bench")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        get_protocol("broken")
    message = caught.value.message
    assert "umni.protocols" in message and "umni_broken_gone" in message and "reinstall" in message
