"""What the viewer serves, read from run directories: the runs, their paged and searchable case
index, one case's record with its transcript facts (seconds, calls, retries from events.jsonl), the
stored tables, and images (thumbnails made once).

A run directory may change while it is viewed (a `--phase` run finished, a run resumed into the
same folder): each request first looks whether a run's results.jsonl, summary.json or case index
changed since they were read (one stat of each) and reads that run again; and a record is served
only when the line at its stored offset is that case's, else its index is rebuilt from results.jsonl."""


from __future__ import annotations

import io
import json
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from umni.reporting.caseindex import (
    INDEX_FILE,
    build_index,
    case_category,
    read_case_index,
    read_record,
    read_search_lines,
)
from umni.reporting.leaderboard import Run, build_tables, find_runs, label_runs, run_coverage
from umni.reporting.methods import provenance_lines
from umni.reporting.pricing import Price, default_price_file, load_prices, usage_cost
from umni.store.blobs import Blobs
from umni.store.imageref import ImageRef
from umni.store.runfolder import RESULTS_JSONL, SUMMARY_JSON, RunFolder, run_folders
from umni.store.urls import check_blobs, describe, open_blobs, run_blobs_location
from umni.util.errors import InputError, StorageError, UmniError
from umni.util.secrets import scrub

__all__ = ["ViewerData", "add_costs", "node_facts"]

THUMB_SIDE = 256
#: Cases per page of /api/cases, at most.
MAX_PAGE = 500
_SHA = re.compile(r"^[0-9a-f]{64}$")
#: Record fields left out of the case's "record" block (shown elsewhere).
_BULKY = {"nodes", "transcript"}
#: Entry columns (see caseindex.FIELDS).
_ID, _CATEGORY, _STATUS, _SCORE, _OUT_OF, _FAILURES, _OFFSET, _LENGTH = range(8)
#: The files of a run directory whose change means the viewer reads the run again.
_WATCHED = (RESULTS_JSONL, SUMMARY_JSON, INDEX_FILE)


def folder_signature(path: Path | None) -> tuple[Any, ...]:
    """(inode, size, modification time) of each watched file of a run directory, None where missing:
    a rewrite (always a new file, renamed into place) changes the inode at least."""
    signature: list[Any] = []
    if path is None:
        return ()
    for name in _WATCHED:
        try:
            stat = (path / name).stat()
        except OSError:
            signature.append(None)
            continue
        signature.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


@dataclass
class BlobSource:
    """A blob store the runs' images live in, opened once for all the runs that name it."""

    location: str
    #: the keys of the runs whose images it holds
    runs: list[str] = field(default_factory=list)
    blobs: Blobs | None = None
    #: why its images cannot be shown (the store could not be opened, or stopped answering): said
    #: once on stderr and on the page; the store is not asked again
    error: str | None = None


class StaleIndex(Exception):
    """The line at a case's stored offset is not that case's record: results.jsonl changed since
    its index was read."""


def run_keys(paths: list[Path | None]) -> list[str]:
    """For each run directory, the shortest trailing part of its path that no other run shares."""
    keys: list[str] = []
    parts = [p.resolve().parts if p is not None else (f"run{i}",) for i, p in enumerate(paths)]
    for i, mine in enumerate(parts):
        for n in range(1, len(mine) + 1):
            key = "/".join(mine[-n:])
            if all(j == i or "/".join(other[-n:]) != key for j, other in enumerate(parts)):
                break
        keys.append(key)
    return keys


@dataclass
class _RunData:
    run: Run
    key: str
    store: BlobSource | None
    entries: list[list[Any]]
    #: what the run's files were when read (`folder_signature`)
    signature: tuple[Any, ...] = ()
    #: case id -> position in `entries`
    positions: dict[str, int] = field(default_factory=dict)
    #: made before tables.json existed (its intervals are left empty)
    no_intervals: bool = False
    _search: list[str] | None = None
    _protocol: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _protocol_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def protocol(self) -> Any:
        from umni.protocols.protocol import get_protocol

        with self._protocol_lock:  # its own lock: a search never waits on a protocol's import
            if self._protocol is None:
                try:
                    self._protocol = get_protocol(self.run.summary.protocol)
                except Exception:
                    self._protocol = False
            return self._protocol or None

    def search_lines(self) -> list[str]:
        """The search text of each case, read on first search (one line per case)."""
        with self._lock:
            if self._search is None and self.run.path is not None:
                self._search = read_search_lines(self.run.path)
            return self._search or []

    def record(self, position: int) -> dict[str, Any]:
        """The record of the case at `position`, read at its offset; `StaleIndex` when the bytes
        there are not that case's whole line."""
        assert self.run.path is not None
        item = self.entries[position]
        try:
            record = read_record(RunFolder(self.run.path).results_jsonl, item[_OFFSET], item[_LENGTH])
        except ValueError:  # cut mid-record (JSON or UTF-8): the file was rewritten
            raise StaleIndex() from None
        if not isinstance(record, dict) or str(record.get("case_id")) != item[_ID]:
            raise StaleIndex()
        return record


