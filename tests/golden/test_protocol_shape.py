"""Every protocol folder has the same core modules (umni_graphs' docstring says what each holds), and
its protocol.py is only the wiring: the Protocol subclass, whose methods each call a module, and
PROTOCOL."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import umni_graphs

GRAPHS = Path(umni_graphs.__file__).parent
PROTOCOLS = ("aegis", "genius", "girbench", "umnibench", "wise")
CORE = ("options", "cases", "graph", "records", "scoring", "summary", "deviations", "protocol")
#: UmniBench has no official code to deviate from.
WITHOUT = {"umnibench": {"deviations"}}


@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_protocol_folder_has_the_core_modules(name: str) -> None:
    wanted = set(CORE) - WITHOUT.get(name, set())
    missing = sorted(m for m in wanted if importlib.util.find_spec(f"umni_graphs.{name}.{m}") is None)
    assert not missing, f"graphs/{name}/ lacks {missing}"


@pytest.mark.parametrize("name", PROTOCOLS)
def test_protocol_py_is_only_the_protocol_class(name: str) -> None:
    tree = ast.parse((GRAPHS / name / "protocol.py").read_text(encoding="utf-8"))
    defined = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr))]
    classes = [node for node in defined if isinstance(node, ast.ClassDef)]
    assert len(classes) == 1, "one class: the Protocol subclass"
    assert [node for node in defined if node not in classes] == [tree.body[-1]], "besides it only PROTOCOL = ..."
    for method in (node for node in classes[0].body if isinstance(node, ast.FunctionDef)):
        statements = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        assert len(statements) <= 2, f"{name}.{method.name} holds logic; it belongs in the module of its concept"
