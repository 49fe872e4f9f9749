"""A protocol's headline written as a sum over its cases, so that statistics can take it apart.

Every headline of the five papers is a weighted sum of means over components: WISE's Overall weights
its six category means, UmniBench's averages the nine question accuracies, GENIUS's weights the
pooled RC, VC and AQ, AEGIS's is one pooled mean, GIR-Bench's averages its task scores. Written so,

    headline = Σ_k weight_k · (Σ_i value_ik) / (Σ_i count_ik)

each case i adds a (value, count) pair to the components it bears on, and the headline of any
multiset of cases is two sums and a division away, with no record read again: a bootstrap resample
(a count per case), or two runs' cases swapped at random under "no difference" (a paired
permutation test). The same form gives each case's contribution to the headline (its values over the
component totals: they add up to the headline) and the headline's per-case variance (for power).

A protocol states its form in `Protocol.headline_parts`; the reporting layer uses it only where
`HeadlineParts.headline` gives the figure `summarize` gives, to that figure's printed precision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: One case's part: component -> (value it adds, count it adds). A case that bears on a component
#: but has no score there (a failed judge) adds (0, 0) or leaves the component out.
Terms = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class HeadlineParts:
    """The headline of a run's records as ``Σ_k weights[k] · Σ_i value_ik / Σ_i count_ik`` with
    each record's terms (`cases`, in the order of the records). A component without a weight adds
    nothing; a weighted component whose counts sum to 0 leaves the headline undefined (WISE's
    Overall without a score in some category)."""

    weights: Mapping[str, float]
    cases: Sequence[Terms]

    def totals(self) -> dict[str, tuple[float, float]]:
        """Each weighted component's summed value and count."""
        sums = {k: [0.0, 0.0] for k in self.weights}
        for terms in self.cases:
            for k, (value, count) in terms.items():
                if k in sums:
                    sums[k][0] += value
                    sums[k][1] += count
        return {k: (v, c) for k, (v, c) in sums.items()}

    def headline(self) -> float | None:
        """The headline these parts make; None when a weighted component has no count."""
        totals = self.totals()
        if not totals or any(count == 0 for _, count in totals.values()):
            return None
        return sum(self.weights[k] * value / count for k, (value, count) in totals.items())

    def undefined(self) -> list[str]:
        """The weighted components with no count (why `headline` is None)."""
        return [k for k, (_, count) in self.totals().items() if count == 0]
