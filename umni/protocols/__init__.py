"""The contract a benchmark protocol implements (`Protocol`: cases, one graph per case, records,
typed scores (`Scores`), tables, views) and the case-file reading every protocol shares, with
error messages that name the file, line and field. The protocols themselves live in `umni_graphs`
above umni.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from umni.protocols.caseio import (
        CompactCases,
        case_image_problems,
        confined_path,
        field_errors,
        raise_if_any,
        read_json_records,
        read_jsonl,
        validate_records,
        validation_errors,
    )
    from umni.protocols.headline import HeadlineParts, Terms
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
    "CompactCases",
    "confined_path",
    "field_errors",
    "get_protocol",
    "HeadlineParts",
    "known_protocols",
    "node_status",
    "Number",
    "NoOptions",
    "Note",
    "Protocol",
    "raise_if_any",
    "read_json_records",
    "read_jsonl",
    "Scores",
    "scores_json",
    "Skipped",
    "Terms",
    "validate_records",
    "validation_errors",
    "View",
]

#: Which submodule each name lives in. The names are looked up on first use (PEP 562), so a reader
#: of case files (`umni.protocols.caseio`) does not import the protocol contract, the graph and the
#: backends with it. A run's results.jsonl is read through `umni.store.runfolder`.
_HOME = {
    **dict.fromkeys(["CompactCases", "case_image_problems", "confined_path", "field_errors", "raise_if_any",
                     "read_json_records", "read_jsonl", "validate_records", "validation_errors"], "caseio"),
    **dict.fromkeys(["CaseSet", "NoOptions", "Note", "Protocol", "Skipped", "View", "get_protocol", "known_protocols",
                     "node_status"], "protocol"),
    **dict.fromkeys(["Number", "Scores", "scores_json"], "scores"),
    **dict.fromkeys(["HeadlineParts", "Terms"], "headline"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'umni.protocols' has no attribute {name!r}")
    return getattr(import_module(f"umni.protocols.{home}"), name)
