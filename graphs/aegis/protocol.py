"""AEGIS as an umni protocol: one graph per case, one record per case, the paper's tables.

The class only answers the engine's questions; each answer lives in the module of its concept:

    options.py     the ``--option`` fields (the paper's variants)
    cases.py       the annotation file: validated, its slips repaired and reported; cases that can run
    prompts.py     what the model and the judge are asked, and how the judge's replies are read
    graph.py       one case's graph: the model acts on its task, then the judge grades the checklist
    records.py     a case's outcomes → its results.jsonl record, and the record's report views
    scoring.py     the official formulas: a case's fraction of Y, the data-weighted group means
    summary.py     records → summary.json scores (official figure beside umni's), and the tables
    deviations.py  where umni departs from the official code, counted per run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from umni.plugin import (
    EDIT,
    GENERATE,
    JUDGE,
    UNDERSTAND,
    CaseSet,
    Graph,
    HeadlineParts,
    Outcome,
    Protocol,
    RoleTemplate,
    View,
)

from . import prompts
from .cases import AegisCase, load_case_set, located
from .graph import JUDGE_MAX_TOKENS, AegisHandles, build_case_graph
from .options import AegisOptions
from .records import AegisResult, case_record, case_views, checklist_score, with_checklist_score
from .summary import AegisScores, headline_parts, score_tables, summarize_records, why_no_overall


class Aegis(Protocol[AegisCase, AegisOptions, AegisResult, AegisScores]):
    name = "aegis"
    title = "AEGIS world-knowledge checklist evaluation"
    roles = (UNDERSTAND, GENERATE, EDIT, JUDGE)
    Options = AegisOptions
    paper_numbers = Path(__file__).with_name("paper.json")
    scoring_version = "1"

    def judgements(self, record: AegisResult) -> dict[str, float | None]:
        return checklist_score(record)

    def rejudged(self, record: AegisResult, judgements: Mapping[str, float], options: AegisOptions) -> AegisResult | None:
        return with_checklist_score(record, judgements)

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("aegis") / "annotation.json"

    def load(self, path: Path, options: AegisOptions) -> CaseSet[AegisCase]:
        return load_case_set(path)

    def case_id(self, case: AegisCase) -> str:
        return str(case.id)

    def build(self, case: AegisCase, options: AegisOptions) -> Graph[AegisHandles]:
        return build_case_graph(case, options)

    def record(self, case: AegisCase, outcomes: Mapping[str, Outcome], options: AegisOptions) -> AegisResult:
        handles: AegisHandles = self.handles(case, outcomes, options)
        return case_record(located(case), outcomes, handles, options)

    def summarize(self, records: list[AegisResult], options: AegisOptions) -> AegisScores:
        return summarize_records(records, options)

    def headline_parts(self, records: Sequence[AegisResult], options: AegisOptions) -> HeadlineParts:
        return headline_parts(records)

    def why_no_overall(self, scores: AegisScores, options: AegisOptions) -> str | None:
        return why_no_overall(scores)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        return score_tables(summary)

    def templates(self, options: AegisOptions) -> dict[str, RoleTemplate]:
        return {JUDGE: RoleTemplate(prompts.judge_texts(), prompts.OFFICIAL_JUDGE, max_tokens=JUDGE_MAX_TOKENS)}

    def views(self, record: AegisResult) -> list[View]:
        return case_views(record)


PROTOCOL = Aegis()
