"""Seeded percentile-bootstrap 95 % intervals for every score of a run, resampling its cases within
the protocol's strata.

The cases are put in case-id order and drawn once per run (`BOOTSTRAP_RESAMPLES` draws, seed
`BOOTSTRAP_SEED`, each stratum's cases from that stratum: `resampling.stratified_draws`), and every
score is read off the same draws: each resample is re-scored with the protocol's own
``summarize_resample``, so every cell's interval follows the official formula whatever it is, and
the scores model of a resample holds all of a run's cells at once — an interval per cell costs no
more scoring than the headline's alone. Strata are the categories the headline averages over
(`Protocol.stratum`): with them WISE's Overall, which needs all six categories, is defined in
every resample.

A scorer that refuses repeated cases (WISE, AEGIS and GENIUS key their items by id) is handled by
scoring each case alone once and taking, per resample, the mean of the per-case figures (numpy: one
count matrix of the draws times the per-case matrix): right for every pooled mean, and the headline,
which is no pooled mean there (WISE weights its categories), is scored from the protocol's
`headline_parts` instead (`contributions.case_parts`). A protocol whose scores are a function of summed per-case counts
(`Protocol.tallies`, UmniBench) is resampled the same way, exactly: the count matrix times the
per-case tallies gives each resample's sums, which `Protocol.score_tallies` scores, with no record
re-read. Each case is scored alone once either way, to count the cases each score rests on
(`MIN_INTERVAL_CASES`).

A score with no interval gets the reason (`Bootstrap.reasons`): too few cases, a statistic the
protocol does not recompute per resample (`Protocol.unresampled`: the puzzle's Fréchet distance), or
defined in too few resamples. The intervals and reasons of a finished run are stored in its
tables.json (see `leaderboard.write_run_tables`) under the scores' flattened keys (``overall``,
``questions/Q1``, ``dimensions/implicit_pattern/rc``); leaderboards and the viewer read them
instead of re-scoring.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from umni.protocols.scores import scores_json
from umni.reporting.contributions import stratum_of
from umni.reporting.resampling import BOOTSTRAP_SEED, DEFINED_SHARE, draw_counts, stratified_draws  # noqa: F401 - BOOTSTRAP_SEED: importable from here too
from umni.reporting.runset import Run, as_number, protocol_options
from umni.store.runfolder import CaseRecord

if TYPE_CHECKING:
    import numpy as np

#: Resamples for every bootstrap interval (percentile method, seed 0).
BOOTSTRAP_RESAMPLES = 300
#: A score that fewer cases than this bear on gets no interval (resampling two cases says little
#: but would look precise): a case bears on a score when, scored alone, it gives that score a value.
MIN_INTERVAL_CASES = 5
#: Decimals an interval's ends are stored with (each table prints its own rounding).
INTERVAL_DECIMALS = 4

Intervals = dict[str, tuple[float, float] | None]


@dataclass
class Bootstrap:
    """A run's bootstrap: every numeric score's resampled values (resamples x keys, NaN where a
    resample has none), its interval, and why a score with a value has none."""

    keys: list[str] = field(default_factory=list)
    stats: Any = None
    intervals: Intervals = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    #: the case ids in draw order (runs of the same cases draw the same resamples)
    case_ids: list[str] = field(default_factory=list)

    def column(self, key: str) -> np.ndarray | None:
        return self.stats[:, self.keys.index(key)] if key in self.keys else None


def run_intervals(run: Run) -> Intervals:
    """Every interval of the run: the stored ones, else computed once and kept on the run."""
    if run.intervals is None:
        done = bootstrap(run)
        run.intervals, run.no_interval = done.intervals, done.reasons
    return run.intervals


def bootstrap_headline(run: Run, key: str = "overall") -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of ``scores[key]`` (a flattened key), resampling cases."""
    return run_intervals(run).get(key)


def bootstrap_intervals(run: Run) -> Intervals:
    """The interval of every numeric score of the run, from one set of seeded draws. Empty when the
    records or the protocol are unavailable."""
    return bootstrap(run).intervals


def bootstrap(run: Run) -> Bootstrap:
    """The run's bootstrap (see the module's docstring); empty when the records or the protocol are
    unavailable. Kept on the run: a mean over runs reads it again."""
    if run.resampled is None:
        run.resampled = _bootstrap(run)
    result: Bootstrap = run.resampled
    return result


