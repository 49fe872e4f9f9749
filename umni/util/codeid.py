"""Code fingerprints: what a Python callable contributes to a cache key.

A compute function, a judge's `parse` and a `when` condition are code, and the cache may reuse a
result only when the code is the same. A name is not enough (two lambdas share `<lambda>`; an edited
body keeps its name; a closure over another threshold keeps both). A fingerprint here covers:

* the function's code, as the dump of its parsed source (so comments and formatting do not count),
  or its bytecode, constants and names when the source cannot be read or does not single it out
  (several lambdas on one line);
* the values of its closure cells and of its defaults;
* the globals it reads (LOAD_GLOBAL), recursively for functions and classes of user code (bounded
  depth), by value for constants; a library module, function or class counts by its module, name
  and installed version, since its code is not the user's to change between runs;
* for a module of user code (one that is not an installed distribution), the attributes the code
  reaches through it (``helpmod.helper(x)``, ``helpmod.sub.CONST``), each described like a global;
  an attribute looked up by a computed name (``getattr(helpmod, name)``) is not followed;
* for `functools.partial`, the wrapped function and the bound arguments; for a bound method, the
  function and its instance's value.

A value that has no stable description (an object whose only text is ``<Foo object at 0x…>``) cannot
be fingerprinted: the callable is refused with a `ConfigError` naming it, rather than keyed in a way
that lets another value's result come back.
"""

from __future__ import annotations

import ast
import dataclasses
import dis
import enum
import functools
import hashlib
import inspect
import json
import math
import re
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path, PurePath
from typing import Any

from umni.util.errors import ConfigError

__all__ = ["Unfingerprintable", "code_fingerprint", "describe_value"]

#: How deep helper functions are followed; deeper ones count by name (their callers still do by code).
MAX_DEPTH = 6

_LIBRARY_ROOTS = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")} if p
)
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_SOURCE_MEMO: dict[types.CodeType, Any] = {}
#: Classes of user code by their source dump (a class's source does not change within a process).
_CLASS_MEMO: dict[type, Any] = {}


class Unfingerprintable(Exception):
    """A value with no stable description; `code_fingerprint` turns it into a ConfigError."""


