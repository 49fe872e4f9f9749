"""A run folder: the files one run writes, by name, and the typed contents of its JSON files.

    run.json            the command that made the folder (`Manifest`); a resume must match it
    run.db              finished case records (`umni.store.cache.RunStore`)
    events.jsonl        what happened, one event a line (`umni.util.events`)
    results.jsonl       one record a case (`CaseRecord` plus the protocol's own fields)
    summary.json        counts, failures, calls, usage, cost and the protocol's scores (`Summary`)
    tables.json         the run's leaderboard tables with bootstrap intervals (`RunTables`)
    report.html         the HTML report, its images in images/ (thumbnails in thumbs/)
    cases.index.json    the viewer's case index, and cases.search.txt its search text
    INCOMPLETE          present while the outputs are being written (`umni.store.completion`)
    .lock               held by the process writing the folder

Every reader and writer of a run folder finds its files through `RunFolder` and reads or writes
the JSON ones through the models here, so a file's name and shape are stated once. The models
write the bytes umni has always written: keys in the same order, numbers as they were computed
(an int stays an int), the same indentation; a section only some runs have is absent, not null
(`JsonModel`). Open parts stay open where the data is another component's own: a backend's
identity, a protocol's options, the user's configuration.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, NotRequired, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from umni.store.atomic import atomic_write_lines, atomic_write_text
from umni.store.hashing import canonical_json
from umni.store.runfiles import (  # noqa: F401 - the file names, still importable from here
    CASE_INDEX,
    CASE_SEARCH,
    EVENTS_JSONL,
    IMAGES,
    INCOMPLETE,
    LOCK,
    OWN_FILES,
    REPORT_HTML,
    RESULTS_JSONL,
    RUN_DB,
    RUN_JSON,
    SUMMARY_JSON,
    TABLES_JSON,
    TABLES_VERSION,
    THUMBS,
)
from umni.util.errors import InputError
from umni.util.jsonfiles import each_jsonl_line, read_json
from umni.util.jsonmodel import JsonModel, Number

M = TypeVar("M", bound=BaseModel)
#: Per role: calls, input/output tokens and images in/out (None: the server did not say).
Usage = dict[str, dict[str, int | None]]


# -------------------------------------------------------------------------------- results.jsonl
class FailureRecord(TypedDict):
    """Why a node failed, as a record holds it (`umni.graph.outcomes.Failure.to_json`)."""

    kind: str
    message: str
    attempts: int
    raw: NotRequired[str]


class NodeRecord(TypedDict):
    """A node of a case record: ``done`` (computed or cached), or failed, blocked, skipped, pending."""

    status: str
    failure: NotRequired[FailureRecord]
    #: inputs the backend could not honour (a context image a text-only model ignored, say)
    notes: NotRequired[list[str]]


class TranscriptPart(TypedDict, total=False):
    """One part of what a node was asked (`umni.engine.transcript`): text, a case file by path, or
    another node's output by name (its image hash, or its value as text)."""

    text: str
    file: str
    ref: str
    image: str


class TranscriptReply(TypedDict, total=False):
    """What a node answered: an image hash, text, the chosen option, a value as JSON text, and how
    many asks it took to parse."""

    image: str
    text: str
    option: str
    value: str
    parse_attempts: int


class TranscriptEntry(TypedDict):
    """One node of a case's transcript, in the graph's order."""

    node: str
    kind: str
    role: str | None
    prompt: NotRequired[list[TranscriptPart]]
    images: NotRequired[list[TranscriptPart]]
    #: the nodes whose outputs it read
    inputs: NotRequired[list[str]]
    #: the options of a multiple-choice question
    options: NotRequired[list[str]]
    #: done, failed, blocked, skipped, pending, or "not run"
    status: str
    reply: NotRequired[TranscriptReply]
    failure: NotRequired[FailureRecord]


class CaseRecord(TypedDict):
    """The fields every line of results.jsonl has; a protocol's record type (its ``RecordT``) adds
    its own. Records stay plain JSON objects at run time (20,000 of them stream through a run's
    finish and the viewer's index), so this is a TypedDict that mypy checks, not a model that would
    copy each one."""

    case_id: str
    nodes: dict[str, NodeRecord]
    #: the case's conversation with each model, for the viewer (absent where a reader left it out)
    transcript: NotRequired[list[TranscriptEntry]]


class Totals(TypedDict, total=False):
    """Calls and usage over every invocation into a run folder, kept in run.db between invocations."""

    calls: dict[str, int]
    usage: Usage


def each_record(path: Path) -> Iterator[CaseRecord]:
    """The records of a results.jsonl file, one at a time (never held whole); a damaged line is an
    InputError naming the file and line."""
    for number, line in each_jsonl_line(path):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number) from None


