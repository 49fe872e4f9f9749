"""Cache keys: the same key means the same work, so its stored result can stand in for a call.

A key hashes what determines a node's output and nothing else: the node kind and version, the
identity of the backend bound to its role (provider, model, revision, output-changing parameters;
for an HTTP backend the full base URL, for local weights a hash of their bytes), the node's
parameters minus operational ones (names starting with "_"), the code of its compute function or
judge parser (umni.codeid: source, closure values, defaults, the globals it reads), the fingerprints
of its inputs, each tagged with its type (text, case image, another node's output), the run seed
and the repeat index. Left out on purpose: the node's id and case (identical work in two cases or
two runs is done once), a `when` gate and the inputs only the gate reads (they decide whether the
node runs, not what it computes), and a judge's wording (downstream keys see its parsed value).
"""

from __future__ import annotations

import hashlib
from typing import Any

from umni.backends.contract import Backend
from umni.graph.graph import Node
from umni.store.hashing import canonical_json

#: Bump when the meaning of stored outputs changes, to retire every old cache entry at once.
KEY_SCHEMA = 2


def identity_json(backend: Backend | None, role: str | None = None) -> str:
    """The backend's identity as it enters the key of a node of `role` (`Backend.identity_for`); a
    runner makes it once per backend and role, not per node."""
    return canonical_json(backend.identity_for(role) if backend is not None else None)


def node_key(node: Node, backend: Backend | None, inputs: dict[str, Any], seed: int, *, identity: str | None = None) -> str:
    """The sha256 of the canonical JSON of the fields above. `identity` is `identity_json(backend,
    node.role)` when the caller already has it. "backend" sorts first among the fields, so its text is put in
    front of the rest's instead of being encoded again: the bytes hashed are the same either way."""
    params = {k: v for k, v in node.params.items() if not k.startswith("_")}
    rest = canonical_json(
        {
            "schema": KEY_SCHEMA,
            "kind": node.kind,
            "version": node.version,
            "params": params,
            "code": node.code_identity(),
            "inputs": inputs,
            "seed": seed,
            "repeat": node.repeat,
        }
    )
    text = '{"backend":' + (identity_json(backend, node.role) if identity is None else identity) + "," + rest[1:]
    return hashlib.sha256(text.encode()).hexdigest()