def code_fingerprint(fn: Callable[..., Any], *, what: str) -> str:
    """A hex digest that changes whenever `fn` could compute something else.

    `what` names the callable in errors ("case 'c1', node 'score': compute function").
    """
    try:
        described = _callable(fn, depth=0, seen=set())
    except Unfingerprintable as exc:
        raise ConfigError(
            f"{what} cannot be fingerprinted for the cache: {exc}. Pass such values as `const=` arguments "
            "(JSON values) or make them module-level constants with a stable value"
        ) from None
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# ----------------------------------------------------------------------------- callables
def _callable(fn: Any, *, depth: int, seen: set[int]) -> Any:
    if isinstance(fn, functools.partial):
        return {
            "partial": _callable(fn.func, depth=depth, seen=seen),
            "args": [_value(a, depth=depth, seen=seen) for a in fn.args],
            "keywords": {k: _value(v, depth=depth, seen=seen) for k, v in sorted(fn.keywords.items())},
        }
    if isinstance(fn, types.MethodType):
        return {"method": _callable(fn.__func__, depth=depth, seen=seen), "self": _value(fn.__self__, depth=depth, seen=seen)}
    if isinstance(fn, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        owner = getattr(fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            return {"builtin_method": fn.__qualname__, "self": _value(owner, depth=depth, seen=seen)}
        return {"builtin": f"{getattr(fn, '__module__', None) or 'builtins'}.{fn.__qualname__}", "python": _python()}
    if isinstance(fn, type):
        return _class(fn, depth=depth, seen=seen)
    if isinstance(fn, types.FunctionType):
        return _function(fn, depth=depth, seen=seen)
    call = getattr(type(fn), "__call__", None)  # noqa: B004 -- the class's own method, to fingerprint its code
    if call is not None:  # a callable object: its class's code and its own state
        return {"object_of": _class(type(fn), depth=depth, seen=seen), "state": _value(fn, depth=depth, seen=seen, as_state=True)}
    raise Unfingerprintable(f"{fn!r} is not a function")


def _function(fn: types.FunctionType, *, depth: int, seen: set[int]) -> Any:
    name = f"{fn.__module__}.{fn.__qualname__}"
    if _is_library(fn.__module__):
        return {"library_function": name, "version": _module_version(fn.__module__)}
    if id(fn) in seen or depth > MAX_DEPTH:
        return {"function_ref": name}
    seen = seen | {id(fn)}
    code = fn.__code__
    described: dict[str, Any] = {"code": _code_text(fn)}
    if fn.__defaults__:
        described["defaults"] = [_value(v, depth=depth, seen=seen) for v in fn.__defaults__]
    if fn.__kwdefaults__:
        described["kwdefaults"] = {k: _value(v, depth=depth, seen=seen) for k, v in sorted(fn.__kwdefaults__.items())}
    if fn.__closure__:
        cells = {}
        for var, cell in zip(code.co_freevars, fn.__closure__):
            try:
                content = cell.cell_contents
            except ValueError:  # not assigned yet (a function that refers to itself)
                cells[var] = {"empty": True}
                continue
            if isinstance(content, types.ModuleType) and not _is_library(content.__name__):
                cells[var] = _user_module(content, _attribute_paths(code).get(var, set()), depth=depth + 1, seen=seen)
            else:
                cells[var] = _value(content, depth=depth + 1, seen=seen)
        described["closure"] = cells
    names = sorted(_global_names(code))
    reached = _attribute_paths(code)
    if names:
        found = {}
        for global_name in names:
            if global_name in fn.__globals__:
                value = fn.__globals__[global_name]
                if isinstance(value, types.ModuleType) and not _is_library(value.__name__):
                    found[global_name] = _user_module(value, reached.get(global_name, set()), depth=depth + 1, seen=seen)
                else:
                    found[global_name] = _value(value, depth=depth + 1, seen=seen)
        described["globals"] = found
    return described


def _user_module(module: types.ModuleType, paths: set[tuple[str, ...]], *, depth: int, seen: set[int]) -> Any:
    """A module of user code, by the attributes the code reaches through it: its name and version
    say nothing when the user edits it between runs."""
    if _module_version(module.__name__) is not None:  # an installed distribution after all
        return {"module": module.__name__, "version": _module_version(module.__name__)}
    reached: dict[str, Any] = {}
    for first in sorted({path[0] for path in paths}):
        if not hasattr(module, first):
            continue
        value = getattr(module, first)
        if isinstance(value, types.ModuleType) and not _is_library(value.__name__):
            deeper = {path[1:] for path in paths if path[0] == first and len(path) > 1}
            reached[first] = _user_module(value, deeper, depth=depth, seen=seen)
        else:
            reached[first] = _value(value, depth=depth, seen=seen)
    return {"user_module": module.__name__, "reached": reached}


_ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_NAME_LOADS = _GLOBAL_LOADS | {"LOAD_DEREF", "LOAD_CLASSDEREF"}


@functools.lru_cache(maxsize=4096)
def _attribute_paths(code: types.CodeType) -> dict[str, set[tuple[str, ...]]]:
    """Global or closure name -> the attribute chains the code reads off it (``a.b.c`` gives
    ``("b", "c")``)."""
    paths: dict[str, set[tuple[str, ...]]] = {}
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.opname in _NAME_LOADS and isinstance(ins.argval, str):
            chain: list[str] = []
            for after in instructions[i + 1 :]:
                if after.opname not in _ATTRIBUTE_LOADS or not isinstance(after.argval, str):
                    break
                chain.append(after.argval)
            if chain:
                paths.setdefault(ins.argval, set()).add(tuple(chain))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for name, found in _attribute_paths(const).items():
                paths.setdefault(name, set()).update(found)
    return paths


def _code_text(fn: types.FunctionType) -> Any:
    """The dump of the function's parsed source, or its bytecode description when that is not
    available or not unique to it (two lambdas on one line share their source lines)."""
    code = fn.__code__
    if code not in _SOURCE_MEMO:
        _SOURCE_MEMO[code] = _source_dump(fn) or {"bytecode": _bytecode(code), "python": _python()}
    return _SOURCE_MEMO[code]


def _source_dump(fn: types.FunctionType) -> str | None:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda cut out of the middle of an expression
        try:
            tree = ast.parse("(\n" + source.strip().rstrip(",") + "\n)")
        except SyntaxError:
            return None
    found: list[ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef]
    if fn.__name__ == "<lambda>":
        found = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda)]
    else:
        found = [
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__
        ]
    if len(found) != 1:
        return None
    return ast.dump(found[0], annotate_fields=True, include_attributes=False)


