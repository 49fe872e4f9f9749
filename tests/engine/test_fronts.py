"""umni's public fronts (`umni`, `umni.plugin`) list each name once, load it lazily, and are the only
doors through which umni's own plugins (graphs/, adapters/, examples/) reach umni."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTS = ("umni", "umni.plugin")
PUBLIC_MODULES = frozenset(FRONTS)


def _type_checking_imports(module_name: str) -> dict[str, str]:
    """`name -> module` of the imports under the front's `if TYPE_CHECKING:` block."""
    tree = ast.parse(Path(import_module(module_name).__file__ or "").read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{module_name}: re-export {alias.name} as itself"
                    found[alias.name] = stmt.module
    return found


@pytest.mark.parametrize("front", FRONTS)
def test_all_the_lazy_table_and_the_type_checking_imports_list_the_same_names(front):
    module = import_module(front)
    table = module._EXPORTS
    assert _type_checking_imports(front) == table
    assert sorted(set(module.__all__) - {"__version__"}) == sorted(table)
    assert len(module.__all__) == len(set(module.__all__)), "a name listed twice in __all__"
    assert sorted(dir(module)) == sorted(module.__all__)


@pytest.mark.parametrize("front", FRONTS)
def test_every_public_name_is_the_object_its_module_defines(front):
    module = import_module(front)
    for name, home in module._EXPORTS.items():
        assert getattr(module, name) is getattr(import_module(home), name), f"{front}.{name}"


def test_an_unknown_plugin_name_is_an_attribute_error_naming_it():
    import umni.plugin

    with pytest.raises(AttributeError, match="no_such_name"):
        umni.plugin.no_such_name  # noqa: B018


def test_importing_the_plugin_front_loads_no_engine():
    code = "import sys, umni.plugin; from umni.plugin import Spec; print('umni.run.evaluation' in sys.modules, 'anyio' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def _deep_umni_imports(path: Path) -> list[str]:
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        for name in modules:
            if (name == "umni" or name.startswith("umni.")) and name not in PUBLIC_MODULES:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    return bad


def test_graphs_adapters_and_examples_import_only_the_public_fronts():
    """examples/ is not a package import-linter sees, so it is read here; graphs/ and adapters/ are
    held to the same rule by the contract in pyproject.toml as well."""
    files = [p for folder in ("graphs", "adapters", "examples") for p in sorted((REPO / folder).rglob("*.py"))]
    assert files
    bad = [line for path in files for line in _deep_umni_imports(path)]
    assert bad == [], "import these from umni or umni.plugin:\n" + "\n".join(bad)