def result_lines(records: Iterable[Mapping[str, object]]) -> Iterator[str]:
    """results.jsonl's lines: each record as canonical JSON (sorted keys), so a record reads the
    same however it was assembled."""
    return (canonical_json(r) + "\n" for r in records)


# ---------------------------------------------------------------------------------- summary.json
class _Section(JsonModel):
    """A run folder's JSON file or a part of it: unknown keys (from a newer umni) are kept, not refused."""

    model_config = ConfigDict(extra="allow")
    #: how the file is indented (summary.json and run.json by 2, tables.json by 1)
    indent: ClassVar[int] = 2

    def to_json(self) -> dict[str, Any]:
        """The JSON object the file holds (what a protocol's `tables` reads of summary.json)."""
        return self.model_dump()

    def text(self) -> str:
        """The file's text, as umni writes it."""
        return json.dumps(self.to_json(), indent=self.indent, ensure_ascii=False)


class Counts(_Section):
    """What a run did, in cases and nodes. `cached` includes the nodes of cases an earlier invocation
    finished; `pending` (only after a ``--phase`` run) is work left for another phase."""

    optional_sections = frozenset({"pending"})

    cases: int = 0
    nodes: int = 0
    computed: int = 0
    cached: int = 0
    failed: int = 0
    blocked: int = 0
    skipped: int = 0
    skipped_cases: int = 0
    pending: int | None = None


class SkippedCase(_Section):
    """A case the loader left out of the run, with the reason (`umni.protocols.protocol.Skipped`)."""

    case_id: str
    reason: str


class Cost(_Section):
    """What a run cost where prices are known (`umni.reporting.pricing.estimate`). A role whose
    token counts are unknown has an unknown cost (None), and then so has the total; `known_total`
    sums the roles whose cost is known."""

    per_role: dict[str, Number | None]
    total: Number | None
    known_total: Number
    unpriced_roles: list[str]
    unknown_roles: list[str]


class Invocation(_Section):
    """The latest invocation's own calls, usage and cost (a resume of a finished run makes none),
    and its nodes by role and status: which work it did and which it took from the store."""

    optional_sections = frozenset({"cost", "nodes"})

    calls: dict[str, int]
    usage: Usage
    cost: Cost | None = None
    #: role -> status -> nodes (a node no backend fills under its kind, ``compute``); {} when nothing
    #: ran, absent from a summary written before umni counted them
    nodes: dict[str, dict[str, int]] | None = None


class ServerTally(_Section):
    """What the servers behind a run's backends did (`umni.run.servers`): per server its backend,
    how often it was set aside and returned (and slowed), and the last reason."""

    set_aside: int
    returned: int
    by_server: dict[str, dict[str, int | str]]


class JudgeChange(_Section):
    original: str | None
    new: str


class Lineage(_Section):
    """Where a re-judged run came from (`umni.run.rejudge`)."""

    rejudged_from: str
    judges: JudgeChange


class RunScores(RootModel[dict[str, Any]]):
    """summary.json's ``scores``: the protocol's `Scores` as JSON, in its field order.

    Every protocol's scores have a headline (`overall`) and a judged protocol names its judge
    (`judge`); the rest is the protocol's own: read it with ``scores["stages"]``, or as the
    protocol's model with `as_model` (``scores.as_model(UmniScores).stages.generation``)."""

    root: dict[str, Any] = {}

    @property
    def overall(self) -> Number | None:
        """The headline score; None when the protocol has none or nothing was scored."""
        value = self.root.get("overall")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def judge(self) -> str | None:
        """The judge role's spec, pinned so tables comparing runs name the judge of each number."""
        value = self.root.get("judge")
        return value if isinstance(value, str) else None

    def as_model(self, model: type[M]) -> M:
        """These scores as the protocol's own model (its `Scores` subclass)."""
        return model.model_validate(self.root)

    def __getitem__(self, key: str) -> Any:
        return self.root[key]

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def get(self, key: str, default: Any = None) -> Any:
        return self.root.get(key, default)


class Sampling(_Section):
    """How a role's backend draws its outputs, where it says: a text model's temperature and token
    limit, a diffusion model's steps and guidance scale. None: the backend does not use the setting,
    or does not say."""

    temperature: Number | None = None
    max_tokens: int | None = None
    steps: int | None = None
    guidance: Number | None = None


class RoleProvenance(_Section):
    """How one role's outputs were made, as far as its backend and the protocol know (None: unknown).

    `model` is the id the user asked for; `revision` the snapshot or commit it resolved to (for a
    served model, the weights' path its server's card names), and `reported_id` the id the server
    said it served (an HTTP endpoint may serve another model than the name it was asked by). `http_shape` names the request shape of an HTTP backend (``openai
    chat``, ``openai images``). `template_hash` is the hash of the prompt templates the protocol
    sends this role (a judge's rubric), `template_follows` the official template it follows."""

    backend: str | None = None
    model: str | None = None
    revision: str | None = None
    reported_id: str | None = None
    dtype: str | None = None
    device: str | None = None
    sampling: Sampling | None = None
    seed_policy: str | None = None
    http_shape: str | None = None
    template_hash: str | None = None
    template_follows: str | None = None


