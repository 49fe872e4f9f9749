"""Running a protocol into a run directory: the orchestration behind `umni run` and the Python API.

A run directory holds ``run.json`` (the command that made it), ``run.db`` (finished cases),
``events.jsonl``, and — rewritten whole at the end of every invocation — ``results.jsonl``,
``summary.json`` and ``report.html``. Running the same command into the same directory resumes; a
different command is refused rather than mixed in.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import platformdirs

from . import __version__
from .artifacts import atomic_write_text, canonical_json, fingerprint
from .bindings import Bindings
from .completion import mark_complete, mark_incomplete
from .config import RunConfig, RunRequest  # noqa: F401 - RunRequest: the old name, still importable here
from .errors import ConfigError, InputError
from .events import EventLog
from .filehash import file_sha256, files_sha256
from .graph import Graph, ImageFile
from .outcomes import FAILURE_KINDS, Outcome
from .pricing import default_price_file, estimate, load_prices
from .progress import Progress
from .protocol import CaseSet, Protocol, get_protocol
from .runner import CaseJob, LanePool, Runner
from .sharding import parse_shard
from .storage import exclusive_folder, storage_guard
from .store import Cache, RunStore
from .stores import describe
from .transcript import case_transcript


def default_cache_dir() -> Path:
    env = os.environ.get("UMNI_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("umni"))


@dataclass
class RunResult:
    out: Path
    summary: dict[str, Any]

    @property
    def report(self) -> Path:
        return self.out / "report.html"


def _files_fingerprint(path: Path, referenced: set[Path] = frozenset()) -> str:  # type: ignore[assignment]
    """Content hash of a case file, or of every file in a case folder (names and bytes), and of
    every file the cases reference (images), wherever it lies: replacing any of them is a new case set."""
    if path.is_file():
        own: list[list[str]] = [[path.name, file_sha256(path)]]
    else:
        entries = [p for p in path.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)]
        own = files_sha256(entries, root=path)
    outside = files_sha256(sorted({p.resolve() for p in referenced}))
    return fingerprint({"files": own, "referenced": outside})


def _referenced_files(protocol: Protocol[Any], cases: list[Any], options: Any) -> set[Path]:
    """Every file the cases' graphs read (case images); a missing one is left to the node that reads it."""
    found: set[Path] = set()
    for case in cases:
        for node in protocol.build(case, options).nodes.values():
            for part in (*node.prompt, *node.images):
                if isinstance(part, ImageFile) and Path(part.path).is_file():
                    found.add(Path(part.path))
    return found


#: What identifies the run a directory holds; a resume must match all of it (limit is checked apart).
IDENTITY_FIELDS = ("protocol", "cases", "identities", "options", "seed")
#: What umni itself places in a run directory before run.json exists.
_OWN_FILES = frozenset({".lock", "INCOMPLETE"})


def run_identity(manifest: dict[str, Any]) -> str:
    """The hash of what a run directory holds; kept in run.db as well as in run.json. A shard's
    directory is also tied to its shard (left out when unsharded, so older directories still match)."""
    fields = {k: manifest.get(k) for k in IDENTITY_FIELDS}
    if manifest.get("shard") is not None:
        fields["shard"] = manifest["shard"]
    return fingerprint(fields)


def _limit_text(limit: int | None) -> str:
    return "all cases" if limit is None else f"the first {limit} case(s)"


