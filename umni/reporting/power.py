"""How many cases a comparison of two models needs to tell a given headline difference apart.

The test assumed is the two-sided z-test of the headline difference of two runs on the same n
cases (the normal approximation that the paired bootstrap and the permutation test of `paired`
approach at benchmark sizes): with σ²_d the variance of one case's share of the difference,
n = (z₁₋α/₂ + z_power)² · σ²_d / δ². σ²_d comes from the headline's per-case influence values
(`contributions.CaseParts.influence`), within the protocol's strata as the bootstrap draws, scaled
to one case: so a weighted headline (WISE's Overall) counts each category's cases at their weight,
and n is cases drawn in the run's category proportions.

From one run, the second model is assumed to vary per case as much as this one and independently of
it: σ²_d = 2σ². Models on the same cases usually agree more than that (a positive correlation), so
the answer is on the safe side. Given two runs of the same cases, σ²_d is measured on their paired
differences and nothing is assumed about the second model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from umni.protocols.protocol import get_protocol
from umni.reporting.contributions import CaseParts, case_parts, stratified_variance
from umni.reporting.runset import Run, as_number, protocol_options
from umni.store.runfolder import CaseRecord
from umni.util.errors import InputError


@dataclass(frozen=True)
class PowerEstimate:
    """Cases per model needed to detect `delta` in the headline (None with the reason why not)."""

    run: str
    protocol: str
    cases: int
    headline: float | None
    delta: float
    alpha: float
    power: float
    needed: int | None = None
    #: variance of one case's share of the difference (σ²_d)
    per_case_variance: float | None = None
    paired_with: str | None = None
    reason: str | None = None
    note: str = ""

    def text(self) -> str:
        what = f"a difference of {self.delta:g} in {self.protocol}'s overall at α = {self.alpha:g} (two-sided) with {self.power:.0%} power"
        if self.needed is None:
            return f"power: no estimate for {what}: {self.reason}\n  run = {self.run}"
        measured = (f"the variance of the paired differences between this run and {self.paired_with}" if self.paired_with
                    else "this run's per-case variance, the second model assumed to vary as much and independently (ρ = 0: "
                    "models on the same cases usually correlate positively, so fewer cases usually suffice)")
        lines = [f"power: {self.needed} cases per model (the same cases for both) to detect {what}",
                 f"  this run: {self.cases} cases, overall {self.headline:g}; σ²_d = {self.per_case_variance:.4g} per case",
                 "  test: two-sided z-test of the headline difference on paired cases, n = (z₁₋α/₂ + z_power)² · σ²_d / δ²",
                 f"  σ²_d from {measured}; cases drawn in the run's category proportions"]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join([*lines, f"  run = {self.run}"])


def power_estimate(run: Run, delta: float, *, alpha: float = 0.05, power: float = 0.8, other: Run | None = None) -> PowerEstimate:
    """Cases per model to detect `delta` at `alpha` (two-sided) with `power`, from `run` (and the
    paired differences with `other`, a run of the same protocol, when given)."""
    from scipy.stats import norm

    if not delta > 0 or not math.isfinite(delta):
        raise InputError(f"--delta must be a positive difference on the headline's scale, not {delta}")
    for name, value in (("--alpha", alpha), ("--power", power)):
        if not 0 < value < 1:
            raise InputError(f"{name} must lie between 0 and 1, not {value}")
    name = run.summary.protocol
    if other is not None and other.summary.protocol != name:
        raise InputError(f"power from paired differences needs two runs of one protocol, not {name} and {other.summary.protocol}",
                         path=other.path)
    protocol = get_protocol(name)
    records = sorted(run.records(), key=lambda r: str(r.get("case_id")))
    if other is not None:
        theirs = {str(r.get("case_id")): r for r in other.records()}
        records = [r for r in records if str(r.get("case_id")) in theirs]
    headline = as_number(run.summary.scores.get("overall"))
    base = PowerEstimate(run.label or str(run.path), name, len(records), headline, delta, alpha, power,
                         paired_with=(other.label or str(other.path)) if other is not None else None)
    if len(records) < 2:
        return _refused(base, f"{len(records)} case(s) to measure a variance on; at least 2 are needed")
    options = protocol_options(protocol, run.summary.options)
    figure = _figure(protocol, options, records) if other is not None else headline
    parts = case_parts(protocol, options, records, figure)
    if isinstance(parts, str):
        return _refused(base, parts)
    variance = _difference_variance(parts, protocol, other, records)
    if isinstance(variance, str):
        return _refused(base, variance)
    if variance <= 0:
        return _refused(base, "the per-case figures do not vary on these cases, so no variance can be measured")
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    needed = math.ceil(z * z * variance / (delta * delta))
    return PowerEstimate(**{**base.__dict__, "needed": max(needed, 2), "per_case_variance": variance, "note": parts.note,
                            "headline": parts.headline() if other is not None else headline})


def _difference_variance(parts: CaseParts, protocol: Any, other: Run | None, records: list[CaseRecord]) -> float | str:
    """σ²_d per case: twice the run's own (one run), or the paired differences' (two runs)."""
    if other is None:
        return 2 * parts.n * parts.variance()
    theirs = {str(r.get("case_id")): r for r in other.records()}
    mine = [theirs[c] for c in parts.case_ids]
    options = protocol_options(protocol, other.summary.options)
    other_parts = case_parts(protocol, options, mine, _figure(protocol, options, mine), parts.strata)
    if isinstance(other_parts, str):
        return f"{other.label or other.path}: {other_parts}"
    components = sorted(set(parts.components) | set(other_parts.components))
    a, b = parts.aligned(components), other_parts.aligned(components)
    return parts.n * stratified_variance(a.influence() - b.influence(), parts.strata)


def _figure(protocol: Any, options: Any, records: list[CaseRecord]) -> float | None:
    scores = protocol.summarize(records, options)
    return as_number(scores.get("overall") if isinstance(scores, dict) else getattr(scores, "overall", None))


def _refused(base: PowerEstimate, reason: str) -> PowerEstimate:
    return PowerEstimate(**{**base.__dict__, "reason": reason})