class Provenance(_Section):
    """How a run's numbers were made (issue 33): umni's version (and commit, when run from a
    checkout), the protocol's scoring version and the deviations from its official code in effect,
    and per role the model, revision, settings and prompt templates. `umni methods` writes it up."""

    umni_version: str
    umni_commit: str | None = None
    protocol: str
    scoring_version: str | None = None
    #: the run's seed, from which every node's seed is derived (its repeat varies it)
    seed: int | None = None
    #: the ids of the protocol's deviations from its official code in effect in this run
    deviations: list[str] = []
    roles: dict[str, RoleProvenance] = {}


class Summary(_Section):
    """summary.json: what a run did (counts, failures by kind, calls, usage, cost) and the protocol's
    scores. `calls` and `usage` add up over every invocation of a resumed run; `this_invocation`
    holds the latest one's own. Defaults let a summary written by an older umni be read."""

    optional_sections = frozenset(
        {"why_no_overall", "servers", "this_invocation", "cost", "run_dir", "extended", "lineage", "label", "provenance"}
    )

    protocol: str
    title: str = ""
    #: role -> the spec bound to it
    bindings: dict[str, str] = {}
    #: role -> the backend's identity (provider, name, the params that change its outputs: its own)
    backends: dict[str, dict[str, Any]] = {}
    #: the protocol's options as its options model dumps them
    options: dict[str, Any] = {}
    counts: Counts = Field(default_factory=Counts)
    #: failed nodes by failure kind (a plugin's kinds too), and ``blocked``: nodes a failure upstream stopped
    failures: dict[str, int] = {}
    calls: dict[str, int] = {}
    usage: Usage = {}
    wall_seconds: float = 0.0
    skipped_cases: list[SkippedCase] = []
    #: how many notes the case loader left (repairs of the official file)
    notes: int = 0
    #: inputs a backend could not honour, by kind; each is listed on its node in results.jsonl
    node_notes: dict[str, int] = {}
    scores: RunScores = Field(default_factory=RunScores)
    #: why the headline (``scores.overall``) is empty, only when it is (`Protocol.why_no_overall`)
    why_no_overall: str | None = None
    servers: ServerTally | None = None
    this_invocation: Invocation | None = None
    cost: Cost | None = None
    #: where the run folder was when the run finished
    run_dir: str | None = None
    #: how this invocation widened the run's --limit
    extended: str | None = None
    lineage: Lineage | None = None
    #: the name the run was given, for tables to show instead of its bindings (a prefix before "/"
    #: groups it in ``leaderboard --group``); set by whoever labels runs, absent otherwise
    label: str | None = None
    #: how the numbers were made: models, revisions, settings, templates, deviations (absent from a
    #: summary written before umni recorded it)
    provenance: Provenance | None = None

    def __getitem__(self, key: str) -> Any:
        """``summary["scores"]``, as code written when the summary was a dict reads it (its JSON);
        deprecated: ``summary.scores`` is the typed field."""
        warnings.warn(f'summary["{key}"] reads the JSON of summary.json; use summary.{key}', DeprecationWarning, stacklevel=2)
        return self.to_json()[key]

    def __contains__(self, key: object) -> bool:
        """Whether summary.json holds `key` (deprecated, as ``summary[key]``): ``summary.servers is None``."""
        warnings.warn(f"summary: `{key!r} in summary` reads the JSON of summary.json; test the field", DeprecationWarning, stacklevel=2)
        return key in self.to_json()


# -------------------------------------------------------------------------------------- run.json
class CaseFiles(_Section):
    """The case file or folder a run read, and the content hash of it and every file it references."""

    path: str
    fingerprint: str


class Manifest(_Section):
    """run.json: the command that makes a run folder what it is. A resume must match its identity
    fields (`umni.run.rundir.IDENTITY_FIELDS`); `config` is what the user set, verbatim, so a replay
    (`umni rejudge`) sets nothing more (absent in folders written before it was kept)."""

    optional_sections = frozenset({"config", "blobs", "shard", "lineage", "served"})

    config: dict[str, Any] | None = None
    protocol: str
    cases: CaseFiles
    bindings: dict[str, str]
    identities: dict[str, dict[str, Any]]
    options: dict[str, Any]
    seed: int
    limit: int | None = None
    umni: str = ""
    cache: str = ""
    blobs: str | None = None
    shard: str | None = None
    lineage: Lineage | None = None
    #: what the servers behind the backends reported when the run started (`umni.backends.contract.Backend.settle`:
    #: their model ids, the image API chosen), by backend; not compared on resume
    served: dict[str, dict[str, Any]] | None = None


