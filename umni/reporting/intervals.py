"""Seeded percentile-bootstrap 95 % intervals for every score of a run, resampling its cases.

The case indices are drawn once per run (`BOOTSTRAP_RESAMPLES` draws of n cases, seed
`BOOTSTRAP_SEED`) and every score is read off the same draws: each resample is re-scored with the
protocol's own ``summarize``, so every cell's interval follows the official formula whatever it is,
and the scores model of a resample holds all of a run's cells at once — an interval per cell costs
no more scoring than the headline's alone. A scorer that refuses repeated cases (GENIUS keys items
by id) is handled by scoring each case alone once and taking, per resample, the mean of the
per-case figures (numpy: one count matrix of the draws times the per-case matrix). A protocol whose
scores are a function of summed per-case counts (`Protocol.tallies`, UmniBench) is resampled the
same way, exactly: the count matrix times the per-case tallies gives each resample's sums, which
`Protocol.score_tallies` scores, with no record re-read. Each case is scored alone once either
way, to count the cases each score rests on (`MIN_INTERVAL_CASES`).

The intervals of a finished run are stored in its tables.json (see `leaderboard.write_run_tables`)
under the scores' flattened keys (``overall``, ``questions/Q1``, ``dimensions/implicit_pattern/rc``);
leaderboards and the viewer read them instead of re-scoring.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from umni.protocols.scores import scores_json
from umni.reporting.runset import Run, as_number, protocol_options
from umni.store.runfolder import CaseRecord

if TYPE_CHECKING:
    import numpy as np

#: Resamples for every bootstrap interval (percentile method, seed 0).
BOOTSTRAP_RESAMPLES = 300
BOOTSTRAP_SEED = 0
#: A score that fewer cases than this bear on gets no interval (resampling two cases says little
#: but would look precise): a case bears on a score when, scored alone, it gives that score a value.
MIN_INTERVAL_CASES = 5
#: Decimals an interval's ends are stored with (each table prints its own rounding).
INTERVAL_DECIMALS = 4

Intervals = dict[str, tuple[float, float] | None]


def run_intervals(run: Run) -> Intervals:
    """Every interval of the run: the stored ones, else computed once and kept on the run."""
    if run.intervals is None:
        run.intervals = bootstrap_intervals(run)
    return run.intervals


def bootstrap_headline(run: Run, key: str = "overall") -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of ``scores[key]`` (a flattened key), resampling cases."""
    return run_intervals(run).get(key)


def bootstrap_intervals(run: Run) -> Intervals:
    """The interval of every numeric score of the run, from one set of seeded draws. Empty when the
    records or the protocol are unavailable."""
    import numpy as np  # here, not above: `umni view` starts without numpy (it reads stored intervals)

    from umni.protocols.protocol import get_protocol, gives_tallies

    try:
        protocol = get_protocol(run.summary.protocol)
        options = protocol_options(protocol, run.summary.options)
    except Exception:  # an unknown or changed protocol: no interval rather than a wrong one
        return {}

    def numbers(scores: Any) -> dict[str, float]:
        flat = flatten_scores(scores_json(scores))
        return {k: v for k, value in flat.items() if (v := as_number(value)) is not None}

    tallied = _tally_matrix(protocol, run.each_record(), options) if gives_tallies(protocol) else None
    records: list[CaseRecord] = [] if tallied is not None else run.records()
    n = tallied[1].shape[0] if tallied is not None else len(records)
    if n < 2:
        return {}
    # int32 draws are the same numbers as the default int64 ones (one bounded 32-bit stream), in half the memory
    draws = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, (BOOTSTRAP_RESAMPLES, n), dtype=np.int32)
    support: dict[str, int] = {}  # how many cases, each scored alone, give each score a value

    def supported(scores: dict[str, float]) -> dict[str, float]:
        for key in scores:
            support[key] = support.get(key, 0) + 1
        return scores

    single: list[dict[str, float]] = []
    if tallied is not None:  # scores from summed counts: each resample is a product of draw counts and tallies
        names, per_case = tallied
        for row in per_case:
            supported(numbers(protocol.score_tallies(dict(zip(names, row.tolist())), options)))
        resamples = (
            numbers(protocol.score_tallies(dict(zip(names, (np.bincount(idx, minlength=n) @ per_case).tolist())), options))
            for idx in draws
        )
    else:
        single = [supported(_scored_alone(protocol, record, options, numbers)) for record in records]
        resamples = (numbers(protocol.summarize_resample([records[j] for j in idx], options)) for idx in draws)
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
    except Exception:
        keys, stats = _per_case_means(single, draws)
    return {k: v if support.get(k, 0) >= MIN_INTERVAL_CASES else None for k, v in _percentiles(keys, stats).items()}


def _tally_matrix(protocol: Any, records: Iterable[CaseRecord], options: Any) -> tuple[list[str], np.ndarray] | None:
    """Every case's tallies as one integer matrix (cases x sorted names), read one record at a time;
    None when the protocol gives a record no tallies (or fails on one): then it scores from records."""
    import numpy as np

    columns: dict[str, int] = {}
    rows, cols, counts = array("q"), array("q"), array("q")  # a few dozen cells a case, 8 bytes each
    cases = 0
    try:
        for case, record in enumerate(records):
            tallies = protocol.tallies(record, options)
            if tallies is None:
                return None
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
    return names, matrix


def _scored_alone(protocol: Any, record: CaseRecord, options: Any, numbers: Callable[[Any], dict[str, float]]) -> dict[str, float]:
    """The scores of one case on its own (none when the scorer cannot take a single case)."""
    try:
        return numbers(protocol.summarize_resample([record], options))
    except Exception:
        return {}


def _draw_counts(draws: np.ndarray, n: int) -> np.ndarray:
    """How often each case was drawn in each resample (resamples x cases)."""
    import numpy as np

    counts = np.zeros((draws.shape[0], n))
    np.add.at(counts, (np.arange(draws.shape[0])[:, None], draws), 1.0)
    return counts


def _per_case_means(per_case: list[dict[str, float]], draws: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Per resample, the mean of each score over the drawn cases, each case scored alone."""
    import numpy as np

    keys = sorted({k for case in per_case for k in case})
    values = np.array([[case.get(k, math.nan) for k in keys] for case in per_case]).reshape(len(per_case), len(keys))
    present = ~np.isnan(values)
    counts = _draw_counts(draws, len(per_case))
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
    enough = defined.sum(axis=0) >= BOOTSTRAP_RESAMPLES // 2
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
