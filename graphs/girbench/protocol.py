"""GIR-Bench as an umni protocol: one graph per case, each ending in a classical (non-judge) score.

Every default score follows the official evaluation code (lihxxx/GIR-Bench ``eval/*.py``); where
umni differs, ``deviations.py`` says how and the summary lists it (umni's own figure beside the
official one for sudoku and spatial). Tasks and what scores them (per-case scores in
``scoring.py``; formulas in ``metrics.py``, ``sudoku.py``, ``masks.py``; features in ``dinov3.py``
and ``fid.py``, their weights found by ``weights.py``):

- GIR-Bench-Uni (``uni``): generate the entity from its implicit prompt; mean cosine similarity of
  DINOv3 class-token features of the image and of each reference image; and, for the understanding
  side the released code lacks, a multiple-choice question about a real reference image (which
  entity it shows, distractors drawn from other entities).
- GIR-Bench-T2I: ``numerical`` (detect, every count exact), ``spatial`` (detect, relation geometry)
  and ``text`` (OCR, word-level continuous substring score).
- GIR-Bench-Edit: ``puzzle`` (edit the shuffled tiles back; torchmetrics' InceptionV3 features of
  output and solution per case, one FID over the whole set in `summarize`), ``sudoku`` (edit; OCR of
  output, question and answer, digits matched by position) and ``perception`` (edit the target
  green, IoU of the green mask).

``--option features=embed`` takes Uni and puzzle features from the run's embed role instead.
Roles that a run cannot fill are declared with ``--option skip_roles=detect,ocr``: the cases (or, for
Uni, the side) needing them are skipped with that reason and counted, instead of failing validation
or scoring 0.

The class only answers the engine's questions; each answer lives in the module of its concept:

    tasks.py       the seven tasks and eight metrics: names, aliases, titles, the roles each needs
    options.py     the ``--option`` fields
    dataset.py     the published task files and image folders, validated
    cases.py       the run's case and a case folder → cases (skips named), the weights they need
    prompts.py     what the edit tasks and the Uni question ask, in umni's words
    graph.py       one case's graph: the image, then its scoring nodes
    records.py     a case's outcomes → its results.jsonl record, and the record's report views
    scoring.py     the compute functions that score one case (and the set-level puzzle score)
    summary.py     records → summary.json scores (official figure beside umni's), and the tables
    deviations.py  where umni departs from the official code
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from umni.plugin import CaseSet, Graph, HeadlineParts, Outcome, Protocol, View

from .cases import GirCase, case_schema, load_tasks, missing_weights
from .graph import GirHandles, build_case_graph
from .options import GirOptions, with_unbound_roles_skipped
from .records import GirRecord, case_record, case_views
from .summary import (
    GirScores,
    headline_parts,
    score_tables,
    stratum,
    summarize_records,
    summarize_resample_records,
    unresampled,
    why_no_overall,
)
from .tasks import ALL_ROLES


class GirBench(Protocol[GirCase, GirOptions, GirRecord, GirScores]):
    name = "girbench"
    title = "GIR-Bench: reasoning-centric generation and editing"
    roles = ALL_ROLES
    scoring_version = "1"
    Options = GirOptions
    paper_numbers = Path(__file__).with_name("paper.json")

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("girbench")

    def adapt(self, options: GirOptions, bound_roles: Iterable[str]) -> GirOptions:
        return with_unbound_roles_skipped(options, bound_roles)

    def preflight(self, cases: Sequence[GirCase], options: GirOptions) -> list[str]:
        return missing_weights(cases, options)

    def case_schema(self) -> dict[str, Any]:
        return case_schema()

    def load(self, path: Path, options: GirOptions) -> CaseSet[GirCase]:
        return load_tasks(Path(path), options)

    def case_id(self, case: GirCase) -> str:
        return case.id

    def build(self, case: GirCase, options: GirOptions) -> Graph[GirHandles]:
        return build_case_graph(case, options)

    def record(self, case: GirCase, outcomes: Mapping[str, Outcome], options: GirOptions) -> GirRecord:
        handles: GirHandles = self.handles(case, outcomes, options)
        return case_record(case, outcomes, handles, options)

    def summarize(self, records: list[GirRecord], options: GirOptions) -> GirScores:
        return summarize_records(records, options)

    def summarize_resample(self, records: list[GirRecord], options: GirOptions) -> GirScores:
        return summarize_resample_records(records, options)

    def unresampled(self, scores: Mapping[str, Any], options: GirOptions) -> dict[str, str]:
        return unresampled(scores)

    def stratum(self, record: GirRecord, options: GirOptions) -> str:
        return stratum(record)

    def headline_parts(self, records: Sequence[GirRecord], options: GirOptions) -> HeadlineParts | str:
        return headline_parts(records)

    def why_no_overall(self, scores: GirScores, options: GirOptions) -> str | None:
        return why_no_overall(scores)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        return score_tables(summary)

    def views(self, record: GirRecord) -> list[View]:
        return case_views(record)


PROTOCOL = GirBench()
