"""UmniBench as an umni protocol: one graph per case, one record per case, the paper's tables.

The class only answers the engine's questions; each answer lives in the module of its concept:

    options.py   the ``--option`` fields (which ability is under test)
    cases.py     the case format (umni's own: the official data is not public) and its loader
    graph.py     one case's graph: generate → Q1–Q3 → edit → Q4–Q6 → edit → Q7–Q9
    records.py   a case's outcomes → its results.jsonl record, and the record's report views
    scoring.py   which answers count, and one case's tallies
    summary.py   tallies → summary.json scores (by stage, question, domain), and the tables

UmniBench has no official code to deviate from, so it has no ``deviations.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from umni.plugin import EDIT, GENERATE, UNDERSTAND, CaseSet, Graph, HeadlineParts, Outcome, Protocol, View

from .cases import UmniCase, load_cases
from .graph import UmniHandles, build_case_graph
from .options import UmniOptions
from .records import UmniRecord, answer_verdicts, answered_right, case_accuracy, case_record, case_views
from .scoring import case_tallies
from .summary import UmniScores, headline_parts, score, score_tables, score_tallies, why_no_overall


class UmniBench(Protocol[UmniCase, UmniOptions, UmniRecord, UmniScores]):
    name = "umnibench"
    title = "UmniBench self-evaluation"
    roles = (GENERATE, EDIT, UNDERSTAND)
    scoring_version = "1"
    Options = UmniOptions
    paper_numbers = Path(__file__).with_name("paper.json")

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("umnibench") / "cases.jsonl"

    def load(self, path: Path, options: UmniOptions) -> CaseSet[UmniCase]:
        return load_cases(path)

    def case_id(self, case: UmniCase) -> str:
        return case.id

    def build(self, case: UmniCase, options: UmniOptions) -> Graph[UmniHandles]:
        return build_case_graph(case)

    def record(self, case: UmniCase, outcomes: Mapping[str, Outcome], options: UmniOptions) -> UmniRecord:
        handles: UmniHandles = self.handles(case, outcomes, options)
        return case_record(case, outcomes, handles)

    def summarize(self, records: list[UmniRecord], options: UmniOptions) -> UmniScores:
        return score(records, options.ability)

    def why_no_overall(self, scores: UmniScores, options: UmniOptions) -> str | None:
        return why_no_overall(scores, options.ability)

    def tallies(self, record: UmniRecord, options: UmniOptions) -> dict[str, int]:
        return case_tallies(record, options.ability)

    def score_tallies(self, totals: Mapping[str, int], options: UmniOptions) -> UmniScores:
        return score_tallies(totals, options.ability)

    def headline_parts(self, records: Sequence[UmniRecord], options: UmniOptions) -> HeadlineParts:
        return headline_parts(records, options.ability)

    def judgements(self, record: UmniRecord) -> dict[str, float | None]:
        return case_accuracy(record)

    def case_score(self, record: UmniRecord) -> tuple[float, float] | None:
        return answered_right(record)

    def node_verdicts(self, record: UmniRecord) -> dict[str, bool | None]:
        return answer_verdicts(record)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        return score_tables(summary)

    def views(self, record: UmniRecord) -> list[View]:
        return case_views(record)


PROTOCOL = UmniBench()