def _check_manifest(out: Path, manifest: dict[str, Any]) -> str | None:
    """Refuse a directory that holds another run, or that is not a run directory at all; refuse a
    --limit that would shrink what the directory holds. Returns a note when the run is extended."""
    path = out / "run.json"
    if not path.exists():
        if (out / "run.db").exists():  # run.json deleted: run.db itself says which command made it
            store = RunStore(out / "run.db")
            try:
                _check_run_db(out, store, manifest)
                held = len(store.records())
            finally:
                store.close()
            limit = manifest.get("limit")
            if limit is not None and held > limit:
                raise InputError(
                    f"run.db holds {held} cases; --limit {limit} would shrink it. Resume it with --limit {held} or more "
                    "(or no --limit), or choose another --out",
                    path=out,
                )
        else:
            strays = sorted(p.name for p in out.iterdir() if p.name not in _OWN_FILES)
            if strays:
                raise InputError(
                    f"this folder is not empty and is not a umni run directory (no run.json; it holds {', '.join(strays[:3])}"
                    + (", …" if len(strays) > 3 else "")
                    + "); choose a new or empty --out",
                    path=out,
                )
        atomic_write_text(path, json.dumps(manifest, indent=2, ensure_ascii=False))
        return None
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError("run.json is not valid UTF-8 JSON; this does not look like a umni run directory", path=path) from None
    if not isinstance(old, dict):
        raise InputError("run.json does not hold a JSON object; this does not look like a umni run directory", path=path)
    differing = [k for k in (*IDENTITY_FIELDS, "shard") if old.get(k) != manifest.get(k)]
    if differing:
        raise InputError(
            "this run directory was made by a different command (it differs in: "
            + ", ".join(differing)
            + "); resume it with the same command, or choose another --out",
            path=out,
        )
    before, now = old.get("limit"), manifest.get("limit")
    if before == now:
        return None
    if now is not None and (before is None or now < before):
        raise InputError(
            f"this run directory holds {_limit_text(before)}; --limit {now} would shrink it. Resume or extend it "
            f"with --limit {before} or more{'' if before is None else ' (or no --limit)'}, or choose another --out",
            path=out,
        )
    # a wider --limit: the directory is extended, keeping every finished case
    atomic_write_text(path, json.dumps(manifest, indent=2, ensure_ascii=False))
    return f"extended this run from {_limit_text(before)} to {_limit_text(now)}"


def _check_run_db(out: Path, store: RunStore, manifest: dict[str, Any]) -> None:
    """Tie run.db to the command that made it, whatever happened to run.json."""
    identity = run_identity(manifest)
    made_by = store.made_by()
    if made_by is None:
        if store.has_rows():
            raise InputError(
                "run.db holds results but does not record which command made them (written by an older umni); "
                "choose another --out (the cache still saves the work)",
                path=out / "run.db",
            )
        store.set_made_by(identity)
    elif made_by != identity:
        raise InputError(
            "run.db was made by a different command (another protocol, case set, binding, option or seed) "
            "than this one; resume it with the same command, or choose another --out",
            path=out / "run.db",
        )


def prepare(request: RunConfig, *, shared: dict[str, Any] | None = None) -> Prepared:
    """Everything that can fail on bad input, done before any model is loaded or called."""
    protocol = get_protocol(request.protocol)
    options = protocol.parse_options(dict(request.options))
    path = Path(request.cases) if request.cases else protocol.bundled_cases()
    if not path.exists():
        raise InputError("case file or folder does not exist", path=path)
    bindings = Bindings.from_specs(request.model, request.roles, shared=shared)
    options = protocol.adapt(options, set(bindings.roles()))
    case_set = protocol.load(path, options)
    cases = case_set.cases[: request.limit] if request.limit is not None else case_set.cases
    if cases:
        protocol.build(cases[0], options).validate(bindings.backends)
    needed: set[str] = set()
    for case in cases[1:]:  # every case's roles and code, so a later task cannot stop the run halfway
        graph = protocol.build(case, options)
        graph.validate()  # structure, and every callable fingerprintable (ConfigError naming the node)
        needed |= graph.required_roles()
    if request.phase:  # a misspelt phase would leave every node pending: refuse it before any work
        known = set(protocol.roles) | needed | set(bindings.roles())
        unknown = sorted(set(request.phase) - known)
        if unknown:
            raise ConfigError(f"--phase {','.join(unknown)}: no such role in protocol '{protocol.name}' (roles: {', '.join(sorted(known))})")
    unbound = {role for role in needed if role not in bindings}  # a derived role (critic) may borrow
    if unbound:
        raise ConfigError(
            f"the cases need role(s) {', '.join(sorted(unbound))}, which the binding does not fill; "
            + " ".join(f"--role {r}=SPEC" for r in sorted(unbound))
        )
    return protocol, options, case_set, bindings


Prepared = tuple[Protocol[Any], Any, CaseSet[Any], Bindings]


def evaluate(request: RunConfig, prepared: Prepared | None = None) -> RunResult:
    """Run (or resume) a protocol into `request.out`; returns the summary written there.

    `prepared` is what `prepare(request)` returned, when the caller already checked the input.
    """
    ready = prepared if prepared is not None else prepare(request)
    return anyio.run(lambda: evaluate_async(request, ready))