class ViewerData:
    """Everything the viewer serves: summaries, stored tables and case indexes, read when it starts;
    one record read from disk each time a case is opened."""

    def __init__(self, paths: list[Path], *, in_progress: Callable[[Path], bool] | None = None) -> None:
        """`in_progress(path)`: whether a folder with no finished run yet is one being written (a
        sweep or run the status page follows), shown rather than refused."""
        self.skipped: list[Path] = []  # run directories still being written: left out, and said so
        finished = paths if in_progress is None else [p for p in paths if not in_progress(p) or _has_summary(p)]
        runs = label_runs(find_runs(finished, skipped=self.skipped)) if finished else []
        if not runs and in_progress is None:
            raise InputError("no finished runs found", path=paths[0] if paths else None)
        self._tables: list[dict[str, Any]] | None = None
        self._tables_lock = threading.Lock()
        self._index_json: bytes | None = None
        self._prices: dict[str, Price] | None = None
        self._prices_lock = threading.Lock()
        self._reload_lock = threading.RLock()
        self._stores_lock = threading.Lock()
        self.stores: dict[str, BlobSource] = {}
        keyed = list(zip(runs, run_keys([r.path for r in runs])))
        self.runs = [self._read(run, key, store=self._store_of(run, key)) for run, key in keyed]
        self._by_case = self._cases_by_id()
        self.keys = {data.key: i for i, data in enumerate(self.runs)}

    def _read(self, run: Run, key: str, *, store: BlobSource | None, rebuild: bool = False) -> _RunData:
        """One run's data: its stored case index, or (none stored, a stale one, or `rebuild`) one
        built from results.jsonl."""
        data = _RunData(run, key, store, [], signature=folder_signature(run.path), no_intervals=run.intervals is None)
        if data.no_intervals:
            run.intervals = {}  # made before tables.json existed: no interval, rather than minutes of bootstrap here
        run.may_rescore = False  # nor a mean over runs resampled from their records
        stored = read_case_index(run.path) if run.path is not None and not rebuild else None
        if stored is not None:
            data.entries = stored.entries
        elif run.path is not None and RunFolder(run.path).results_jsonl.exists():
            built, texts = build_index(data.protocol, RunFolder(run.path).results_jsonl)  # an older run: the slow way, once
            data.entries, data._search = built.entries, texts
        data.positions = {item[_ID]: position for position, item in enumerate(data.entries)}
        return data

    def _cases_by_id(self) -> dict[tuple[str, str], list[int]]:
        """(protocol, case id) -> the runs holding that case."""
        by_case: dict[tuple[str, str], list[int]] = {}
        for index, data in enumerate(self.runs):
            protocol_name = data.run.summary.protocol
            for case_id in data.positions:
                by_case.setdefault((protocol_name, case_id), []).append(index)
        return by_case

    def refresh(self) -> None:
        """Read again each run whose results.jsonl, summary.json or case index changed since they
        were read (a run finished or resumed into the same folder)."""
        with self._reload_lock:
            changed = [i for i, data in enumerate(self.runs) if folder_signature(data.run.path) != data.signature]
            for index in changed:
                self._reread(index)

    def _reread(self, index: int, *, rebuild: bool = False) -> None:
        """Replace one run's data (under `_reload_lock`); a summary that cannot be read now (being
        replaced) leaves the run as it was, to be read on a later request."""
        old = self.runs[index]
        assert old.run.path is not None
        try:
            summary = RunFolder(old.run.path).read_summary()
        except (OSError, ValueError, InputError):
            return
        run = Run(summary, old.run.path, label=old.run.label)  # the label: the same run, the same bindings
        runs = list(self.runs)  # a new list: a request holding the old one reads one consistent state
        runs[index] = self._read(run, old.key, store=old.store, rebuild=rebuild)
        self.runs = runs
        self._by_case = self._cases_by_id()
        self._tables = None
        self._index_json = None

    def _record(self, index: int, case_id: str) -> tuple[_RunData, int, dict[str, Any]] | None:
        """The run's data, the case's position and its record, the index rebuilt from results.jsonl
        when the stored offset no longer holds that case (then read once more)."""
        for attempt in range(2):
            data = self.runs[index]
            position = data.positions.get(case_id)
            if position is None or data.run.path is None:
                return None
            try:
                return data, position, data.record(position)
            except StaleIndex:
                if attempt == 1:
                    return None
                with self._reload_lock:
                    if self.runs[index] is data:  # not already read again by another request
                        self._reread(index, rebuild=True)
        return None

    @property
    def cases(self) -> list[list[Any]]:
        """Every case as [run, case id, category, status] (for tests and small runs)."""
        return [[i, e[_ID], e[_CATEGORY], e[_STATUS]] for i, data in enumerate(self.runs) for e in data.entries]

    def tables(self) -> list[dict[str, Any]]:
        """The leaderboard tables from the summaries and the stored intervals (fast: nothing re-scored)."""
        self.refresh()
        with self._tables_lock:
            tables = self._tables
            if tables is None:
                tables = self._tables = [t.to_json() for t in build_tables([data.run for data in self.runs])]
            return tables

    def warm(self) -> None:
        """Load what opening a case needs and the start did without (each run's protocol code, the
        price table): called in a background thread once the URL is printed, so neither the start
        nor the first case opened waits for those imports."""
        for data in self.runs:
            _ = data.protocol
        self.prices()

    def prices(self) -> dict[str, Price] | None:
        """The price table (``$UMNI_PRICES`` or the user's prices.yaml), read when a case is first
        opened (or by `warm`); a table that cannot be read prices nothing (the viewer shows usage only)."""
        with self._prices_lock:
            if self._prices is None:
                path = default_price_file()
                try:
                    self._prices = load_prices(path) if path is not None else {}
                except InputError:
                    self._prices = {}
            return self._prices

    def _store_of(self, run: Run, key: str) -> BlobSource | None:
        """The blob store of a run's images (from its run.json: a --blobs or --cache URL too),
        opened when the first run naming it is read; None when the run names none."""
        if run.folder is None or not run.folder.run_json.exists():
            return None
        try:
            manifest = run.folder.read_manifest()
        except InputError:
            return None
        failure: Exception | None = None
        try:
            location = run_blobs_location(manifest)
        except InputError as error:  # a cache URL that implies no blob folder
            location, failure = manifest.blobs or manifest.cache, error
        if location is None:
            return None
        source = self.stores.get(str(location))
        if source is None:
            source = self.stores[str(location)] = BlobSource(str(location))
            try:
                if failure is not None:
                    raise failure
                check_blobs(location)  # a credential an older umni recorded: refused, never echoed
                source.blobs = open_blobs(location)
            except Exception as error:  # noqa: BLE001 - unreachable, refused, misconfigured: said, not a crash
                self._unreadable(source, error)
        source.runs.append(key)
        return source

    def _unreadable(self, source: BlobSource, error: Exception) -> None:
        """Record once why `source`'s images cannot be shown, and say it on stderr."""
        with self._stores_lock:
            if source.error is not None:
                return
            if isinstance(error, InputError):
                source.error = scrub(error.describe())
            else:
                source.error = scrub(str(error) if isinstance(error, UmniError) else f"{type(error).__name__}: {error}")
            source.blobs = None
            self._index_json = None
        print(f"umni view: images in {describe(source.location)} cannot be shown: {source.error} "
              "(start umni view again once the store answers)", file=sys.stderr)  # fmt: skip

    def store_errors(self) -> list[dict[str, Any]]:
        """Each blob store whose images cannot be shown: its location, the runs it holds, why."""
        return [{"blobs": describe(s.location), "runs": list(s.runs), "error": s.error} for s in self.stores.values() if s.error]

    @staticmethod
    def _views(protocol: Any, record: dict[str, Any]) -> list[Any]:
        if protocol is None:
            return []
        try:
            return list(protocol.views(record))
        except Exception:  # a record of an older shape: the transcript and raw record still show
            return []

    def index_json(self) -> bytes:
        """`index` as /api/index.json sends it (made once for each state of the runs)."""
        with self._reload_lock:
            self.refresh()
            if self._index_json is None:
                self._index_json = json.dumps(self.index(), ensure_ascii=False).encode()
            return self._index_json

    def index(self) -> dict[str, Any]:
        self.refresh()
        runs = []
        categories: set[str] = set()
        kinds: set[str] = set()
        for i, data in enumerate(self.runs):
            s = data.run.summary.to_json()
            coverage, failed = run_coverage(data.run.summary)
            path = data.run.path
            runs.append({
                "id": i, "key": data.key, "label": data.run.label, "protocol": s.get("protocol"), "title": s.get("title", s.get("protocol")),
                "dir": str(path) if path else None, "folder": str(path.parent) if path else None,
                "started": s.get("started") or s.get("created"), "finished": s.get("finished"),
                "modified": RunFolder(path).summary_json.stat().st_mtime if path else None,
                "bindings": s.get("bindings", {}), "options": s.get("options", {}),
                "overall": s.get("scores", {}).get("overall"), "cases": len(data.entries),
                "coverage": [coverage.answered, coverage.total], "failed_nodes": failed,
                "failures": {k: v for k, v in s.get("failures", {}).items() if v},
                "how_made": provenance_lines(data.run.summary.provenance),
            })
            for item in data.entries:
                categories.add(item[_CATEGORY])
                kinds.update(item[_FAILURES])
        return {"runs": runs, "total": sum(len(d.entries) for d in self.runs), "skipped": [str(p) for p in self.skipped],
                "categories": sorted(c for c in categories if c), "failure_kinds": sorted(kinds),
                "no_intervals": [data.run.label for data in self.runs if data.no_intervals], "store_errors": self.store_errors()}

    def query(self, params: dict[str, str]) -> dict[str, Any]:
        """One page of the case list: filters, search and sort as /api/cases takes them."""
        self.refresh()
        runs = self.runs  # this state throughout, should a run be read again meanwhile
        run = params.get("run", "")
        status = set(filter(None, params.get("status", "").split(",")))
        category, kind = params.get("category", ""), params.get("failure", "")
        q = params.get("q", "").strip().lower()
        low, high = _float(params.get("min")), _float(params.get("max"))
        chosen = [self.keys[run]] if run in self.keys else ([] if run else range(len(runs)))
        found: list[tuple[int, int]] = []
        for r in chosen:
            data = runs[r]
            texts = data.search_lines() if q else None
            for position, item in enumerate(data.entries):
                if status and item[_STATUS] not in status:
                    continue
                if category and item[_CATEGORY] != category:
                    continue
                if kind and kind not in item[_FAILURES]:
                    continue
                if low is not None or high is not None:
                    share = _share(item)
                    if share is None or (low is not None and share < low) or (high is not None and share > high):
                        continue
                if q and not (q in item[_ID].lower() or (texts is not None and position < len(texts) and q in texts[position])):
                    continue
                found.append((r, position))
        sort = params.get("sort", "")
        if sort in ("score", "-score"):
            scored = [f for f in found if _share(runs[f[0]].entries[f[1]]) is not None]
            unscored = [f for f in found if _share(runs[f[0]].entries[f[1]]) is None]
            scored.sort(key=lambda f: _share(runs[f[0]].entries[f[1]]) or 0.0, reverse=sort == "-score")
            found = scored + unscored  # a case without a score last, whichever the direction
        offset = max(_int(params.get("offset"), 0), 0)
        limit = min(max(_int(params.get("limit"), 50), 1), MAX_PAGE)
        page = [_row(runs[r], p) for r, p in found[offset:offset + limit]]
        return {"total": len(found), "offset": offset, "cases": page}

    def record(self, run_key: str, case_id: str) -> dict[str, Any] | None:
        """One case's record, read at its offset in the run's results.jsonl."""
        self.refresh()
        index = self.keys.get(run_key)
        found = self._record(index, case_id) if index is not None else None
        return None if found is None else found[2]

    def case(self, run_id: int | str, case_id: str) -> dict[str, Any] | None:
        self.refresh()
        index = self.keys.get(run_id) if isinstance(run_id, str) else run_id
        if index is None or not 0 <= index < len(self.runs):
            return None
        found = self._record(index, case_id)
        if found is None:
            return None
        data, position, record = found
        assert data.run.path is not None
        item = data.entries[position]
        panels = [{"title": v.title, "image": v.image, "rows": [list(r) for r in v.rows], "verdict": v.verdict}
                  for v in self._views(data.protocol, record)]
        failures = [{"node": nid, **node["failure"]} for nid, node in sorted(record.get("nodes", {}).items()) if "failure" in node]
        blocked = [nid for nid, node in sorted(record.get("nodes", {}).items()) if node.get("status") == "blocked"]
        protocol = data.run.summary.protocol
        facts = node_facts(RunFolder(data.run.path).events_jsonl, case_id)
        add_costs(facts, self.prices())
        others = [{"run": self.runs[i].key, "label": self.runs[i].run.label} for i in self._by_case.get((protocol, case_id), [])]
        try:
            verdicts = data.protocol.node_verdicts(record) if data.protocol is not None else {}
        except Exception:  # a record of an older shape
            verdicts = {}
        return {
            "run": data.key, "label": data.run.label, "protocol": protocol, "case_id": case_id,
            "category": case_category(record), "status": item[_STATUS], "score": item[_SCORE], "out_of": item[_OUT_OF],
            "panels": panels, "failures": failures, "blocked": blocked,
            "transcript": record.get("transcript"), "nodes": record.get("nodes", {}),
            "verdicts": verdicts, "node_facts": facts,
            "backends": data.run.summary.backends,
            "record": {k: v for k, v in record.items() if k not in _BULKY}, "runs": others,
        }

    def image(self, sha: str, thumb: bool) -> bytes | None:
        if not _SHA.match(sha):
            return None
        for source in list(self.stores.values()):
            blobs = source.blobs
            if blobs is None:
                continue
            try:
                raw = blobs.read_bytes(ImageRef(sha256=sha, width=0, height=0))
            except FileNotFoundError:  # missing or damaged here: another store may hold it
                continue
            except StorageError as error:  # the store stopped answering (after its own retries)
                self._unreadable(source, error)
                continue
            return _thumbnail(raw) if thumb else raw
        return None


