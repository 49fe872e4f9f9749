"""Paired comparisons of runs on the cases they share: each pair's headline difference, its 95 %
interval and a paired test; over several runs, every pair with Holm-adjusted p-values.

Two models scored on the same cases are not independent samples: comparing their intervals side
by side overstates the uncertainty of the difference. Both runs' headlines are taken apart over the
shared cases (`contributions.case_parts`: the protocol's own weighted sum of means, checked to
give its figure), and then:

* the interval resamples the shared cases (the same draws for both runs, seeded, within the
  protocol's strata so that a headline needing every category is defined in every resample) and
  takes the 2.5 and 97.5 percentiles of headline(A) − headline(B);
* the test is the paired permutation test of `contributions.swap_test`: each case's two parts
  swapped at random between the runs, every swap scored by the headline's formula.

Where either cannot be made, the comparison says why in one line instead (a Fréchet distance has no
per-case parts; two runs that share one case have nothing to resample). Several runs: every pair of
one protocol, p-values adjusted for the number of pairs by Holm's step-down method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from umni.protocols.protocol import get_protocol
from umni.reporting.contributions import CaseParts, case_parts, stratum_of, swap_test
from umni.reporting.resampling import BOOTSTRAP_SEED, percentile_interval, stratified_draws
from umni.reporting.runset import Run, as_number, protocol_options
from umni.reporting.tables import Cell, Row, Table, csv_text
from umni.util.errors import InputError

#: Resamples of the paired bootstrap and random swaps of the permutation test.
PAIRED_RESAMPLES = 1000
PERMUTATIONS = 9999
#: The metric a paired comparison compares: the headline every protocol's summary has.
HEADLINE = "overall"


@dataclass(frozen=True)
class PairedComparison:
    """Run `a` minus run `b` on the `cases` both hold; a missing figure comes with its reason."""

    a: str
    b: str
    protocol: str
    cases: int
    a_only: int
    b_only: int
    a_value: float | None = None
    b_value: float | None = None
    difference: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    #: the p-value adjusted for the pairs compared together (Holm); the p-value itself for one pair
    p_adjusted: float | None = None
    test: str = ""
    strata: int = 1
    no_difference: str | None = None
    no_interval: str | None = None
    no_test: str | None = None
    #: how the per-case parts were made when the protocol states none
    note: str = ""
    metric: str = HEADLINE

    def text(self) -> str:
        """The comparison in a few lines: the difference with interval and p-value, each missing
        figure's reason, and which run is A and which B."""
        lines = [self._headline_line()]
        for label, reason in (("no interval", self.no_interval), ("no test", self.no_test)):
            if reason and self.difference is not None:
                lines.append(f"  {label}: {reason}")
        if self.note:
            lines.append(f"  note: {self.note}")
        if self.a_only or self.b_only:
            lines.append(f"  left out: {self.a_only} cases only in A, {self.b_only} only in B")
        return "\n".join([*lines, f"  A = {self.a}", f"  B = {self.b}"])

    def _headline_line(self) -> str:
        if self.difference is None or self.a_value is None or self.b_value is None:
            return f"{self.metric}: no paired comparison: {self.no_difference}"
        d = _decimals(self.a_value, self.b_value)
        text = f"{self.metric}: A {self.a_value:.{d}f} − B {self.b_value:.{d}f} = {self.difference:+.{d}f}"
        if self.ci is not None:
            within = f", resampled within {self.strata} strata" if self.strata > 1 else ""
            text += f", 95 % CI [{self.ci[0]:+.{d}f}, {self.ci[1]:+.{d}f}] (paired bootstrap over {self.cases} shared cases{within})"
        else:
            text += f" over {self.cases} shared cases"
        if self.p_value is not None:
            text += f"; p = {_p(self.p_value)} ({self.test})"
        return text

    def cell(self) -> str:
        """The comparison as one matrix cell: difference, interval, adjusted p (or why none)."""
        if self.difference is None or self.a_value is None or self.b_value is None:
            return "—"
        d = _decimals(self.a_value, self.b_value)
        text = f"{self.difference:+.{d}f}"
        if self.ci is not None:
            text += f" [{self.ci[0]:+.{d}f}, {self.ci[1]:+.{d}f}]"
        if self.p_adjusted is not None:
            text += f" p = {_p(self.p_adjusted)}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "protocol": self.protocol, "metric": self.metric, "cases": self.cases, "a_value": self.a_value,
                "b_value": self.b_value, "difference": self.difference, "ci": list(self.ci) if self.ci else None, "p_value": self.p_value,
                "p_adjusted": self.p_adjusted, "test": self.test, "strata": self.strata, "a_only": self.a_only, "b_only": self.b_only,
                "no_difference": self.no_difference, "no_interval": self.no_interval, "no_test": self.no_test, "note": self.note}


