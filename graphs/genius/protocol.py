"""GENIUS as an umni protocol: one graph per case, one record per case, the paper's table.

The class only answers the engine's questions; each answer lives in the module of its concept:

    options.py     the ``--option`` fields, shared by the graph, the records and the summary
    dataset.py     the published record format and the dataset loader
    cases.py       a --cases path → tasks (cases + VQA probe options; missing images are skipped)
    prompts.py     the generation input formats, the judge prompts and their answer parser
    graph.py       one case's graph: rounds, judges, copy checks, reflection, plan, probe
    records.py     a case's outcomes → its results.jsonl record (and the scoring item of each
                   round), and the record's report views
    scoring.py     the official formulas: item marks, the copy rule, ×50, the weighted Overall
    summary.py     records → summary.json scores, failures counted beside them, and the tables
    deviations.py  where umni departs from the official code, counted per run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from umni.plugin import GENERATE, JUDGE, CaseSet, Graph, HeadlineParts, Outcome, Protocol, RoleTemplate, View

from . import prompts
from .cases import GeniusTask, case_schema, load_tasks
from .graph import GeniusHandles, build_case_graph
from .options import GeniusOptions
from .records import GeniusResult, case_record, case_views, final_marks
from .summary import GeniusScores, Table, headline_parts, score_tables, summarize_records, why_no_overall


class Genius(Protocol[GeniusTask, GeniusOptions, GeniusResult, GeniusScores]):
    name = "genius"
    title = "GENIUS generative fluid intelligence"
    roles = (GENERATE, JUDGE)
    Options = GeniusOptions
    paper_numbers = Path(__file__).with_name("paper.json")
    scoring_version = "1"

    def case_schema(self) -> dict[str, Any]:
        return case_schema()

    def judgements(self, record: GeniusResult) -> dict[str, float | None]:
        return final_marks(record)

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

    def why_no_overall(self, scores: GeniusScores, options: GeniusOptions) -> str | None:
        return why_no_overall(scores)

    def tables(self, summary: dict[str, Any]) -> list[Table]:
        return score_tables(summary)

    def templates(self, options: GeniusOptions) -> dict[str, RoleTemplate]:
        # 1024 tokens: the judge node's default reply limit, which GENIUS's judge nodes keep
        follows = f"{prompts.OFFICIAL_JUDGE}; each metric judged {options.judge_rounds} times, the mark round(mean)"
        return {JUDGE: RoleTemplate(prompts.judge_texts(), follows, max_tokens=1024)}

    def views(self, record: GeniusResult) -> list[View]:
        return case_views(record)


PROTOCOL = Genius()
