"""Protocols: a case type, a graph per case, and the scoring that reproduces the official tables.

A protocol is found by name through the ``umni.protocols`` entry-point group. It loads and validates
a case file, builds one graph per case, turns each finished case into a record (one line of
``results.jsonl``), and aggregates records into the paper's table layout (``summary.json`` scores).

Typed: ``Protocol[CaseT, OptionsT, RecordT, ScoresT]`` names the case model, the options model, the
record type (a TypedDict: what results.jsonl holds, checked by mypy, plain JSON at run time) and the
scores model (a `Scores` subclass: what `summarize` returns, summary.json's ``scores``). Every method
that takes options takes them as `OptionsT`: `parse_options` makes that model from ``--option``
pairs, and `adapt`, `load`, `build`, `record` and `summarize` receive it as it is. `build` keeps the
Refs it made as typed handles on the graph (`Graph.with_handles`); the runner passes them back with
the outcomes (`CaseResult.handles`), so `record` reads ``outcomes[handles.answer]`` and never agrees
with `build` on node id strings. Protocols written against ``Protocol[CaseT]`` with string ids and
dict scores keep working: the later parameters default to `BaseModel`, a plain dict and a plain
dict (`scores_json` writes a dict as it is).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, cast

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypeVar

from umni.graph.graph import Graph
from umni.graph.outcomes import Outcome
from umni.protocols.headline import HeadlineParts
from umni.protocols.scores import Scores
from umni.util.entrypoints import entry_points, load_entry_point
from umni.util.errors import ConfigError

CaseT = TypeVar("CaseT")
OptionsT = TypeVar("OptionsT", bound=BaseModel, default=BaseModel)
RecordT = TypeVar("RecordT", default=dict[str, Any])
#: What `summarize` returns: a `Scores` model (or, for older plugins, a plain dict).
ScoresT = TypeVar("ScoresT", bound=Scores | dict[str, Any], default=dict[str, Any])


@dataclass
class Skipped:
    """A case left out of the run, with the reason (missing images, say); counted in the summary."""

    case_id: str
    reason: str


@dataclass
class Note:
    """Something the loader repaired or wants the user to know (a quirk of the official file)."""

    record: str
    field: str
    message: str


@dataclass
class CaseSet(Generic[CaseT]):
    path: Path
    #: a list, or a `CompactCases` (JSON Lines files) that makes each case when it is read
    cases: Sequence[CaseT]
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class View:
    """One panel of a case in the HTML report: a title, maybe an image, and rows of facts."""

    title: str
    image: str | None = None
    rows: list[tuple[str, str]] = field(default_factory=list)
    verdict: bool | None = None


@dataclass(frozen=True)
class RoleTemplate:
    """The fixed texts a protocol sends one role (a judge's rubric, its system message, the answer
    format), the official template they follow, and the request settings the protocol's nodes ask
    of that role: what a run's provenance says of the role beyond its backend (`Protocol.templates`).
    The texts are hashed, not stored: the hash changes whenever the wording does."""

    texts: tuple[str, ...]
    #: the official template these texts follow (paper, repository, file), or how they depart from it
    follows: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    def digest(self) -> str:
        """sha256 of the texts in order (each followed by a separator, so no two splits collide)."""
        hashed = hashlib.sha256()
        for text in self.texts:
            hashed.update(text.encode("utf-8") + b"\x1e")
        return hashed.hexdigest()


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Protocol(ABC, Generic[CaseT, OptionsT, RecordT, ScoresT]):
    """Base class for protocols. Subclasses fill in the abstract methods."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: Roles the graph uses with default options (shown by `umni protocols`).
    roles: ClassVar[tuple[str, ...]]
    #: The options model, the class `OptionsT` names (a class variable cannot name a type
    #: variable, so `parse_options` is the one place that states the two are the same).
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: The numbers the protocol's paper reports, as data (`umni.protocols.paper.PaperNumbers`):
    #: ``leaderboard --compare-paper`` sets a labelled run beside its paper row. None: none stored.
    paper_numbers: ClassVar[Path | None] = None
    #: The version of the protocol's scoring code: raised when a change can move a score, so a
    #: number carries the rules it was made by (summary.json's ``provenance``). None: not stated.
    scoring_version: ClassVar[str | None] = None

    @abstractmethod
    def bundled_cases(self) -> Path: ...

    @abstractmethod
    def load(self, path: Path, options: OptionsT) -> CaseSet[CaseT]:
        """Load and validate a case file or folder; raise InputError(s) naming file, record, field."""

    @abstractmethod
    def case_id(self, case: CaseT) -> str: ...

    @abstractmethod
    def build(self, case: CaseT, options: OptionsT) -> Graph[Any]:
        """The case's graph, with its typed handles attached (`Graph.with_handles`)."""

    @abstractmethod
    def record(self, case: CaseT, outcomes: dict[str, Outcome], options: OptionsT) -> RecordT:
        """The results.jsonl line of a finished case: every answer, its correctness, node statuses.

        From the runner, `outcomes` is a `CaseResult`: indexable by the graph's handles too."""

    @abstractmethod
    def summarize(self, records: list[RecordT], options: OptionsT) -> ScoresT:
        """Scores laid out like the paper's main table (failures counted apart, never as 0): the
        protocol's `Scores` model, written to summary.json by `scores_json`."""

    def why_no_overall(self, scores: ScoresT, options: OptionsT) -> str | None:
        """Why the headline (``overall``) of these scores is empty, in a few words a user can act
        on (which categories or metrics have nothing scored, and whether for want of cases or
        because theirs failed); None when it is there or the protocol cannot tell. The run adds
        what it knows itself (the cases ``--limit`` or ``--shard`` left out, no case run, every
        node failed), and `umni run` prints the result on its ``overall:`` line."""
        return None

    def summarize_resample(self, records: list[RecordT], options: OptionsT) -> ScoresT | dict[str, Any]:
        """The scores of one bootstrap resample (cases drawn with replacement), hundreds of which
        make a run's intervals. `summarize` by default; a protocol whose summary holds a set
        statistic too costly to recompute that often (GIR-Bench's Fréchet distance) leaves it out
        here, with every figure that averages it in, and those cells get no interval."""
        return self.summarize(records, options)

    def stratum(self, record: RecordT, options: OptionsT) -> str | None:
        """The group a bootstrap resample draws this case within; None (the default): one group.
        A headline that needs every category (WISE's Overall weights all six) has a value in a
        resample only if the resample holds every category, and a benchmark fixes how many cases
        each category has: so the strata are the categories the headline averages over, and each
        resample draws each category's cases from that category alone, as many as the run has."""
        return None

    def headline_parts(self, records: Sequence[RecordT], options: OptionsT) -> HeadlineParts | str | None:
        """The headline of `records` (``scores.overall``) as a weighted sum of component means, with
        each record's part (`HeadlineParts`): what paired tests, power estimates and the headline's
        bootstrap read. A string says why there is none (a statistic of the whole set of outputs,
        as GIR-Bench's Fréchet distance: no case has a share of it). None (the default): not stated;
        each case's headline scored alone is then averaged with equal weight, which is used only
        where it gives the headline `summarize` gives."""
        return None

    def unresampled(self, scores: Mapping[str, Any], options: OptionsT) -> dict[str, str]:
        """The flattened score keys (``overall``, ``edit/overall``) that `summarize_resample` leaves
        out of every resample, each with why: the reason a table gives where its interval would be.
        `scores` is summary.json's ``scores``. Default: none."""
        return {}

    def tallies(self, record: RecordT, options: OptionsT) -> dict[str, int] | None:
        """The case's whole-number counts, for a protocol whose every score is a function of these
        counts summed over cases (`score_tallies`; its `summarize` should be that function of the
        sums, so the two cannot disagree). The bootstrap then scores a resample from one matrix
        product of draw counts and per-case tallies instead of re-reading its records: at 20,000
        cases, milliseconds where re-summarizing 300 resamples took minutes. None (the default):
        resamples are scored with `summarize_resample`."""
        return None

    def score_tallies(self, totals: Mapping[str, int], options: OptionsT) -> ScoresT | dict[str, Any]:
        """The scores of cases whose `tallies` sum to `totals` (a key absent is 0)."""
        raise NotImplementedError(f"protocol '{self.name}' gives tallies but cannot score them")

    def handles(self, case: CaseT, outcomes: Mapping[str, Outcome], options: OptionsT) -> Any:
        """The typed handles of the case's graph: those the runner passed on with `outcomes`, or,
        for outcomes given as a plain mapping (a test, an older caller), those of a fresh build."""
        handles = getattr(outcomes, "handles", None)
        return handles if handles is not None else self.build(case, options).handles

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        """Paper-style tables for reports: (title, header, rows), from summary.json as written (its
        ``scores`` the JSON of `ScoresT`; reports read it back from disk, so it stays a dict here)."""
        return []

    def views(self, record: RecordT) -> list[View]:
        """How a case record appears in the HTML report (the record as results.jsonl holds it)."""
        return []

    def case_score(self, record: RecordT) -> tuple[float, float] | None:
        """The case's own figure as (points, out of), e.g. 7 of UmniBench's 9 questions, for the
        viewer's score column. The default counts the report panels judged right among those with a
        verdict; None when no panel has one. A protocol with a finer per-case score overrides it."""
        verdicts = [view.verdict for view in self.views(record) if view.verdict is not None]
        return (float(sum(verdicts)), float(len(verdicts))) if verdicts else None

    def node_verdicts(self, record: RecordT) -> dict[str, bool | None]:
        """Whether each answering node of the case was right (node id -> verdict; None when not
        judged), so the viewer's transcript can show a wrong answer as wrong. Default: none known."""
        return {}

    def case_schema(self) -> dict[str, Any]:
        """JSON Schema of one case record as it appears in the protocol's case files."""
        case_type = type(self).__orig_bases__[0].__args__[0]  # type: ignore[attr-defined]
        return case_type.model_json_schema()

    def adapt(self, options: OptionsT, bound_roles: set[str]) -> OptionsT:
        """Options adjusted to the roles the run binds (e.g. skip tasks whose tool role is unbound).

        Called once before any case is built; the default changes nothing.
        """
        return options

    def preflight(self, cases: Sequence[CaseT], options: OptionsT) -> list[str]:
        """What the run's cases need beyond their backends that is not on this machine (local
        weights of a scorer, say), one line each naming the option to use instead. Called before
        any node runs; a problem stops the run at once instead of failing every case. Default: none.
        Must not call the network."""
        return []

    def templates(self, options: OptionsT) -> dict[str, RoleTemplate]:
        """Per role, the fixed prompt texts the protocol sends it under `options` and the official
        template they follow, for the run's provenance (a judge's template hash). Default: none."""
        return {}

    def deviations_in_effect(self, scores: Mapping[str, Any], options: OptionsT) -> list[str]:
        """The ids of the deviations from the official code that apply to a run with these scores
        (summary.json's ``scores``). Default: the ``id`` of each entry of ``scores["deviations"]``,
        where every bundled protocol lists them."""
        listed = scores.get("deviations")
        if not isinstance(listed, list):
            return []
        return [str(entry["id"]) for entry in listed if isinstance(entry, dict) and "id" in entry]

    def judgements(self, record: RecordT) -> dict[str, float | None]:
        """Per-case numbers that judge agreement compares (metric -> value; None when failed)."""
        return {}

    def rejudged(self, record: RecordT, judgements: Mapping[str, float], options: OptionsT) -> RecordT | None:
        """The record as it would read had its judge given `judgements` (keys and scale of
        `judgements`; a metric left out keeps its value) instead of its own marks, so that
        `headline_parts` of such records is the headline a judge calibration estimates (marks
        mapped onto another judge's, which may fall between whole marks). None (the default):
        the protocol cannot say, and no calibrated headline is made for it."""
        return None

    def parse_options(self, pairs: dict[str, str]) -> OptionsT:
        """The options model from ``--option key=value`` pairs; ConfigError naming the bad field."""
        try:
            return cast(OptionsT, self.Options(**pairs))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            fields = ", ".join(self.Options.model_fields) or "none"
            raise ConfigError(f"bad --option for protocol '{self.name}': {problems} (options: {fields})") from None


