"""Running graphs: the runner that starts each node as soon as its inputs are ready, the cache keys
that say what a node's result depends on, the node kinds' execution (`kinds`), and the per-case
transcript written beside each result.
"""

from __future__ import annotations

from umni.engine.keys import KEY_SCHEMA, identity_json, node_key
from umni.engine.kinds import Kind, KindContext, RunStats, Services, find_kind, get_kind, known_kinds, register
from umni.engine.runner import CaseJob, LanePool, Runner
from umni.engine.transcript import case_transcript

__all__ = [
    "case_transcript",
    "CaseJob",
    "find_kind",
    "get_kind",
    "identity_json",
    "KEY_SCHEMA",
    "Kind",
    "KindContext",
    "known_kinds",
    "LanePool",
    "node_key",
    "register",
    "Runner",
    "RunStats",
    "Services",
]