# ----------------------------------------------------------------------------------- tables.json
class RunTables(_Section):
    """tables.json: the run's leaderboard tables (`umni.reporting.tables.Table.to_json`), the
    bootstrap interval of each score, by its path in the scores (``stages/generation``), and why a
    score with a value has none (`no_interval`, the same paths: a statistic of the whole set, too
    few cases)."""

    indent = 1
    optional_sections = frozenset({"provenance"})

    version: int = TABLES_VERSION
    intervals: dict[str, tuple[float, float] | None]
    no_interval: dict[str, str] = {}
    tables: list[dict[str, Any]]
    #: the run's `Provenance` (as in summary.json), so the tables say how their numbers were made
    provenance: Provenance | None = None


# ------------------------------------------------------------------------------------ the folder
class RunFolder:
    """The files of the run folder at `path`, and reading and writing its JSON ones."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def run_db(self) -> Path:
        return self.path / RUN_DB

    @property
    def events_jsonl(self) -> Path:
        return self.path / EVENTS_JSONL

    @property
    def results_jsonl(self) -> Path:
        return self.path / RESULTS_JSONL

    @property
    def summary_json(self) -> Path:
        return self.path / SUMMARY_JSON

    @property
    def tables_json(self) -> Path:
        return self.path / TABLES_JSON

    @property
    def report_html(self) -> Path:
        return self.path / REPORT_HTML

    @property
    def images(self) -> Path:
        return self.path / IMAGES

    @property
    def thumbs(self) -> Path:
        return self.path / THUMBS

    @property
    def case_index(self) -> Path:
        return self.path / CASE_INDEX

    @property
    def case_search(self) -> Path:
        return self.path / CASE_SEARCH

    @property
    def incomplete(self) -> Path:
        return self.path / INCOMPLETE

    # -- summary.json
    def read_summary(self) -> Summary:
        """The run's summary; a missing, malformed or mis-shaped file is an InputError naming it."""
        return _validated(Summary, read_json(self.summary_json), self.summary_json)

    def write_summary(self, summary: Summary) -> None:
        atomic_write_text(self.summary_json, summary.text())

    # -- run.json
    def read_manifest(self) -> Manifest:
        """The command that made the folder; InputError naming run.json when it is not one."""
        return _validated(Manifest, read_json(self.run_json), self.run_json)

    def shard_part(self) -> str | None:
        """The ``--shard I/N`` this folder ran, read from its run.json: a shard's folder is one part
        of a run (assembled beside it), never a run of its own. None for a run, or without a
        readable run.json."""
        try:
            shard = json.loads(self.run_json.read_text()).get("shard")
        except (OSError, ValueError, AttributeError):
            return None
        return shard if isinstance(shard, str) else None

    def write_manifest(self, manifest: Manifest) -> None:
        atomic_write_text(self.run_json, manifest.text())

    # -- tables.json
    def read_tables(self) -> RunTables | None:
        """The stored tables; None when there are none, or they are unreadable or of another layout
        version (they are then computed afresh: nothing is lost)."""
        try:
            data = json.loads(self.tables_json.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        if not isinstance(data, dict) or data.get("version") != TABLES_VERSION:
            return None
        try:
            return RunTables.model_validate(data)
        except ValidationError:
            return None

    def write_tables(self, tables: RunTables) -> None:
        atomic_write_text(self.tables_json, tables.text())

    # -- results.jsonl
    def each_record(self) -> Iterator[CaseRecord]:
        """The run's records as results.jsonl holds them, one at a time."""
        return each_record(self.results_jsonl)

    def write_results(self, records: Iterable[Mapping[str, object]]) -> None:
        """Write results.jsonl atomically, one record a line, as the records come."""
        atomic_write_lines(self.results_jsonl, result_lines(records))


def run_folders(root: Path, holding: str = SUMMARY_JSON) -> list[Path]:
    """`root` when it is a run folder holding the file `holding`, else every run folder under it
    that holds one (a sweep's runs, a folder of runs), in path order. This is where umni decides
    what is a run: a case shard's folder (`RunFolder.shard_part`) is a part of one, so it is
    found only when named itself."""
    root = Path(root)
    if (root / holding).exists():
        return [root]
    return [found.parent for found in sorted(root.rglob(holding)) if RunFolder(found.parent).shard_part() is None]


def _validated(model: type[M], data: Any, path: Path) -> M:
    """`data` as `model`; one InputError naming the file and the first field in error."""
    if not isinstance(data, dict):
        raise InputError(f"does not hold a JSON object; this does not look like a umni run folder's {path.name}", path=path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(f"{error['msg']}{more}", path=path, field=where or None) from None