def _bytecode(code: types.CodeType) -> Any:
    return {
        "ops": code.co_code.hex(),
        "consts": [_bytecode(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts],
        "names": list(code.co_names),
        "varnames": list(code.co_varnames),
        "freevars": list(code.co_freevars),
        "args": [code.co_argcount, code.co_kwonlyargcount, code.co_flags],
    }


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> frozenset[str]:
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _GLOBAL_LOADS and isinstance(ins.argval, str)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return frozenset(names)


def _class(cls: type, *, depth: int, seen: set[int]) -> Any:
    name = f"{cls.__module__}.{cls.__qualname__}"
    if cls.__module__ == "builtins" or _is_library(cls.__module__):
        return {"library_class": name, "version": _module_version(cls.__module__)}
    if id(cls) in seen or depth > MAX_DEPTH:
        return {"class_ref": name}
    if cls in _CLASS_MEMO:
        return _CLASS_MEMO[cls]
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        _CLASS_MEMO[cls] = {"class": name, "code": ast.dump(ast.parse(source), include_attributes=False)}
        return _CLASS_MEMO[cls]
    except (OSError, TypeError, SyntaxError):
        methods = {k: _function(v, depth=depth + 1, seen=seen | {id(cls)}) for k, v in sorted(vars(cls).items()) if isinstance(v, types.FunctionType)}
        return {"class": name, "methods": methods}


# ----------------------------------------------------------------------------- values
def describe_value(value: Any) -> Any:
    """A JSON description of a plain value (what closures, defaults and globals hold)."""
    return _value(value, depth=0, seen=set())


def _value(value: Any, *, depth: int, seen: set[int], as_state: bool = False) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return {"int": str(value)} if abs(value) > 2**53 else value
    if isinstance(value, float):
        return {"float": repr(value)} if not math.isfinite(value) else value
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_value(v, depth=depth, seen=seen) for v in value]}
    if isinstance(value, (set, frozenset)):
        items = [_value(v, depth=depth, seen=seen) for v in value]
        return {type(value).__name__: sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(value, dict):
        return {"dict": sorted(([_value(k, depth=depth, seen=seen), _value(v, depth=depth, seen=seen)] for k, v in value.items()), key=lambda kv: json.dumps(kv[0], sort_keys=True))}
    if isinstance(value, PurePath):
        return {"path": str(value)}
    if isinstance(value, enum.Enum):
        return {"enum": f"{type(value).__module__}.{type(value).__qualname__}.{value.name}"}
    if isinstance(value, re.Pattern):
        return {"regex": value.pattern if isinstance(value.pattern, str) else repr(value.pattern), "flags": int(value.flags)}
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__, "version": _module_version(value.__name__)}
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial, types.BuiltinFunctionType, type)):
        return _callable(value, depth=depth, seen=seen)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.ndarray):
            return {"ndarray": str(value.dtype), "shape": list(value.shape), "sha256": hashlib.sha256(numpy.ascontiguousarray(value).tobytes()).hexdigest()}
        if isinstance(value, numpy.generic):
            return {"numpy": str(value.dtype), "value": repr(value.item())}
    if id(value) in seen:
        raise Unfingerprintable(f"a value refers to itself ({type(value).__name__})")
    seen = seen | {id(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and hasattr(type(value), "model_fields"):  # a pydantic model
        return {"model": f"{type(value).__module__}.{type(value).__qualname__}", "fields": _value(model_dump(mode="python"), depth=depth, seen=seen)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _value(getattr(value, f.name), depth=depth, seen=seen) for f in dataclasses.fields(value)}
        return {"dataclass": f"{type(value).__module__}.{type(value).__qualname__}", "fields": fields}
    if callable(value) and not as_state:
        return _callable(value, depth=depth, seen=seen)
    text = repr(value)
    if type(value).__repr__ is not object.__repr__ and " at 0x" not in text:
        return {"repr": f"{type(value).__module__}.{type(value).__qualname__}", "text": text}
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict) and as_state:
        return {"object": f"{type(value).__module__}.{type(value).__qualname__}", "state": _value(state, depth=depth, seen=seen)}
    raise Unfingerprintable(f"it depends on a {type(value).__name__} object with no stable value ({text[:80]})")


# ----------------------------------------------------------------------------- libraries
@functools.lru_cache(maxsize=1024)
def _is_library(module: str | None) -> bool:
    if not module:
        return False
    if module in sys.builtin_module_names or module == "builtins":
        return True
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    if not path:
        return False
    resolved = str(Path(path).resolve())
    return any(resolved.startswith(root + "/") for root in _LIBRARY_ROOTS)


@functools.cache
def _module_version(module: str) -> str | None:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top == "builtins":
        return _python()
    try:
        return metadata.version(top)
    except (metadata.PackageNotFoundError, ValueError):
        return None  # user code, or a module with no distribution of its own name


def _python() -> str:
    return "{}.{}".format(*sys.version_info[:2])