def known_protocols() -> list[str]:
    return sorted(ep.name for ep in entry_points(group="umni.protocols"))


def get_protocol(name: str) -> Protocol[Any, Any, Any, Any]:
    found = {ep.name: ep for ep in entry_points(group="umni.protocols")}
    if name not in found:
        raise ConfigError(f"unknown protocol '{name}'; known protocols: {', '.join(sorted(found))}")
    obj = load_entry_point(found[name])
    return obj() if isinstance(obj, type) else obj


def gives_tallies(protocol: Protocol[Any, Any, Any, Any]) -> bool:
    """Whether the protocol overrides `Protocol.tallies` (it may still give None for a record)."""
    return type(protocol).tallies is not Protocol.tallies


def sum_tallies(protocol: Protocol[Any, Any, Any, Any], records: Iterable[Any], options: Any) -> dict[str, int] | None:
    """The records' tallies summed in one pass, or None when the protocol scores from records
    (`records` is then not read at all) or gives a record no tallies."""
    if not gives_tallies(protocol):
        return None
    totals: dict[str, int] = {}
    for record in records:
        tallies = protocol.tallies(record, options)
        if tallies is None:
            return None
        for key, count in tallies.items():
            totals[key] = totals.get(key, 0) + count
    return totals


def node_status(outcomes: Mapping[str, Outcome]) -> dict[str, dict[str, Any]]:
    """Per-node status (and failure) for a case record; outputs are summarised by the protocol.

    Computed and cached results are both ``done``: where a result came from is the run's business
    (summary counts, event log), and a record must read the same whether or not its run resumed.
    """
    result = {}
    for nid, outcome in sorted(outcomes.items()):
        entry: dict[str, Any] = {"status": "done" if outcome.ok else outcome.status}
        if outcome.failure is not None:
            entry["failure"] = outcome.failure.to_json()
        if outcome.ok and outcome.output and outcome.output.get("notes"):
            entry["notes"] = list(outcome.output["notes"])  # what the backend could not honour
        result[nid] = entry
    return result