def _has_summary(path: Path) -> bool:
    return bool(run_folders(path, SUMMARY_JSON))


def node_facts(events: Path, case_id: str) -> dict[str, dict[str, Any]]:
    """Per node of one case, from the run's event log: seconds and backend calls of its last
    computation, retries, whether it came from the cache, and the failure kind if it failed.
    A scan of events.jsonl for the case's lines (tens of MB on a 20k-case run: a fraction of a
    second, and only when a case is opened)."""
    facts: dict[str, dict[str, Any]] = {}
    if not events.exists():
        return facts
    needle = json.dumps(case_id, ensure_ascii=False).encode()  # as event lines hold it: UTF-8, not \u escapes
    with events.open("rb") as handle:
        for line in handle:
            if needle not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a crash: the rest still counts
                continue
            if event.get("case") != case_id or "node" not in event:
                continue
            fact = facts.setdefault(str(event["node"]), {"retries": 0})
            kind = event.get("event")
            if kind == "node.done":
                fact.update(seconds=event.get("seconds"), calls=event.get("calls"), role=event.get("role"), cached=False)
                _spent(fact, event)
            elif kind == "node.cached":
                fact["cached"] = True
            elif kind == "node.retry":
                fact["retries"] += 1
            elif kind == "node.failed":
                fact["failure"] = event.get("failure_kind")
                _spent(fact, event)
    return facts