def _bootstrap(run: Run) -> Bootstrap:
    import numpy as np  # here, not above: `umni view` starts without numpy (it reads stored intervals)

    from umni.protocols.protocol import get_protocol, gives_tallies
    from umni.reporting.contributions import case_parts

    try:
        protocol = get_protocol(run.summary.protocol)
        options = protocol_options(protocol, run.summary.options)
    except Exception:  # an unknown or changed protocol: no interval rather than a wrong one
        return Bootstrap()

    def numbers(scores: Any) -> dict[str, float]:
        flat = flatten_scores(scores_json(scores))
        return {k: v for k, value in flat.items() if (v := as_number(value)) is not None}

    tallied = _tally_matrix(protocol, run.each_record(), options) if gives_tallies(protocol) else None
    records: list[CaseRecord] = []
    if tallied is not None:
        names, per_case, case_ids, strata = tallied
    else:
        records = sorted(run.records(), key=lambda r: str(r.get("case_id")))
        case_ids = [str(r.get("case_id")) for r in records]
        strata = [stratum_of(protocol, r, options) for r in records]
    n = len(case_ids)
    if n < 2:
        return Bootstrap()
    draws = stratified_draws(strata, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
    support: dict[str, int] = {}  # how many cases, each scored alone, give each score a value
    groups: dict[str, int] = {}  # how many cases, each scored alone, give some score of each group a value

    def supported(scores: dict[str, float]) -> dict[str, float]:
        for key in scores:
            support[key] = support.get(key, 0) + 1
        for group in {_group(key) for key in scores}:
            groups[group] = groups.get(group, 0) + 1
        return scores

    single: list[dict[str, float]] = []
    if tallied is not None:  # scores from summed counts: each resample is a product of draw counts and tallies
        for row in per_case:
            supported(numbers(protocol.score_tallies(dict(zip(names, row.tolist())), options)))
        resamples = (
            numbers(protocol.score_tallies(dict(zip(names, (np.bincount(idx, minlength=n) @ per_case).tolist())), options))
            for idx in draws
        )
    else:
        single = [supported(_scored_alone(protocol, record, options, numbers)) for record in records]
        resamples = (numbers(protocol.summarize_resample([records[j] for j in idx], options)) for idx in draws)
    reasons: dict[str, str] = {}
    try:
        keys: list[str] = []
        columns: dict[str, list[float]] = {}
        for i, scored in enumerate(resamples):
            for key, value in scored.items():
                if key not in columns:
                    keys.append(key)
                    columns[key] = [math.nan] * BOOTSTRAP_RESAMPLES
                columns[key][i] = value
        stats = np.array([columns[k] for k in keys]).T if keys else np.empty((BOOTSTRAP_RESAMPLES, 0))
    except Exception:  # the scorer refuses repeated cases: per-case means, the headline from its parts
        keys, stats = _per_case_means(single, draws)
        parts = case_parts(protocol, options, records, as_number(run.summary.scores.get("overall")), strata)
        headline = np.full(BOOTSTRAP_RESAMPLES, math.nan)
        if isinstance(parts, str):
            reasons["overall"] = parts
        else:
            headline = parts.resampled(draws)
            support["overall"] = int((parts.counts.sum(axis=1) > 0).sum())
        if "overall" in keys:
            stats[:, keys.index("overall")] = headline
        else:
            keys, stats = [*keys, "overall"], np.column_stack([stats, headline])
    for key in keys:  # a cell no case defines alone (T2I's Overall needs its three tasks) rests on its group's cases
        support.setdefault(key, groups.get(_group(key), 0))
    intervals = _percentiles(keys, stats)
    for key in keys:
        if intervals.get(key) is not None and support.get(key, 0) < MIN_INTERVAL_CASES:
            intervals[key] = None
            reasons.setdefault(key, f"rests on {support.get(key, 0)} case(s); an interval needs {MIN_INTERVAL_CASES}")
    flat = {k: v for k, v in flatten_scores(run.summary.scores.root).items() if as_number(v) is not None}
    try:
        stated = protocol.unresampled(run.summary.scores.root, options)
    except Exception:
        stated = {}
    for key in flat:
        if intervals.get(key) is not None:
            continue
        if key in stated:
            reasons[key] = stated[key]
        elif key not in reasons and key in keys:
            defined = int((~np.isnan(stats[:, keys.index(key)])).sum())
            reasons[key] = f"defined in {defined} of {BOOTSTRAP_RESAMPLES} resamples"
    return Bootstrap(keys, stats, intervals, {k: v for k, v in reasons.items() if k in flat}, [case_ids[i] for i in range(n)])


def mean_interval(runs: Sequence[Run], key: str) -> tuple[float, float] | None:
    """The interval of the mean of `key` over `runs` (a paper's Average column), from each run's
    resampled values: runs of the same cases drew the same resamples, so the mean is resampled
    jointly. None unless every run may be re-scored, has its records and an interval of its own
    for `key`, and the runs hold the same cases (else their resamples do not pair up)."""
    import numpy as np

    if not runs or not all(run.may_rescore and run.path is not None for run in runs):
        return None
    done = [bootstrap(run) for run in runs]
    if any(not d.case_ids or d.case_ids != done[0].case_ids or d.intervals.get(key) is None for d in done):
        return None  # other cases, or a run whose own figure rests on too few cases for an interval
    columns = [d.column(key) for d in done]
    if any(c is None for c in columns):
        return None
    mean = np.mean(np.array(columns), axis=0)
    defined = ~np.isnan(mean)
    if defined.sum() < DEFINED_SHARE * BOOTSTRAP_RESAMPLES:
        return None
    low, high = np.percentile(mean[defined], [2.5, 97.5])
    return round(float(low), INTERVAL_DECIMALS), round(float(high), INTERVAL_DECIMALS)


def _group(key: str) -> str:
    """The group of a flattened score key: everything before its last "/" (``t2i`` of ``t2i/overall``)."""
    return key.rpartition("/")[0]


def _tally_matrix(protocol: Any, records: Iterable[CaseRecord], options: Any) -> tuple[list[str], np.ndarray, list[str], list[str | None]] | None:
    """Every case's tallies as one integer matrix (cases in case-id order x sorted names), read one
    record at a time, with the cases' ids and strata; None when the protocol gives a record no
    tallies (or fails on one): then it scores from records."""
    import numpy as np

    columns: dict[str, int] = {}
    rows, cols, counts = array("q"), array("q"), array("q")  # a few dozen cells a case, 8 bytes each
    case_ids: list[str] = []
    strata: list[str | None] = []
    cases = 0
    try:
        for case, record in enumerate(records):
            tallies = protocol.tallies(record, options)
            if tallies is None:
                return None
            case_ids.append(str(record.get("case_id")))
            strata.append(stratum_of(protocol, record, options))
            for name, count in tallies.items():
                rows.append(case)
                cols.append(columns.setdefault(name, len(columns)))
                counts.append(count)
            cases = case + 1
    except Exception:
        return None
    names = sorted(columns)
    order = np.array([names.index(name) for name in columns], dtype=np.int64)  # first-seen column -> sorted column
    matrix = np.zeros((cases, len(names)), dtype=np.int64)
    if cases and names:
        np.add.at(matrix, (np.frombuffer(rows, dtype=np.int64), order[np.frombuffer(cols, dtype=np.int64)]), np.frombuffer(counts, dtype=np.int64))
    by_id = sorted(range(cases), key=lambda i: case_ids[i])
    return names, matrix[by_id], [case_ids[i] for i in by_id], [strata[i] for i in by_id]


def _scored_alone(protocol: Any, record: CaseRecord, options: Any, numbers: Callable[[Any], dict[str, float]]) -> dict[str, float]:
    """The scores of one case on its own (none when the scorer cannot take a single case)."""
    try:
        return numbers(protocol.summarize_resample([record], options))
    except Exception:
        return {}


def _per_case_means(per_case: list[dict[str, float]], draws: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Per resample, the mean of each score over the drawn cases, each case scored alone."""
    import numpy as np

    keys = sorted({k for case in per_case for k in case})
    values = np.array([[case.get(k, math.nan) for k in keys] for case in per_case]).reshape(len(per_case), len(keys))
    present = ~np.isnan(values)
    counts = draw_counts(draws, len(per_case))
    sums, seen = counts @ np.where(present, values, 0.0), counts @ present
    with np.errstate(invalid="ignore", divide="ignore"):
        return keys, np.where(seen > 0, sums / np.maximum(seen, 1), math.nan)


def _percentiles(keys: list[str], stats: np.ndarray) -> Intervals:
    """Each key's 2.5 and 97.5 percentiles over the resamples where it had a value; None for a key
    defined in fewer than half of them."""
    import numpy as np

    out: Intervals = {}
    if not keys:
        return out
    defined = ~np.isnan(stats)
    enough = defined.sum(axis=0) >= DEFINED_SHARE * BOOTSTRAP_RESAMPLES
    low, high = np.zeros(len(keys)), np.zeros(len(keys))
    full = defined.all(axis=0)
    if full.any():  # every resample scored it: one vectorised call for all such columns
        low[full], high[full] = np.percentile(stats[:, full], [2.5, 97.5], axis=0)
    for column in np.flatnonzero(enough & ~full):  # the percentiles of the resamples that scored it
        low[column], high[column] = np.percentile(stats[defined[:, column], column], [2.5, 97.5])
    for i, key in enumerate(keys):
        out[key] = (round(float(low[i]), INTERVAL_DECIMALS), round(float(high[i]), INTERVAL_DECIMALS)) if enough[i] else None
    return out


def flatten_scores(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested scores as one level, keys joined by ``/`` (lists and strings left out)."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            flat.update(flatten_scores(item, f"{prefix}{key}/"))
        elif not isinstance(item, (list, str)):
            flat[f"{prefix}{key}"] = item
    return flat
