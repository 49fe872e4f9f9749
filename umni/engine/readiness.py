"""Before a node runs: whether its inputs let it (blocked, skipped, pending), whether its `when`
condition holds, and its cache key. The runner asks these of every ready node, in waves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from umni.backends.contract import Backend
from umni.engine.failures import failed
from umni.engine.keys import identity_json, node_key
from umni.engine.kinds.inputs import InputReader
from umni.graph.graph import Node
from umni.graph.outcomes import Outcome, Status

__all__ = ["blocked_by", "gate", "node_key_with"]


def node_key_with(
    node: Node, backend: Backend | None, identities: dict[tuple[int, str | None], str], inputs: Callable[[], dict[str, Any]],
    seed: int,
) -> str:
    """The node's cache key; raises one of KEY_FAULTS when it cannot be made. `identities` holds the
    identity text of each backend and role already met."""
    identity = identities.get((id(backend), node.role))
    if identity is None:
        identity = identities[(id(backend), node.role)] = identity_json(backend, node.role)
    return node_key(node, backend, inputs(), seed, identity=identity)


def gate(inputs: InputReader, outcomes: Mapping[str, Outcome], node: Node) -> Outcome | None:
    """Evaluate the node's `when` condition: None to go on, else its outcome (skipped, or failed
    when the condition itself raised: a bug in the graph, recorded)."""
    assert node.when is not None
    try:
        go = bool(node.when(**inputs.values(outcomes, node.inputs), **inputs.values(outcomes, node.gate)))
    except Exception as exc:
        return failed(node.id, "internal", f"condition failed: {exc!r}")
    return None if go else Outcome(node.id, "skipped")


def blocked_by(outcomes: Mapping[str, Outcome], node: Node) -> Status | None:
    """The status a node takes from its inputs: "blocked" when a required input failed (or was
    blocked), "skipped" or "pending" when one was skipped or is left for a later run."""
    for ref in node.refs():
        if ref.optional:
            continue
        status = outcomes[ref.node].status
        if status in ("failed", "blocked"):
            return "blocked"
        if status == "skipped":
            return "skipped"
        if status == "pending":
            return "pending"
    return None
