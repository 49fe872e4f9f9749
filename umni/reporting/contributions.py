"""A run's headline taken apart over its cases: the protocol's `HeadlineParts` as arrays, and what
they give without re-reading a record — the headline of any bootstrap resample, each case's
contribution (they add up to the headline), the per-case variance a power estimate needs, and the
paired permutation test of two runs on the same cases.

The parts are used only where they give the figure the protocol's own `summarize` gives, to that
figure's printed precision (`case_parts`): a protocol whose headline is not a weighted sum of
means (a median, a set statistic) gets no test rather than a wrong one, and the line says why.

The paired test swaps the two runs' parts of each case at random: under "no difference" a case's
two records are exchangeable, so the headline difference of the swapped runs is as likely as the
observed one. Every swap is scored by the headline's own formula (sums and ratios per component),
so a weighted headline (WISE's Overall) is tested as weighted and a case that failed in one run
moves its failure with it. With equal counts in both runs (no failures) this is the sign-flip test
of the per-case contribution differences. Two-sided; exact (every swap) when 2^n swaps are no more
than the permutations asked for, else that many seeded random swaps with the +1 correction (so the
p-value is never 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from umni.protocols.headline import HeadlineParts
from umni.reporting.resampling import BOOTSTRAP_SEED, draw_counts
from umni.reporting.runset import as_number
from umni.store.runfolder import CaseRecord

if TYPE_CHECKING:
    import numpy as np

#: Rows of draw counts or swap masks held at once (x cases): memory stays small at 20,000 cases.
CHUNK = 64
#: The component of the stand-in parts of a protocol that states none: each case's headline alone.
ALONE = "case"


@dataclass(frozen=True)
class CaseParts:
    """`HeadlineParts` of cases in a fixed order (their ids and strata beside), as arrays: `values`
    and `counts` are cases x components, `weights` one per component."""

    case_ids: list[str]
    strata: list[str | None]
    components: list[str]
    weights: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    #: how the parts were made, when not stated by the protocol (said beside any result they give)
    note: str = ""

    @classmethod
    def of(cls, parts: HeadlineParts, case_ids: list[str], strata: list[str | None], note: str = "") -> CaseParts:
        import numpy as np

        components = sorted(parts.weights)
        column = {k: i for i, k in enumerate(components)}
        values, counts = np.zeros((len(parts.cases), len(components))), np.zeros((len(parts.cases), len(components)))
        for row, terms in enumerate(parts.cases):
            for k, (value, count) in terms.items():
                if k in column:
                    values[row, column[k]] += value
                    counts[row, column[k]] += count
        weights = np.array([float(parts.weights[k]) for k in components])
        return cls(case_ids, strata, components, weights, values, counts, note)

    @property
    def n(self) -> int:
        return len(self.case_ids)

    def headline(self) -> float | None:
        value, count = self.values.sum(axis=0), self.counts.sum(axis=0)
        if not len(self.components) or (count == 0).any():
            return None
        return float((self.weights * value / count).sum())

    def resampled(self, draws: np.ndarray) -> np.ndarray:
        """The headline of each resample (rows of case indices); NaN where a weighted component
        drew no count."""
        import numpy as np

        out = np.empty(draws.shape[0])
        for start in range(0, draws.shape[0], CHUNK):
            out[start:start + CHUNK] = self.counted(draw_counts(draws[start:start + CHUNK], self.n))
        return out

    def counted(self, times: np.ndarray) -> np.ndarray:
        """The headline of each row of `times` (rows x cases: how often each case counts, 0 to
        leave it out); NaN where a weighted component gets no count."""
        return _weighted_ratio(self.weights, times @ self.values, times @ self.counts)

    def contributions(self) -> np.ndarray:
        """Each case's contribution: its values over the components' total counts, weighted; they
        add up to the headline."""
        import numpy as np

        count = self.counts.sum(axis=0)
        scale = np.divide(self.weights, count, out=np.zeros_like(self.weights), where=count > 0)
        return self.values @ scale

    def influence(self) -> np.ndarray:
        """Each case's linearised effect on the headline, Σ_k w_k (v_ik − R_k c_ik) / C_k with R_k
        the component's mean and C_k its total count: the headline's variance over n cases is about
        the sum of their squares (within each stratum, about the stratum's own mean)."""
        import numpy as np

        value, count = self.values.sum(axis=0), self.counts.sum(axis=0)
        ratio = np.divide(value, count, out=np.zeros_like(value), where=count > 0)
        scale = np.divide(self.weights, count, out=np.zeros_like(self.weights), where=count > 0)
        return (self.values - self.counts * ratio) @ scale

    def variance(self) -> float:
        """The variance of the headline over these cases (`stratified_variance` of the influence
        values)."""
        return stratified_variance(self.influence(), self.strata)

    def aligned(self, components: list[str]) -> CaseParts:
        """The same parts over `components` (a superset), zero where this run has none."""
        import numpy as np

        index = {k: i for i, k in enumerate(self.components)}
        pick = [index.get(k, -1) for k in components]

        def spread(matrix: np.ndarray) -> np.ndarray:
            out = np.zeros((matrix.shape[0], len(components)))
            for j, i in enumerate(pick):
                if i >= 0:
                    out[:, j] = matrix[:, i]
            return out

        weights = np.array([self.weights[i] if i >= 0 else 0.0 for i in pick])
        return replace(self, components=components, weights=weights, values=spread(self.values), counts=spread(self.counts))


def case_parts(protocol: Any, options: Any, records: Sequence[CaseRecord], figure: float | None,
                   strata: list[str | None] | None = None) -> CaseParts | str:
    """The parts of `records`' headline, checked against `figure` (what `summarize` gives for them);
    a line saying why there are none. A protocol that states no parts gets each case's headline
    scored alone, equally weighted — used only where that gives `figure` too."""
    case_ids = [str(r.get("case_id")) for r in records]
    strata = strata if strata is not None else [stratum_of(protocol, r, options) for r in records]
    try:
        stated = protocol.headline_parts(records, options)
    except Exception as exc:  # a protocol's own parts failing on records of another shape
        return f"the protocol could not take its headline apart over the cases ({type(exc).__name__}: {exc})"
    if isinstance(stated, str):
        return stated
    note = ""
    if stated is None:
        stated = HeadlineParts({ALONE: 1.0}, [{ALONE: (v, 1.0)} if (v := _alone(protocol, options, r)) is not None else {} for r in records])
        note = "the protocol states no parts of its headline: each case's headline scored alone, equally weighted"
    parts = CaseParts.of(stated, case_ids, strata, note)
    value = parts.headline()
    if figure is None:
        return f"no overall on these {len(records)} cases" + (f" (no score for {', '.join(stated.undefined())})" if stated.undefined() else "")
    if value is None or not _agrees(value, figure):
        shown = "none" if value is None else f"{value:.6g}"
        return (f"the per-case parts of the headline do not add up to it ({shown} against {figure:.6g}): "
                + (note if note else "the protocol's headline_parts and summarize disagree"))
    return parts


def stratum_of(protocol: Any, record: CaseRecord, options: Any) -> str | None:
    """The record's stratum (`Protocol.stratum`); None for a record the protocol cannot place (a
    record of another shape is drawn with the unstratified cases rather than stop the statistics)."""
    try:
        return protocol.stratum(record, options)
    except Exception:
        return None


def stratified_variance(values: np.ndarray, strata: Sequence[str | None]) -> float:
    """The variance of the sum of `values` (one per case) when each stratum's cases are drawn from
    that stratum: per stratum n_s/(n_s − 1) times their sum of squares about the stratum's mean (a
    stratum of one case adds nothing: it has no spread to measure)."""
    import numpy as np

    groups: dict[str, list[int]] = {}
    for i, stratum in enumerate(strata):
        groups.setdefault(stratum or "", []).append(i)
    total = 0.0
    for members in groups.values():
        if len(members) > 1:
            part = values[np.array(members, dtype=np.int64)]
            total += len(members) / (len(members) - 1) * float(((part - part.mean()) ** 2).sum())
    return total


def swap_test(a: CaseParts, b: CaseParts, permutations: int, seed: int = BOOTSTRAP_SEED) -> float:
    """Two-sided p-value of the paired permutation test of headline(a) − headline(b), the two runs'
    parts of each case swapped at random (see the module's docstring). `a` and `b` hold the same
    cases in the same order over the same components."""
    import numpy as np

    n = a.n
    total_a, total_b = (a.values.sum(axis=0), a.counts.sum(axis=0)), (b.values.sum(axis=0), b.counts.sum(axis=0))
    observed = abs(_weighted_ratio(a.weights, total_a[0][None], total_a[1][None])[0] - _weighted_ratio(a.weights, total_b[0][None], total_b[1][None])[0])
    value_gap, count_gap = b.values - a.values, b.counts - a.counts
    exact = n < 63 and 2 ** n <= permutations
    rng = np.random.default_rng(seed)
    tolerance = observed * 100 * np.finfo(float).eps  # as scipy's permutation_test: ties count as extreme
    extreme = 0
    rounds = 2 ** n if exact else permutations
    for start in range(0, rounds, CHUNK):
        size = min(CHUNK, rounds - start)
        if exact:
            masks = ((np.arange(start, start + size)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
        else:
            masks = rng.integers(0, 2, (size, n)).astype(float)
        value_a, count_a = total_a[0] + masks @ value_gap, total_a[1] + masks @ count_gap
        value_b, count_b = total_a[0] + total_b[0] - value_a, total_a[1] + total_b[1] - count_a
        gap = _weighted_ratio(a.weights, value_a, count_a) - _weighted_ratio(a.weights, value_b, count_b)
        extreme += int(np.sum(np.abs(gap) >= observed - tolerance))  # NaN (a component emptied) is never extreme
    return extreme / rounds if exact else (extreme + 1) / (permutations + 1)


def _weighted_ratio(weights: np.ndarray, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Σ_k w_k values/counts per row; NaN in a row where a weighted component has no count."""
    import numpy as np

    ratio = np.divide(values, counts, out=np.zeros_like(values), where=counts > 0)
    out = ratio @ weights
    empty = ((counts <= 0) & (weights > 0)[None, :]).any(axis=1)
    out[empty] = np.nan
    return out


def _alone(protocol: Any, options: Any, record: CaseRecord) -> float | None:
    try:
        scores = protocol.summarize_resample([record], options)
    except Exception:
        return None
    overall = scores.get("overall") if isinstance(scores, dict) else getattr(scores, "overall", None)
    return as_number(overall)


def _agrees(value: float, figure: float) -> bool:
    """Whether `value` is `figure` to the figure's printed precision (a summary rounds its figures)."""
    text = repr(float(figure))
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 12
    return math.isclose(value, figure, rel_tol=1e-9, abs_tol=10.0 ** -min(decimals, 12))