async def evaluate_async(
    request: RunConfig,
    prepared: Prepared,
    *,
    lanes: LanePool | None = None,
    cache: Cache | None = None,
    frozen_roles: frozenset[str] = frozenset(),
    lineage: dict[str, Any] | None = None,
    close_backends: bool = True,
) -> RunResult:
    """The async core of `evaluate`; sweeps call it for many runs at once with shared lanes and cache.

    `lineage` is recorded in run.json and summary.json (a re-judged run names the run it came from).
    """
    protocol, options, case_set, bindings = prepared
    if request.ray:
        from .placement import connect

        connect(request.ray)
    shard = parse_shard(request.shard) if request.shard else None
    out = shard.directory(Path(request.out)) if shard else Path(request.out)
    price_file = request.prices or default_price_file()
    prices = load_prices(price_file) if price_file is not None else None
    cases = case_set.cases[: request.limit] if request.limit is not None else case_set.cases
    if shard is not None:
        cases = [c for c in cases if shard.holds(protocol.case_id(c))]
    manifest = {
        "config": request.persisted(),  # verbatim: only what the user set, so a replay sets nothing more
        "protocol": protocol.name,
        "cases": {"path": str(case_set.path.resolve()), "fingerprint": _files_fingerprint(case_set.path, _referenced_files(protocol, cases, options))},
        "bindings": bindings.specs(),
        "identities": bindings.identities(),
        "options": options.model_dump(mode="json"),
        "seed": request.seed,
        "limit": request.limit,
        "umni": __version__,
        "cache": describe(request.cache) if request.cache else str(default_cache_dir()),
    }
    if request.blobs:
        manifest["blobs"] = describe(request.blobs)
    if shard is not None:
        manifest["shard"] = str(shard)
    if lineage:
        manifest["lineage"] = lineage
    with exclusive_folder(out, ".lock", "another umni process is using this run directory; wait for it or pick another --out"):
        extended = _check_manifest(out, manifest)
        mark_incomplete(out)  # removed only once results, summary and report are all written
        own_cache = cache is None
        if cache is None:
            cache = Cache(request.cache or default_cache_dir(), blobs=request.blobs)
        store = RunStore(out / "run.db")
        _check_run_db(out, store, manifest)
        events = EventLog(out / "events.jsonl")
        started = time.time()
        done_before = store.complete_ids()
        by_id = {protocol.case_id(c): c for c in cases}
        jobs = [
            CaseJob(position, cid, functools.partial(protocol.build, case, options))
            for position, (cid, case) in enumerate(by_id.items())
            if cid not in done_before
        ]

        def case_done(job: CaseJob, graph: Graph, outcomes: dict[str, Outcome]) -> None:
            record = protocol.record(by_id[job.case_id], outcomes, options)
            record["transcript"] = case_transcript(graph, outcomes)  # for the viewer; never in a cache key
            complete = all(o.status in ("computed", "cached", "skipped") for o in outcomes.values())
            store.put(job.case_id, job.position, record, complete)

        events.emit("run.start", protocol=protocol.name, bindings=bindings.specs(), cases=len(cases), resumed=len(done_before))
        progress = Progress(f"umni {protocol.name}", enabled=request.progress)
        progress.cases_total = len(cases)
        progress.cases_done = len(cases) - len(jobs)
        runner = Runner(
            bindings,
            cache,
            seed=request.seed,
            concurrency=request.concurrency,
            retry=request.retry_policy(),
            events=events,
            progress=progress,
            lanes=lanes,
            frozen_roles=frozen_roles,
            phase=frozenset(request.phase) if request.phase else None,
        )
        try:
            with progress:
                stats = await runner.run(jobs, case_done)
        finally:
            if close_backends:
                for backend in bindings.unique():
                    await backend.ensure_closed()
        records = [r for r in store.records() if r.get("case_id") in by_id]
        # nodes of cases finished by an earlier invocation count as reused (cached) work
        reused_nodes = sum(len(r.get("nodes", {})) for r in records if r["case_id"] in done_before)
        summary = _summary(protocol, options, case_set, bindings, records, stats, reused_nodes, time.time() - started)
        _add_cumulative(summary, store.cumulative())
        if prices is not None:
            summary["this_invocation"]["cost"] = estimate(summary["this_invocation"]["usage"], summary["bindings"], prices)
            summary["cost"] = estimate(summary["usage"], summary["bindings"], prices)
        store.set_cumulative({"calls": summary["calls"], "usage": summary["usage"]})
        summary["run_dir"] = str(out)
        if extended:
            summary["extended"] = extended
        if lineage:
            summary["lineage"] = lineage
        with storage_guard(out):  # the report's image copies too: a full disk is one StorageError
            _write_outputs(out, protocol, summary, records, cache)
        mark_complete(out)
        events.emit("run.end", counts=summary["counts"], failures=summary["failures"])
        events.close()
        store.close()
        if own_cache:
            cache.close()
    return RunResult(out, summary)