#: The columns of the pairs' CSV: one row per pair, numbers as numbers, reasons as text.
CSV_HEADER = ["protocol", "metric", "a", "b", "cases", "a_value", "b_value", "difference", "ci_low", "ci_high", "p_value",
              "p_holm", "test", "a_only", "b_only", "no_difference", "no_interval", "no_test"]


@dataclass
class PairedMatrix:
    """Every pair of one protocol's runs (best headline first), p-values Holm-adjusted over them."""

    protocol: str
    labels: list[str]
    pairs: list[PairedComparison] = field(default_factory=list)

    def table(self) -> Table:
        """The upper triangle as a table: row run − column run in each cell."""
        cells = {(p.a, p.b): p for p in self.pairs}
        table = Table(f"{self.protocol} · paired comparisons of {HEADLINE}", self.protocol, ["row − column"], self.labels[1:],
                      note=self._note(), legend=False)
        for row in self.labels[:-1]:
            texts = [Cell(cells[(row, column)].cell()) if (row, column) in cells else Cell("", applies=True) for column in self.labels[1:]]
            table.rows.append(Row(row, [row], texts, None, None))
        return table

    def _note(self) -> str:
        tests = sorted({p.test for p in self.pairs if p.test})
        parts = [f"each cell: row run − column run on the cases both hold, its 95 % paired bootstrap interval and p-value "
                 f"({'; '.join(tests) or 'paired permutation test'}), Holm-adjusted over the {sum(p.p_value is not None for p in self.pairs)} "
                 f"pairs tested"]
        for p in self.pairs:
            for label, reason in (("no comparison", p.no_difference), ("no interval", p.no_interval), ("no test", p.no_test)):
                if reason and (label == "no comparison" or p.difference is not None):
                    parts.append(f"{p.a} vs {p.b}: {label}: {reason}")
        return "; ".join(parts)

    def markdown(self) -> str:
        if len(self.pairs) == 1:
            return self.pairs[0].text()
        return self.table().markdown(plain=True)


def compare_runs(a: Run, b: Run, key: str = HEADLINE) -> PairedComparison:
    """Compare run `a` with run `b` (same protocol) on the cases both hold."""
    if key != HEADLINE:
        raise ValueError(f"paired comparisons compare the headline ('{HEADLINE}'), not '{key}'")
    name = a.summary.protocol
    if name != b.summary.protocol:
        raise InputError(f"a paired comparison needs two runs of one protocol, not {name} and {b.summary.protocol}", path=b.path)
    protocol = get_protocol(str(name))
    options_a, options_b = protocol_options(protocol, a.summary.options), protocol_options(protocol, b.summary.options)
    records_a = {str(r.get("case_id")): r for r in a.records()}
    records_b = {str(r.get("case_id")): r for r in b.records()}
    shared = sorted(set(records_a) & set(records_b))
    base = PairedComparison(a.label or str(a.path), b.label or str(b.path), str(name), len(shared),
                            len(set(records_a) - set(records_b)), len(set(records_b) - set(records_a)))
    if len(shared) < 2:
        return replace(base, no_difference=f"the two runs share {len(shared)} case(s); a paired comparison needs at least 2")
    list_a, list_b = [records_a[c] for c in shared], [records_b[c] for c in shared]
    figures = []
    for records, options, run in ((list_a, options_a, a), (list_b, options_b, b)):
        try:
            figures.append(_headline(protocol.summarize(records, options)))
        except Exception as exc:
            return replace(base, no_difference=f"{run.label or run.path}: the protocol could not score the shared cases ({type(exc).__name__}: {exc})")
    value_a, value_b = figures
    if value_a is None or value_b is None:
        label, records, options = ("A", list_a, options_a) if value_a is None else ("B", list_b, options_b)
        why = case_parts(protocol, options, records, None)
        return replace(base, a_value=value_a, b_value=value_b, no_difference=f"{label}: {why}")
    comparison = replace(base, a_value=value_a, b_value=value_b, difference=value_a - value_b)
    strata = [stratum_of(protocol, r, options_a) for r in list_a]
    comparison = replace(comparison, strata=len(set(strata)))
    parts_a = case_parts(protocol, options_a, list_a, value_a, strata)
    parts_b = case_parts(protocol, options_b, list_b, value_b, strata)
    reason = next((f"{label}: {p}" for label, p in (("A", parts_a), ("B", parts_b)) if isinstance(p, str)), None)
    if reason is not None:
        return replace(comparison, no_interval=reason, no_test=reason)
    assert isinstance(parts_a, CaseParts) and isinstance(parts_b, CaseParts)
    exact_a, exact_b = parts_a.headline(), parts_b.headline()
    assert exact_a is not None and exact_b is not None
    comparison = replace(comparison, difference=exact_a - exact_b, note=parts_a.note)
    components = sorted(set(parts_a.components) | set(parts_b.components))
    parts_a, parts_b = parts_a.aligned(components), parts_b.aligned(components)
    comparison = replace(comparison, **paired_interval(parts_a, parts_b))
    if list(parts_a.weights) != list(parts_b.weights):
        differ = [k for k, wa, wb in zip(components, parts_a.weights, parts_b.weights) if wa != wb]
        return replace(comparison, no_test=f"the two headlines weight their components differently ({', '.join(differ[:6])}): no swap of "
                       "their cases keeps both formulas")
    p_value = swap_test(parts_a, parts_b, PERMUTATIONS)
    exact = len(shared) < 63 and 2 ** len(shared) <= PERMUTATIONS
    test = "paired permutation test, " + (f"all {2 ** len(shared)} swaps" if exact else f"{PERMUTATIONS} seeded random swaps")
    return replace(comparison, p_value=p_value, p_adjusted=p_value, test=test)


