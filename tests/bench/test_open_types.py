"""bench/open_types.py counts what it says it counts: which annotations make a public function open,
and which functions are public."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("bench_open_types", Path(__file__).resolve().parents[2] / "bench" / "open_types.py")
assert _spec is not None and _spec.loader is not None
open_types = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = open_types  # dataclasses look their module up by name
_spec.loader.exec_module(open_types)
functions, is_open = open_types.functions, open_types.is_open


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("dict[str, Any]", True),
        ("Mapping[str, Any]", True),
        ("list[dict[str, Any]]", True),
        ("Iterable[dict[str, Any]] | None", True),
        ("Any", True),
        ("Any | None", True),
        ("'dict[str, Any]'", True),
        ("dict[str, int]", False),
        ("list[Any]", False),
        ("Protocol[Any, Any, Any, Any]", False),
        ("Summary", False),
    ],
)
def test_which_annotations_are_open(annotation: str, expected: bool) -> None:
    assert is_open(ast.parse(annotation, mode="eval").body) is expected


def test_public_means_no_underscore_in_module_class_or_name(tmp_path: Path) -> None:
    package = tmp_path / "umni"
    (package / "_private").mkdir(parents=True)
    (package / "__init__.py").write_text("from typing import Any\ndef top(x: Any) -> int: ...\n")
    (package / "_private" / "inner.py").write_text("def hidden(x: dict[str, Any]) -> None: ...\n")
    (package / "mod.py").write_text(
        "from typing import Any\n"
        "def shaped(x: int) -> str: ...\n"
        "def _helper(x: Any) -> Any: ...\n"
        "class Open:\n"
        "    def read(self) -> dict[str, Any]: ...\n"
        "    def __eq__(self, other: Any) -> bool: ...\n"
        "class _Hidden:\n"
        "    def read(self) -> Any: ...\n"
    )
    found = {(f.module, f.name): f.open for f in functions(tmp_path)}
    assert found == {("umni", "top"): True, ("umni.mod", "shaped"): False, ("umni.mod", "Open.read"): True}