def _sum_counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Field-wise sum of two usage records; a count unknown (None) on either side stays unknown."""
    total: dict[str, Any] = {}
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name, 0), b.get(name, 0)
        total[name] = None if x is None or y is None else x + y
    return total


def _add_cumulative(summary: dict[str, Any], before: dict[str, Any]) -> None:
    """Make `calls` and `usage` the run's totals over every invocation, and keep this invocation's
    own figures under `this_invocation` (a resume of a finished run reports 0 calls there, not in the totals)."""
    now_calls, now_usage = summary["calls"], summary["usage"]
    summary["this_invocation"] = {"calls": now_calls, "usage": now_usage}
    calls = dict(before.get("calls", {}))
    for role, n in now_calls.items():
        calls[role] = calls.get(role, 0) + n
    usage = {role: dict(u) for role, u in before.get("usage", {}).items()}
    for role, used in now_usage.items():
        usage[role] = _sum_counts(usage.get(role, {}), used)
    summary["calls"] = dict(sorted(calls.items()))
    summary["usage"] = dict(sorted(usage.items()))


def _summary(
    protocol: Protocol[Any],
    options: Any,
    case_set: CaseSet[Any],
    bindings: Bindings,
    records: list[dict[str, Any]],
    stats: Any,
    reused_nodes: int,
    seconds: float,
) -> dict[str, Any]:
    failures: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    node_notes: Counter[str] = Counter()
    for record in records:
        for node in record.get("nodes", {}).values():
            statuses[node["status"]] += 1
            if "failure" in node:
                failures[node["failure"]["kind"]] += 1
            for note in node.get("notes", ()):
                node_notes[note.partition(":")[0].strip()] += 1
    counts = {
        "cases": len(records),
        "nodes": sum(stats.statuses.values()) + reused_nodes,
        "computed": stats.statuses["computed"],
        "cached": stats.statuses["cached"] + reused_nodes,
        "failed": stats.statuses["failed"],
        "blocked": stats.statuses["blocked"],
        "skipped": stats.statuses["skipped"],
        "skipped_cases": len(case_set.skipped),
    }
    if stats.statuses["pending"]:  # a --phase run: work left for another phase
        counts["pending"] = stats.statuses["pending"]
    return {
        "protocol": protocol.name,
        "title": protocol.title,
        "bindings": bindings.specs(),
        "backends": bindings.identities(),
        "options": options.model_dump(mode="json"),
        "counts": counts,
        # every kind a node failed with is counted, a kind not listed in FAILURE_KINDS (a plugin's) too
        "failures": {kind: failures[kind] for kind in FAILURE_KINDS}
        | {kind: n for kind, n in sorted(failures.items()) if kind not in FAILURE_KINDS}
        | {"blocked": statuses["blocked"]},
        "calls": dict(sorted(stats.calls.items())),
        "usage": {role: asdict(u) for role, u in sorted(stats.usage.items())},
        "wall_seconds": round(seconds, 3),
        "skipped_cases": [asdict(s) for s in case_set.skipped],
        "notes": len(case_set.notes),
        # inputs a backend could not honour (context images a text-only model ignored, prompts cut to
        # the text encoder's length), by kind; each is listed on its node in results.jsonl
        "node_notes": dict(sorted(node_notes.items())),
        "scores": _scores(protocol, records, options, bindings),
    }


def _scores(protocol: Protocol[Any], records: list[dict[str, Any]], options: Any, bindings: Bindings) -> dict[str, Any]:
    """The protocol's scores; a judged protocol also names its judge there, pinned for leaderboards."""
    scores = protocol.summarize(records, options)
    if "judge" in protocol.roles and scores.get("judge") is None:
        scores["judge"] = bindings.specs().get("judge")
    return scores


def _write_outputs(out: Path, protocol: Protocol[Any], summary: dict[str, Any], records: list[dict[str, Any]], cache: Cache) -> None:
    from .report import write_report

    lines = "".join(canonical_json(r) + "\n" for r in records)
    atomic_write_text(out / "results.jsonl", lines)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False))
    write_report(out, protocol, summary, records, cache.blobs)
