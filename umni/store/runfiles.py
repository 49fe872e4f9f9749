"""The names of a run folder's files: what code that only looks for a file (a sweep task asking
whether a unit's summary.json is there) needs, without `umni.store.runfolder`'s models."""

from __future__ import annotations

RUN_JSON = "run.json"
RUN_DB = "run.db"
EVENTS_JSONL = "events.jsonl"
RESULTS_JSONL = "results.jsonl"
SUMMARY_JSON = "summary.json"
TABLES_JSON = "tables.json"
REPORT_HTML = "report.html"
#: the report's copies of the run's images, named by content hash, and thumbnails of the large ones
IMAGES = "images"
THUMBS = "thumbs"
CASE_INDEX = "cases.index.json"
CASE_SEARCH = "cases.search.txt"
INCOMPLETE = "INCOMPLETE"
#: A sweep folder's own outputs (beside its runs' folders).
LEADERBOARD_MD = "leaderboard.md"
SWEEP_JSON = "sweep.json"
LOCK = ".lock"
#: What umni itself places in a run folder before run.json exists.
OWN_FILES = frozenset({LOCK, INCOMPLETE})
#: The layout version of tables.json; a file of another version is not read. Version 2: intervals
#: drawn within the protocol's strata (version 1's had none on WISE's Overall and GIR-Bench's group
#: Overalls, and are recomputed rather than read), and ``no_interval``: why a score has none.
TABLES_VERSION = 2