def compare_all(runs: Sequence[Run]) -> list[PairedMatrix]:
    """Every pair of runs of each protocol (runs best headline first in each), with Holm-adjusted
    p-values over the pairs of that protocol."""
    by_protocol: dict[str, list[Run]] = {}
    for run in runs:
        by_protocol.setdefault(run.summary.protocol, []).append(run)
    matrices = []
    for name in sorted(by_protocol):
        members = sorted(by_protocol[name], key=lambda r: -(as_number(r.summary.scores.get(HEADLINE)) or -1e300))
        if len(members) < 2:
            continue
        pairs = [compare_runs(x, y) for i, x in enumerate(members) for y in members[i + 1:]]
        adjusted = holm([p.p_value for p in pairs])
        matrices.append(PairedMatrix(name, [r.label or str(r.path) for r in members],
                                     [replace(p, p_adjusted=q) for p, q in zip(pairs, adjusted)]))
    if not matrices:
        raise InputError("--paired needs at least two runs of one protocol")
    return matrices


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values given (None: no test, left out and kept None):
    the i-th smallest of m is multiplied by m − i + 1, capped at 1, and made no smaller than the
    adjusted ones before it. SciPy offers only false-discovery-rate adjustments."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


def pairs_csv(matrices: Sequence[PairedMatrix]) -> str:
    """One row per pair (numbers as numbers, a missing one empty, its reason beside)."""
    return csv_text(CSV_HEADER, ([p.protocol, p.metric, p.a, p.b, p.cases, p.a_value, p.b_value, p.difference, p.ci[0] if p.ci else None,
                                  p.ci[1] if p.ci else None, p.p_value, p.p_adjusted, p.test, p.a_only, p.b_only, p.no_difference,
                                  p.no_interval, p.no_test] for matrix in matrices for p in matrix.pairs))


def paired_interval(a: CaseParts, b: CaseParts) -> dict[str, Any]:
    """The paired bootstrap interval of headline(a) − headline(b), or why there is none."""
    draws = stratified_draws(a.strata, PAIRED_RESAMPLES, BOOTSTRAP_SEED)
    differences = a.resampled(draws) - b.resampled(draws)
    interval = percentile_interval(differences)
    if interval is None:
        defined = int((differences == differences).sum())
        return {"no_interval": f"the difference is defined in only {defined} of {PAIRED_RESAMPLES} resamples (a component drew no scored case)"}
    return {"ci": interval}


def _headline(scores: Any) -> float | None:
    value = scores.get(HEADLINE) if isinstance(scores, dict) else getattr(scores, HEADLINE, None)
    return as_number(value)


def _decimals(*values: float) -> int:
    """Three decimals for 0–1 scores (WISE, GIR-Bench), two for 0–100 ones."""
    return 3 if all(abs(v) <= 1.0 for v in values) else 2


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}".rstrip("0").rstrip(".") if p < 1 else "1"
