"""The resampling every interval umni prints shares: seeded draws of cases with replacement, within
strata, and the percentile interval of what the draws give.

A benchmark fixes how many cases each category holds, and a headline such as WISE's Overall needs
every category: a draw over all cases may leave one out, and that resample has no Overall. Drawing
each stratum's cases from that stratum alone, as many as the run holds (`stratified_draws`), keeps
every resample scorable and is the bootstrap of a stratified design. With one stratum the draws are
numpy's plain ``integers(0, n, (resamples, n))``, the draws umni made before strata existed.

Cases are drawn in the order the caller gives (intervals and paired comparisons order them by case
id), so two runs of the same cases draw the same resamples: their per-resample figures pair up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: The seed of every bootstrap's draws (intervals, paired comparisons, means over runs).
BOOTSTRAP_SEED = 0
#: An interval needs its statistic defined in at least this share of the resamples.
DEFINED_SHARE = 0.5


def stratified_draws(strata: Sequence[str | None], resamples: int, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """`resamples` rows of case indices (resamples x cases, int32): in each row, the positions of a
    stratum's cases hold cases drawn with replacement from that stratum. Strata are drawn in sorted
    order from one seeded generator, so the draws depend only on the strata and their order."""
    import numpy as np

    n = len(strata)
    rng = np.random.default_rng(seed)
    groups: dict[str, list[int]] = {}
    for index, stratum in enumerate(strata):
        groups.setdefault(stratum or "", []).append(index)
    if len(groups) <= 1:
        # int32 draws are the same numbers as the default int64 ones (one bounded 32-bit stream), in half the memory
        return rng.integers(0, n, (resamples, n), dtype=np.int32)
    draws = np.empty((resamples, n), dtype=np.int32)
    for name in sorted(groups):
        members = np.array(groups[name], dtype=np.int32)
        draws[:, members] = members[rng.integers(0, len(members), (resamples, len(members)), dtype=np.int32)]
    return draws


def draw_counts(draws: np.ndarray, n: int) -> np.ndarray:
    """How often each case was drawn in each resample (resamples x cases, float)."""
    import numpy as np

    counts = np.zeros((draws.shape[0], n))
    np.add.at(counts, (np.arange(draws.shape[0])[:, None], draws), 1.0)
    return counts


def percentile_interval(values: np.ndarray, resamples: int | None = None) -> tuple[float, float] | None:
    """The 2.5 and 97.5 percentiles of the resamples' values that are defined (not NaN); None when
    fewer than `DEFINED_SHARE` of the `resamples` (default: all the values given) define it."""
    import numpy as np

    defined = values[~np.isnan(values)]
    if not len(defined) or len(defined) < DEFINED_SHARE * (len(values) if resamples is None else resamples):
        return None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(low), float(high)
