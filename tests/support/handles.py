"""Protocol handle tests rename every node of a graph and check the record comes out the same:
a record that reads outcomes by handle, never by a node id it rebuilt, passes."""

from __future__ import annotations

import dataclasses
from typing import Any

from umni.graph.graph import Ref


def renamed(value: Any, names: dict[str, str]) -> Any:
    """`value` (handles: dataclasses, dicts, tuples and lists of Refs) with every Ref's node renamed."""
    if isinstance(value, Ref):
        return dataclasses.replace(value, node=names[value.node])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: renamed(getattr(value, f.name), names) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {k: renamed(v, names) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(renamed(v, names) for v in value)
    return value
