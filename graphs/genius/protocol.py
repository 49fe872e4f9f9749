"""GENIUS as an umni protocol: one graph per case, one record per case, the paper's table.

The class only answers the engine's questions; each answer lives in the module of its concept:

    tasks.py     a --cases path → tasks (cases + VQA probe options; missing images are skipped)
    graph.py     one case's graph: rounds, judges, copy checks, reflection, plan, probe
    records.py   a case's outcomes → its results.jsonl record (and the scoring item of each round)
    summary.py   records → summary.json scores, failures counted beside them
    report.py    summary and records → report.html tables and views
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from umni.plugin import GENERATE, JUDGE, CaseSet, Graph, HeadlineParts, Outcome, Protocol, View

from .cases import GeniusRecord
from .graph import GeniusHandles, build_case_graph
from .options import GeniusOptions
from .records import GeniusResult, case_record
from .report import METRICS, Table, case_views, score_tables
from .summary import GeniusScores, headline_parts, summarize_records
from .tasks import GeniusTask, load_tasks


class Genius(Protocol[GeniusTask, GeniusOptions, GeniusResult, GeniusScores]):
    name = "genius"
    title = "GENIUS generative fluid intelligence"
    roles = (GENERATE, JUDGE)
    Options = GeniusOptions

    def case_schema(self) -> dict[str, Any]:
        """A case file (``<dimension>/test_data.json``) is a list of records; a task is built from one."""
        return TypeAdapter(list[GeniusRecord]).json_schema()

    def judgements(self, record: GeniusResult) -> dict[str, float | None]:
        """The final round's RC, VC and AQ marks (0–100) of a case, for judge agreement."""
        scores = record.get("scores") or {}
        return {metric: scores.get(metric) for metric in METRICS}

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("genius") / "dataset"

    def load(self, path: Path, options: GeniusOptions) -> CaseSet[GeniusTask]:
        return load_tasks(Path(path))

    def case_id(self, case: GeniusTask) -> str:
        return case.key

    def build(self, case: GeniusTask, options: GeniusOptions) -> Graph[GeniusHandles]:
        return build_case_graph(case, options)

    def record(self, case: GeniusTask, outcomes: Mapping[str, Outcome], options: GeniusOptions) -> GeniusResult:
        handles: GeniusHandles = self.handles(case, outcomes, options)
        return case_record(case, outcomes, handles, options)

    def summarize(self, records: list[GeniusResult], options: GeniusOptions) -> GeniusScores:
        return summarize_records(records, options)

    def headline_parts(self, records: Sequence[GeniusResult], options: GeniusOptions) -> HeadlineParts:
        return headline_parts(records)

    def tables(self, summary: dict[str, Any]) -> list[Table]:
        return score_tables(summary)

    def views(self, record: GeniusResult) -> list[View]:
        return case_views(record)


PROTOCOL = Genius()
