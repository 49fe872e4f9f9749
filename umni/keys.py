"""Cache keys: the same key means the same work, so its stored result can stand in for a call.

A key hashes what determines a node's output and nothing else: the node kind and version, the
identity of the backend bound to its role (provider, model, revision, output-changing parameters),
the node's parameters minus operational ones (names starting with "_"), the fingerprints of its
inputs (image hashes, text), the run seed and the repeat index. The node's id and the case it
belongs to are left out on purpose: identical work in two cases or two runs is done once.
"""

from __future__ import annotations

from typing import Any

from .artifacts import fingerprint
from .backends import Backend
from .graph import Node

#: Bump when the meaning of stored outputs changes, to retire every old cache entry at once.
KEY_SCHEMA = 1


def node_key(node: Node, backend: Backend | None, inputs: dict[str, Any], seed: int) -> str:
    params = {k: v for k, v in node.params.items() if not k.startswith("_")}
    return fingerprint(
        {
            "schema": KEY_SCHEMA,
            "kind": node.kind,
            "version": node.version,
            "backend": backend.identity() if backend is not None else None,
            "params": params,
            "inputs": inputs,
            "seed": seed,
            "repeat": node.repeat,
        }
    )
