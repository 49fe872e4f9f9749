"""The transcript of a case: every node's prompt and reply, as the viewer shows them.

A record in ``results.jsonl`` holds what a protocol scores; the transcript adds what each node was
asked (text parts, images by content hash, case files by path, other nodes' outputs by name) and
what it answered (text, chosen option, parsed judgement, image hash) or why it failed (kind,
message, the raw reply). It is built from the graph and the outcomes after the case finished, so
it never enters a cache key, and it reads the same whether a node was computed or cached.
"""

from __future__ import annotations

import json
from typing import Any

from umni.graph.graph import Graph, ImageFile, Ref
from umni.graph.outcomes import Outcome
from umni.store.runfolder import TranscriptEntry, TranscriptPart, TranscriptReply

#: Longest text kept per prompt part or reply; the rest is cut and says so.
MAX_TEXT = 20_000
#: Longest JSON rendering kept for a compute or tool value (embeddings are long and unreadable).
MAX_VALUE = 2_000


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _part(item: object, outcomes: dict[str, Outcome]) -> TranscriptPart:
    if isinstance(item, str):
        return {"text": _clip(item)}
    if isinstance(item, ImageFile):
        return {"file": str(item.path)}
    if isinstance(item, Ref):
        outcome = outcomes.get(item.node)
        part: TranscriptPart = {"ref": item.node}
        if outcome is not None and outcome.image is not None:
            part["image"] = outcome.image.sha256
        elif outcome is not None and outcome.ok:
            part["text"] = _clip(_value_text(outcome.value))
        return part
    return {"text": _clip(repr(item))}


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return _clip(json.dumps(value, ensure_ascii=False, default=str), MAX_VALUE)
    except (TypeError, ValueError):
        return _clip(repr(value), MAX_VALUE)


def _reply(outcome: Outcome) -> TranscriptReply:
    out = outcome.output or {}
    reply: TranscriptReply = {}
    if "image" in out and outcome.image is not None:
        reply["image"] = outcome.image.sha256
    if "text" in out and out["text"] is not None:
        reply["text"] = _clip(str(out["text"]))
    if "option" in out:
        reply["option"] = _clip(str(out["option"]), MAX_VALUE)
    if "value" in out:
        reply["value"] = _value_text(out["value"])
    if "parse_attempts" in out:
        reply["parse_attempts"] = out["parse_attempts"]
    return reply


def case_transcript(graph: Graph, outcomes: dict[str, Outcome]) -> list[TranscriptEntry]:
    """One entry per node, in the graph's order: kind, role, prompt parts, reply or failure."""
    entries = []
    for nid, node in graph.nodes.items():
        outcome = outcomes.get(nid)
        entry: TranscriptEntry = {"node": nid, "kind": node.kind, "role": node.role, "status": "not run"}
        if node.prompt:
            entry["prompt"] = [_part(p, outcomes) for p in node.prompt]
        if node.images:
            entry["images"] = [_part(p, outcomes) for p in node.images]
        if node.inputs:
            entry["inputs"] = sorted(r.node for r in node.inputs.values())
        if "options" in node.params:
            entry["options"] = [str(o) for o in node.params["options"]]
        if outcome is not None:
            entry["status"] = "done" if outcome.ok else outcome.status
            if outcome.ok:
                entry["reply"] = _reply(outcome)
            if outcome.failure is not None:
                entry["failure"] = outcome.failure.to_json()
        entries.append(entry)
    return entries
