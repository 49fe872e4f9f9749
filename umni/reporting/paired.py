"""A paired comparison of two runs on the same cases: the headline difference, its interval, and
a paired test.

Two models scored on the same cases are not independent samples: comparing their intervals side
by side overstates the uncertainty of the difference. Here the cases both runs hold are resampled
together (the same draw for both runs, seeded), each resample re-scored with the protocol's own
``summarize`` for each run, giving a 95 % percentile interval of ``headline(A) − headline(B)``. The
paired test is a sign-flip permutation test on the per-case headline differences (each case scored
alone by the same formula): under "no difference" each case's difference is as likely negative as
positive; the two-sided p-value counts the sign flips whose mean difference is at least as far
from zero as the observed one (seeded, with the +1 correction so it is never 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from umni.protocols.protocol import get_protocol
from umni.reporting.intervals import BOOTSTRAP_SEED
from umni.reporting.runset import Run, as_number, protocol_options
from umni.store.runfolder import CaseRecord
from umni.util.errors import InputError

#: Resamples of the paired bootstrap and sign flips of the permutation test.
PAIRED_RESAMPLES = 1000
PERMUTATIONS = 10_000


@dataclass(frozen=True)
class PairedComparison:
    """`a` minus `b` on the `cases` both runs hold (their headline `key`, each re-scored on them)."""

    a: str
    b: str
    key: str
    cases: int
    a_value: float
    b_value: float
    difference: float
    ci: tuple[float, float] | None
    p_value: float | None
    a_only: int
    b_only: int

    def text(self) -> str:
        interval = f" [{self.ci[0]:+.2f}, {self.ci[1]:+.2f}]" if self.ci else ""
        p = f"; paired sign-flip test p = {self.p_value:.3g}" if self.p_value is not None else ""
        apart = f"; left out: {self.a_only} cases only in A, {self.b_only} only in B" if self.a_only or self.b_only else ""
        return (f"{self.key}: A {self.a_value:.2f} − B {self.b_value:.2f} = {self.difference:+.2f}{interval} "
                f"(95 % paired bootstrap over {self.cases} shared cases){p}{apart}\n  A = {self.a}\n  B = {self.b}")

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "metric": self.key, "cases": self.cases, "a_value": self.a_value, "b_value": self.b_value,
                "difference": self.difference, "ci": list(self.ci) if self.ci else None, "p_value": self.p_value,
                "a_only": self.a_only, "b_only": self.b_only}


def compare_runs(a: Run, b: Run, key: str = "overall") -> PairedComparison:
    """Compare run `a` with run `b` (same protocol) on the cases both hold."""
    name = a.summary.protocol
    if name != b.summary.protocol:
        raise InputError(f"a paired comparison needs two runs of one protocol, not {name} and {b.summary.protocol}", path=b.path)
    protocol = get_protocol(str(name))
    options_a, options_b = protocol_options(protocol, a.summary.options), protocol_options(protocol, b.summary.options)
    records_a = {str(r.get("case_id")): r for r in a.records()}
    records_b = {str(r.get("case_id")): r for r in b.records()}
    shared = sorted(set(records_a) & set(records_b))
    if len(shared) < 2:
        raise InputError(f"the two runs share {len(shared)} case(s): a paired comparison needs at least 2", path=b.path)
    list_a, list_b = [records_a[c] for c in shared], [records_b[c] for c in shared]

    def score(records: list[CaseRecord], options: Any) -> float | None:
        try:
            return as_number(protocol.summarize(records, options).get(key))
        except Exception:  # a scorer that refuses repeated cases: the caller falls back to per-case means
            return None

    value_a, value_b = score(list_a, options_a), score(list_b, options_b)
    if value_a is None or value_b is None:
        raise InputError(f"no '{key}' score for both runs on their {len(shared)} shared cases")
    per_a = np.array([np.nan if (v := score([r], options_a)) is None else v for r in list_a])
    per_b = np.array([np.nan if (v := score([r], options_b)) is None else v for r in list_b])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    n = len(shared)
    diffs: list[float] = []
    for _ in range(PAIRED_RESAMPLES):
        idx = rng.integers(0, n, n)
        sa, sb = score([list_a[i] for i in idx], options_a), score([list_b[i] for i in idx], options_b)
        if sa is None or sb is None:  # re-scoring repeated cases refused: the per-case headline mean instead
            sa, sb = float(np.nanmean(per_a[idx])), float(np.nanmean(per_b[idx]))
        if not (np.isnan(sa) or np.isnan(sb)):
            diffs.append(sa - sb)
    ci = None
    if len(diffs) >= PAIRED_RESAMPLES // 2:
        low, high = np.percentile(diffs, [2.5, 97.5])
        ci = (round(float(low), 2), round(float(high), 2))
    per_case = per_a - per_b
    per_case = per_case[~np.isnan(per_case)]
    p_value = None
    if len(per_case):
        observed = abs(float(per_case.mean()))
        signs = rng.choice([-1.0, 1.0], size=(PERMUTATIONS, len(per_case)))
        flipped = np.abs((signs * per_case).mean(axis=1))
        p_value = float((np.sum(flipped >= observed - 1e-12) + 1) / (PERMUTATIONS + 1))
    return PairedComparison(a.label or str(a.path), b.label or str(b.path), key, n, round(value_a, 2), round(value_b, 2),
                            round(value_a - value_b, 2), ci, p_value, len(set(records_a) - set(records_b)), len(set(records_b) - set(records_a)))
