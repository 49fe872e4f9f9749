"""How many of umni's public functions take or return untyped JSON: `dict[str, Any]`,
`Mapping[str, Any]` or a bare `Any` (issue 31 item 4).

Public: a module-level function or a method whose name has no leading underscore, in a class whose
name has none, in a module of umni/ none of whose path parts has one (``__init__.py`` counts as its
package). Dunder methods and functions nested in functions are not counted. A function is *open*
when a parameter's annotation or its return annotation contains ``dict[str, Any]`` or
``Mapping[str, Any]`` (also inside another type: ``list[dict[str, Any]]``), or is ``Any`` itself
(``Any | None`` too). ``Protocol[Any, ...]`` and ``list[Any]`` are not counted: they say a type
parameter is left free, not that data has no shape.

    python -m bench.open_types              # the share, and the open functions by module
    python -m bench.open_types --summary    # the share only
    python -m bench.open_types --json       # {"public": n, "open": n, "share": x, "functions": [...]}

Reads the source only (no import), so it runs on any checkout: compare two commits with
``git worktree add /tmp/x REV && python -m bench.open_types --root /tmp/x``.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPEN_CONTAINERS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})


@dataclass(frozen=True)
class Function:
    module: str
    name: str
    line: int
    open: bool


def _is_any(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any")


def _without_none(node: ast.expr) -> ast.expr:
    """`X | None` and `Optional[X]` as X."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        if isinstance(node.right, ast.Constant) and node.right.value is None:
            return _without_none(node.left)
        if isinstance(node.left, ast.Constant) and node.left.value is None:
            return _without_none(node.right)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Optional":
        return node.slice
    return node


def _str_any_map(node: ast.expr) -> bool:
    """Whether `node` is dict[str, Any] / Mapping[str, Any] (any spelling of the container)."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Tuple) or len(node.slice.elts) != 2:
        return False
    container = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
    key, value = node.slice.elts
    return container in OPEN_CONTAINERS and isinstance(key, ast.Name) and key.id == "str" and _is_any(value)


def is_open(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        return is_open(ast.parse(annotation.value, mode="eval").body)
    if _is_any(_without_none(annotation)):
        return True
    return any(isinstance(node, ast.expr) and _str_any_map(node) for node in ast.walk(annotation))


def _annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr | None]:
    args = fn.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        yield arg.annotation
    for arg in (args.vararg, args.kwarg):
        yield arg.annotation if arg is not None else None
    yield fn.returns


def _public_module(path: Path, root: Path) -> str | None:
    parts = path.relative_to(root).with_suffix("").parts
    if any(p.startswith("_") and p != "__init__" for p in parts):
        return None
    return ".".join(p for p in parts if p != "__init__")


def functions(root: Path = REPO) -> list[Function]:
    found: list[Function] = []
    for path in sorted((root / "umni").rglob("*.py")):
        module = _public_module(path, root)
        if module is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        scopes: list[tuple[str, ast.stmt]] = [("", stmt) for stmt in tree.body]
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and not stmt.name.startswith("_"):
                scopes += [(f"{stmt.name}.", item) for item in stmt.body]
        for prefix, stmt in scopes:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith("_"):
                found.append(Function(module, prefix + stmt.name, stmt.lineno, any(is_open(a) for a in _annotations(stmt))))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.open_types", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO, help="checkout to read (default: this one)")
    parser.add_argument("--summary", action="store_true", help="print the share only")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    found = functions(args.root)
    opened = [f for f in found if f.open]
    share = len(opened) / len(found) if found else 0.0
    if args.json:
        rows = [f"{f.module}:{f.line} {f.name}" for f in opened]
        print(json.dumps({"public": len(found), "open": len(opened), "share": round(share, 4), "functions": rows}, indent=1))
        return
    if not args.summary:
        for f in opened:
            print(f"{f.module}:{f.line}  {f.name}")
        print()
    print(f"{len(opened)} of {len(found)} public functions take or return dict[str, Any] / Mapping[str, Any] / Any: {100 * share:.1f} %")


if __name__ == "__main__":
    main()
