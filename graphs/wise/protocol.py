"""WISE as an umni protocol: one graph per prompt, one record per prompt, the paper's main table.

The class only answers the engine's questions; each answer lives in the module of its concept:

    options.py     the ``--option`` fields (rubric, prompt set, rewrite, how the judge is asked)
    cases.py       the prompt sets, their id ranges, and a --cases path → cases
    prompts.py     the judge's wording and how its replies are read (umni's and the official rules)
    graph.py       one prompt's graph: draw, then judge against the prompt's explanation
    records.py     a prompt's outcomes → its results.jsonl record, and the record's report views
    scoring.py     the official formulas: WiScore, category means, the weighted Overall
    summary.py     records → summary.json scores (official figure beside umni's), and the tables
    deviations.py  where umni departs from the official code, counted per run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from umni.plugin import GENERATE, JUDGE, CaseSet, Graph, HeadlineParts, Outcome, Protocol, RoleTemplate, View

from .cases import WiseCase, load_cases, prompt_file_schema
from .graph import WiseHandles, build_case_graph, judge_template
from .options import WiseOptions
from .records import WiseRecord, case_record, case_views, judge_marks, with_marks
from .summary import WiseScores, headline_parts, score_tables, stratum, summarize_records, why_no_overall


class Wise(Protocol[WiseCase, WiseOptions, WiseRecord, WiseScores]):
    name = "wise"
    title = "WISE world-knowledge text-to-image"
    roles = (GENERATE, JUDGE)
    Options = WiseOptions
    paper_numbers = Path(__file__).with_name("paper.json")
    scoring_version = "1"

    def case_schema(self) -> dict[str, Any]:
        return prompt_file_schema()

    def judgements(self, record: WiseRecord) -> dict[str, float | None]:
        return judge_marks(record)

    def rejudged(self, record: WiseRecord, judgements: Mapping[str, float], options: WiseOptions) -> WiseRecord | None:
        return with_marks(record, judgements)

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("wise")

    def load(self, path: Path, options: WiseOptions) -> CaseSet[WiseCase]:
        return load_cases(path, options)

    def case_id(self, case: WiseCase) -> str:
        return case.id

    def build(self, case: WiseCase, options: WiseOptions) -> Graph[WiseHandles]:
        return build_case_graph(case, options)

    def record(self, case: WiseCase, outcomes: Mapping[str, Outcome], options: WiseOptions) -> WiseRecord:
        handles: WiseHandles = self.handles(case, outcomes, options)
        return case_record(case, outcomes, handles, options)

    def summarize(self, records: list[WiseRecord], options: WiseOptions, *, judge: str | None = None) -> WiseScores:
        """`judge` is the judge role's spec, echoed as ``scores.judge`` (`summary.summarize_records`)."""
        return summarize_records(records, options, judge=judge)

    def stratum(self, record: WiseRecord, options: WiseOptions) -> str:
        return stratum(record, options)

    def headline_parts(self, records: Sequence[WiseRecord], options: WiseOptions) -> HeadlineParts:
        return headline_parts(records, options)

    def why_no_overall(self, scores: WiseScores, options: WiseOptions) -> str | None:
        return why_no_overall(scores)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        return score_tables(summary)

    def templates(self, options: WiseOptions) -> dict[str, RoleTemplate]:
        return {JUDGE: judge_template(options)}

    def views(self, record: WiseRecord) -> list[View]:
        return case_views(record)


PROTOCOL = Wise()
