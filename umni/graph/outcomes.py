"""What happened to each node: a result, or a typed failure that is counted, never scored.

Statuses: ``computed`` (called a backend or ran code now), ``cached`` (taken from the cache),
``failed`` (gave up; `Failure.kind` says why), ``skipped`` (its `when` condition was false, or an
input it needs was skipped), ``blocked`` (an input it needs failed), ``pending`` (its role is not
in this run's ``--phase`` and it is not cached, or an input it needs is pending: a later run does it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from umni.store.imageref import ImageRef
from umni.store.runfolder import FailureRecord
from umni.util.secrets import scrub

Status = Literal["computed", "cached", "failed", "skipped", "blocked", "pending"]

#: Failure kinds, each counted on its own line of a summary.
FAILURE_KINDS = ("backend", "parse", "invalid", "refusal", "degenerate", "input", "internal")


@dataclass
class Failure:
    kind: str
    message: str
    attempts: int = 1
    raw: str | None = None

    def __post_init__(self) -> None:
        # what a failure says is persisted and compared across runs: no secrets, no object addresses
        self.message = scrub(self.message)
        if self.raw is not None:
            self.raw = scrub(self.raw)

    def to_json(self) -> FailureRecord:
        """The failure as a record holds it (`umni.store.runfolder.FailureRecord`), its raw reply cut to 2,000 characters."""
        data: FailureRecord = {"kind": self.kind, "message": self.message, "attempts": self.attempts}
        if self.raw is not None:
            data["raw"] = self.raw[:2000]
        return data


@dataclass
class Outcome:
    node: str
    status: Status
    output: dict[str, Any] | None = None
    failure: Failure | None = None
    fingerprint: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("computed", "cached")

    @property
    def image(self) -> ImageRef | None:
        if self.ok and self.output and "image" in self.output:
            return ImageRef(**self.output["image"])
        return None

    @property
    def value(self) -> Any:
        """The node's main value: a parsed judgement, a tool or compute result, an answer or text."""
        if not self.ok or self.output is None:
            return None
        if "image" in self.output:
            return self.image
        for key in ("value", "index", "text"):
            if key in self.output:
                return self.output[key]
        return self.output

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status}
        if self.output is not None:
            data["output"] = self.output
        if self.failure is not None:
            data["failure"] = self.failure.to_json()
        return data


H = TypeVar("H")


class CaseResult(dict[str, Outcome], Generic[H]):
    """A finished case's outcomes by node id, with the typed handles its graph was built with
    (`Graph.handles`): a protocol's `record` reads ``result[handles.image]`` instead of agreeing
    on node id strings with `build`. Still a plain mapping of node id to `Outcome`."""

    def __init__(self, outcomes: Mapping[str, Outcome], handles: H) -> None:
        super().__init__(outcomes)
        self.handles = handles

    def __getitem__(self, key: Any) -> Outcome:
        return super().__getitem__(getattr(key, "node", key))

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(getattr(key, "node", key), default)

    def __contains__(self, key: object) -> bool:
        return super().__contains__(getattr(key, "node", key))


# Helpers for records: what a protocol writes about a node's outcome, the same way everywhere.


def record_status(outcome: Outcome) -> str:
    """"done" for a result (computed now or cached: a record reads the same after a resume),
    otherwise the status (failed, skipped, blocked, pending)."""
    return "done" if outcome.ok else outcome.status


def ok_output(outcome: Outcome) -> dict[str, Any] | None:
    """The node's output when it has one, else None."""
    return outcome.output if outcome.ok and outcome.output else None


def failure_kind(outcome: Outcome) -> str | None:
    """The failure kind (backend, parse, ...) of a failed node, else None."""
    return outcome.failure.kind if outcome.failure is not None else None


def first_failure(outcomes: Mapping[str, Outcome], nodes: Iterable[Any]) -> tuple[str, Failure] | None:
    """The first of `nodes` (Refs or ids; absent ones are passed over) that failed, with its failure:
    the node a record names when a score could not be made."""
    for item in nodes:
        nid = getattr(item, "node", item)
        outcome = outcomes.get(nid)
        if outcome is not None and outcome.failure is not None:
            return nid, outcome.failure
    return None
