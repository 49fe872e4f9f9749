"""WISE's table, the paper's Table 1 in either layout: the six categories under the paper's names
and Overall, one row per run, two decimals. Table 1 reports WiScore (the legacy three-mark judge,
``scoring=legacy``); a run scored by the verified binary judge reports accuracy, which is another
metric: its table says so in its title, and runs of the two metrics get a table each."""

from __future__ import annotations

from umni.reporting.layouts.common import headline, rows_table, score
from umni.reporting.runset import Run
from umni.reporting.tables import Cell, Table

CATEGORIES = ["culture", "time", "space", "biology", "physics", "chemistry"]
#: WISE category keys under the names of the paper's Table 1.
NAMES = {"culture": "Cultural"}
#: What each ``scores.metric`` is called in a title, and what the title adds beside it.
METRICS = {"wiscore": ("WiScore", "the paper's Table 1 metric"),
           "accuracy": ("accuracy", "share judged correct by the verified binary judge; the paper's Table 1 reports WiScore (scoring=legacy)")}


def table(runs: list[Run], with_ci: bool) -> list[Table]:
    def cells(run: Run) -> list[Cell]:
        s = run.summary.scores.root
        scored, failed = s.get("scored_by_category", {}), s.get("failed_by_category", {})
        out = [score(run, c, s.get(c), scored.get(c), (scored.get(c) or 0) + (failed.get(c) or 0), with_ci=with_ci) if c in scored
               else score(run, c, s.get(c), with_ci=with_ci) for c in CATEGORIES]
        expected = s.get("expected") or ((s.get("scored") or 0) + (s.get("failed") or 0))
        overall = headline(run, with_ci, s.get("scored"), expected)
        unscored = [c for c in CATEGORIES if s.get(c) is None]
        if overall.value is None and unscored:
            overall.reason = f"no score for {', '.join(unscored)}: Overall weights all six categories"
        return out + [overall]

    by_metric: dict[str, list[Run]] = {}
    for run in runs:
        by_metric.setdefault(str(run.summary.scores.get("metric", "score")), []).append(run)
    names = [NAMES.get(c, c.capitalize()) for c in CATEGORIES]
    tables = []
    for metric in sorted(by_metric, key=lambda m: (m != "wiscore", m)):
        name, said = METRICS.get(metric, (metric, "not a metric of the paper's Table 1"))
        tables.append(rows_table(f"WISE · categories (paper Table 1 layout): {name} — {said}", "wise", by_metric[metric], names + ["Overall"],
                                 cells, sort_on=len(CATEGORIES)))
    return tables
