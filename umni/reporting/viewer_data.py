"""What the viewer serves, read from run directories: the runs, their paged and searchable case
index, one case's record with its transcript facts (seconds, calls, retries from events.jsonl), the
stored tables, and images (thumbnails made once)."""


from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from umni.reporting.caseindex import (
    build_index,
    case_category,
    read_case_index,
    read_record,
    read_search_lines,
)
from umni.reporting.leaderboard import Run, build_tables, find_runs, label_runs, run_coverage
from umni.reporting.pricing import Price, default_price_file, load_prices, usage_cost
from umni.store.artifacts import Blobs, ImageRef
from umni.store.urls import run_blobs
from umni.util.errors import InputError

__all__ = ["ViewerData", "add_costs", "node_facts"]

THUMB_SIDE = 256
#: Cases per page of /api/cases, at most.
MAX_PAGE = 500
_SHA = re.compile(r"^[0-9a-f]{64}$")
#: Record fields left out of the case's "record" block (shown elsewhere).
_BULKY = {"nodes", "transcript"}
#: Entry columns (see caseindex.FIELDS).
_ID, _CATEGORY, _STATUS, _SCORE, _OUT_OF, _FAILURES, _OFFSET, _LENGTH = range(8)


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
    blobs: Blobs | None
    entries: list[list[Any]]
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
                    self._protocol = get_protocol(self.run.summary["protocol"])
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
        assert self.run.path is not None
        item = self.entries[position]
        return read_record(self.run.path / "results.jsonl", item[_OFFSET], item[_LENGTH])


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
        self.missing_intervals = [r for r in runs if r.intervals is None]
        for run in self.missing_intervals:
            run.intervals = {}  # made before tables.json existed: no interval, rather than minutes of bootstrap here
        for run in runs:
            run.may_rescore = False  # nor a mean over runs resampled from their records
        self._runs_for_tables = runs
        self._tables: list[dict[str, Any]] | None = None
        self._tables_lock = threading.Lock()
        self._prices: dict[str, Price] | None = None
        self._prices_lock = threading.Lock()
        self.runs: list[_RunData] = []
        self._by_case: dict[tuple[str, str], list[int]] = {}
        self._positions: list[dict[str, int]] = []
        for index, (run, key) in enumerate(zip(runs, run_keys([r.path for r in runs]))):
            data = _RunData(run, key, self._blobs(run), [])
            stored = read_case_index(run.path) if run.path is not None else None
            if stored is not None:
                data.entries = stored.entries
            elif run.path is not None and (run.path / "results.jsonl").exists():
                built, texts = build_index(data.protocol, run.path / "results.jsonl")  # an older run: the slow way, once
                data.entries, data._search = built.entries, texts
            self.runs.append(data)
            protocol_name = run.summary.get("protocol", "?")
            positions: dict[str, int] = {}
            for position, item in enumerate(data.entries):
                positions[item[_ID]] = position
                self._by_case.setdefault((protocol_name, item[_ID]), []).append(index)
            self._positions.append(positions)
        self.keys = {data.key: i for i, data in enumerate(self.runs)}

    @property
    def cases(self) -> list[list[Any]]:
        """Every case as [run, case id, category, status] (for tests and small runs)."""
        return [[i, e[_ID], e[_CATEGORY], e[_STATUS]] for i, data in enumerate(self.runs) for e in data.entries]

    def tables(self) -> list[dict[str, Any]]:
        """The leaderboard tables from the summaries and the stored intervals (fast: nothing re-scored)."""
        with self._tables_lock:
            if self._tables is None:
                self._tables = [t.to_json() for t in build_tables(self._runs_for_tables)]
            return self._tables

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

    @staticmethod
    def _blobs(run: Run) -> Blobs | None:
        manifest = run.path / "run.json" if run.path else None
        if manifest is None or not manifest.exists():
            return None
        try:
            data = json.loads(manifest.read_text())
        except json.JSONDecodeError:
            return None
        return run_blobs(data) if isinstance(data, dict) else None  # a --blobs or --cache URL too

    @staticmethod
    def _views(protocol: Any, record: dict[str, Any]) -> list[Any]:
        if protocol is None:
            return []
        try:
            return list(protocol.views(record))
        except Exception:  # a record of an older shape: the transcript and raw record still show
            return []

    def index(self) -> dict[str, Any]:
        runs = []
        categories: set[str] = set()
        kinds: set[str] = set()
        for i, data in enumerate(self.runs):
            s = data.run.summary
            coverage, failed = run_coverage(s)
            path = data.run.path
            runs.append({
                "id": i, "key": data.key, "label": data.run.label, "protocol": s.get("protocol"), "title": s.get("title", s.get("protocol")),
                "dir": str(path) if path else None, "folder": str(path.parent) if path else None,
                "started": s.get("started") or s.get("created"), "finished": s.get("finished"),
                "modified": path.joinpath("summary.json").stat().st_mtime if path else None,
                "bindings": s.get("bindings", {}), "options": s.get("options", {}),
                "overall": s.get("scores", {}).get("overall"), "cases": len(data.entries),
                "coverage": [coverage.answered, coverage.total], "failed_nodes": failed,
                "failures": {k: v for k, v in s.get("failures", {}).items() if v},
            })
            for item in data.entries:
                categories.add(item[_CATEGORY])
                kinds.update(item[_FAILURES])
        return {"runs": runs, "total": sum(len(d.entries) for d in self.runs), "skipped": [str(p) for p in self.skipped],
                "categories": sorted(c for c in categories if c), "failure_kinds": sorted(kinds),
                "no_intervals": [r.label for r in self.missing_intervals]}

    def query(self, params: dict[str, str]) -> dict[str, Any]:
        """One page of the case list: filters, search and sort as /api/cases takes them."""
        run = params.get("run", "")
        status = set(filter(None, params.get("status", "").split(",")))
        category, kind = params.get("category", ""), params.get("failure", "")
        q = params.get("q", "").strip().lower()
        low, high = _float(params.get("min")), _float(params.get("max"))
        chosen = [self.keys[run]] if run in self.keys else ([] if run else range(len(self.runs)))
        found: list[tuple[int, int]] = []
        for r in chosen:
            data = self.runs[r]
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
            scored = [f for f in found if _share(self.runs[f[0]].entries[f[1]]) is not None]
            unscored = [f for f in found if _share(self.runs[f[0]].entries[f[1]]) is None]
            scored.sort(key=lambda f: _share(self.runs[f[0]].entries[f[1]]) or 0.0, reverse=sort == "-score")
            found = scored + unscored  # a case without a score last, whichever the direction
        offset = max(_int(params.get("offset"), 0), 0)
        limit = min(max(_int(params.get("limit"), 50), 1), MAX_PAGE)
        page = [self._row(r, p) for r, p in found[offset:offset + limit]]
        return {"total": len(found), "offset": offset, "cases": page}

    def _row(self, run: int, position: int) -> dict[str, Any]:
        item = self.runs[run].entries[position]
        return {"run": self.runs[run].key, "case_id": item[_ID], "category": item[_CATEGORY], "status": item[_STATUS],
                "score": item[_SCORE], "out_of": item[_OUT_OF], "failures": item[_FAILURES]}

    def record(self, run_key: str, case_id: str) -> dict[str, Any] | None:
        """One case's record, read at its offset in the run's results.jsonl."""
        index = self.keys.get(run_key)
        position = self._positions[index].get(case_id) if index is not None else None
        return None if index is None or position is None else self.runs[index].record(position)

    def case(self, run_id: int | str, case_id: str) -> dict[str, Any] | None:
        index = self.keys.get(run_id) if isinstance(run_id, str) else run_id
        if index is None or not 0 <= index < len(self.runs):
            return None
        data = self.runs[index]
        position = self._positions[index].get(case_id)
        if position is None or data.run.path is None:
            return None
        record = data.record(position)
        item = data.entries[position]
        panels = [{"title": v.title, "image": v.image, "rows": [list(r) for r in v.rows], "verdict": v.verdict}
                  for v in self._views(data.protocol, record)]
        failures = [{"node": nid, **node["failure"]} for nid, node in sorted(record.get("nodes", {}).items()) if "failure" in node]
        blocked = [nid for nid, node in sorted(record.get("nodes", {}).items()) if node.get("status") == "blocked"]
        protocol = data.run.summary.get("protocol", "?")
        facts = node_facts(data.run.path / "events.jsonl", case_id)
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
            "backends": data.run.summary.get("backends", {}),
            "record": {k: v for k, v in record.items() if k not in _BULKY}, "runs": others,
        }

    def image(self, sha: str, thumb: bool) -> bytes | None:
        if not _SHA.match(sha):
            return None
        for data in self.runs:
            if data.blobs is None:
                continue
            try:
                raw = data.blobs.read_bytes(ImageRef(sha256=sha, width=0, height=0))
            except FileNotFoundError:  # missing or damaged here: another run may hold it
                continue
            return _thumbnail(raw) if thumb else raw
        return None


def _has_summary(path: Path) -> bool:
    return (path / "summary.json").exists() or next(Path(path).rglob("summary.json"), None) is not None


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
