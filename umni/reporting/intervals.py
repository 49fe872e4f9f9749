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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from umni.protocols.scores import scores_json
from umni.reporting.runset import Run, as_number, protocol_options

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

    from umni.protocols.protocol import get_protocol

    records = run.records()
    if len(records) < 2:
        return {}
    try:
        protocol = get_protocol(run.summary["protocol"])
        options = protocol_options(protocol, run.summary.get("options", {}))
    except Exception:  # an unknown or changed protocol: no interval rather than a wrong one
        return {}
    n = len(records)
    draws = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, (BOOTSTRAP_RESAMPLES, n))

    def numbers(scores: Any) -> dict[str, float]:
        flat = flatten_scores(scores_json(scores))
        return {k: v for k, value in flat.items() if (v := as_number(value)) is not None}

    tallies = _tallies(protocol, records, options)
    if tallies is not None:  # scores from summed counts: a resample is a matrix product away
        names = sorted({k for case in tallies for k in case})
        per_case = np.array([[case.get(k, 0) for k in names] for case in tallies], dtype=np.int64).reshape(n, len(names))
        totals = _draw_counts(draws, n).astype(np.int64) @ per_case
        single = [numbers(protocol.score_tallies(case, options)) for case in tallies]
        resamples = (numbers(protocol.score_tallies(dict(zip(names, row)), options)) for row in totals.tolist())
    else:
        single = [_scored_alone(protocol, record, options, numbers) for record in records]
        resamples = (numbers(protocol.summarize_resample([records[j] for j in idx], options)) for idx in draws)
    support: dict[str, int] = {}
    for case in single:
        for key in case:
            support[key] = support.get(key, 0) + 1
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


def _tallies(protocol: Any, records: list[dict[str, Any]], options: Any) -> list[dict[str, int]] | None:
    """Every case's tallies, or None when the protocol scores from records (or fails on one)."""
    try:
        tallies = [protocol.tallies(record, options) for record in records]
    except Exception:
        return None
    return tallies if all(t is not None for t in tallies) else None


def _scored_alone(protocol: Any, record: dict[str, Any], options: Any, numbers: Callable[[Any], dict[str, float]]) -> dict[str, float]:
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
