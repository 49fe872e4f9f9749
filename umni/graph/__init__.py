"""Evaluation graphs as data: nodes, the Refs that wire them, the registry of node kinds a graph may
hold, the node parameters the engine reads (typed per kind), and the outcomes a run records per
node. A graph is built, validated and hashed here; running it is the engine's job.
"""

from __future__ import annotations

from umni.graph.graph import Graph
from umni.graph.nodes import DEFAULT_ROLE, ImageFile, Node, NodeKind, OutputType, PromptPart, Ref
from umni.graph.outcomes import (
    FAILURE_KINDS,
    CaseResult,
    Failure,
    Outcome,
    Status,
    failure_kind,
    first_failure,
    ok_output,
    record_status,
)
from umni.graph.params import AnswerParams, ComputeParams, DetectParams, JudgeParams, NodeParams, TextParams
from umni.graph.registry import NodeShape, Slot, find_kind, known_kinds, register

__all__ = [
    "AnswerParams",
    "ComputeParams",
    "DetectParams",
    "JudgeParams",
    "NodeParams",
    "TextParams",
    "CaseResult",
    "DEFAULT_ROLE",
    "Failure",
    "failure_kind",
    "FAILURE_KINDS",
    "find_kind",
    "first_failure",
    "Graph",
    "ImageFile",
    "known_kinds",
    "Node",
    "NodeKind",
    "NodeShape",
    "ok_output",
    "Outcome",
    "OutputType",
    "PromptPart",
    "record_status",
    "Ref",
    "register",
    "Slot",
    "Status",
]
