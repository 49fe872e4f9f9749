"""The contract a benchmark protocol implements (`Protocol`: cases, one graph per case, records,
typed scores (`Scores`), tables, views) and the case-file reading every protocol shares, with
error messages that name the file, line and field. The protocols themselves live in `umni_graphs`
above umni.
"""

from __future__ import annotations

from umni.protocols.caseio import (
    case_image_problems,
    confined_path,
    field_errors,
    jsonl_lines,
    raise_if_any,
    read_json,
    read_json_records,
    read_jsonl,
    read_results_jsonl,
    validate_records,
    validation_errors,
)
from umni.protocols.protocol import (
    CaseSet,
    NoOptions,
    Note,
    Protocol,
    Skipped,
    View,
    get_protocol,
    known_protocols,
    node_status,
)
from umni.protocols.scores import Number, Scores, scores_json

__all__ = [
    "case_image_problems",
    "CaseSet",
    "confined_path",
    "field_errors",
    "get_protocol",
    "jsonl_lines",
    "known_protocols",
    "node_status",
    "Number",
    "NoOptions",
    "Note",
    "Protocol",
    "raise_if_any",
    "read_json",
    "read_json_records",
    "read_jsonl",
    "read_results_jsonl",
    "Scores",
    "scores_json",
    "Skipped",
    "validate_records",
    "validation_errors",
    "View",
]