def _spent(fact: dict[str, Any], event: dict[str, Any]) -> None:
    """The backend that answered and the usage its replies reported, from a node.done or node.failed
    line (a count left out is 0; ``calls``, replies, left out is the node's attempts); lines of an
    older umni carry neither, and nothing is made up."""
    if "backend" in event:
        fact["backend"] = event["backend"]
    if isinstance(event.get("usage"), dict):
        fact["usage"] = {"calls": event.get("calls", event.get("failure_attempts", 0)), **event["usage"]}


def add_costs(facts: dict[str, dict[str, Any]], prices: dict[str, Price] | None) -> None:
    """Each node's estimated cost (``cost``) from its usage and the price of its backend; left out
    where there is no price table or no price for that backend, None where a count is unknown."""
    if not prices:
        return
    for fact in facts.values():
        if "usage" in fact and fact.get("backend") in prices:
            fact["cost"] = usage_cost(fact["usage"], prices[fact["backend"]])


def _row(data: _RunData, position: int) -> dict[str, Any]:
    item = data.entries[position]
    return {"run": data.key, "case_id": item[_ID], "category": item[_CATEGORY], "status": item[_STATUS],
            "score": item[_SCORE], "out_of": item[_OUT_OF], "failures": item[_FAILURES]}


def _share(item: list[Any]) -> float | None:
    score, out_of = item[_SCORE], item[_OUT_OF]
    if score is None or not out_of:
        return None
    return float(score) / float(out_of)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _int(text: str | None, default: int) -> int:
    return int(text) if text is not None and re.fullmatch(r"[0-9]{1,9}", text) else default


def _thumbnail(raw: bytes) -> bytes:
    with Image.open(io.BytesIO(raw)) as image:
        if max(image.size) <= THUMB_SIDE:
            return raw
        image.thumbnail((THUMB_SIDE, THUMB_SIDE))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()
