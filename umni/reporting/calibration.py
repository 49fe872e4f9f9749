"""Judge substitution, measured: how a substitute judge's marks relate to those of the judge a paper
used, on the same outputs, and what a run judged by the substitute would score by the paper's judge.

A calibration reads two runs that judged the same outputs (`umni rejudge` of one run, once by each
judge, on a calibration subset of the cases) and, per metric the protocol's judge gives
(`Protocol.judgements`), works out:

* the data type of the marks: **discrete** when every mark of both judges is a whole number and
  there are at most `MAX_LABELS` of them (0–2 marks, Y/N as 0/1, GENIUS's 0/50/100), else
  **continuous** (AEGIS's fraction of Y per case);
* agreement: Cohen's kappa, quadratic-weighted (marks are ordinal: a 0 against a 2 is a worse
  disagreement than a 1 against a 2; with two marks it is the plain kappa), for discrete marks;
  Spearman's rank correlation for both; the share of identical marks;
* the mapping from the substitute's marks to the reference's: for discrete marks the confusion
  matrix and each substitute mark's mean reference mark; for continuous ones the isotonic
  regression of the reference on the substitute (increasing). A mark between the mapping's points
  is interpolated linearly, one beyond them takes the nearest end's value (what isotonic
  regression predicts);
* the transfer error of the headline on the calibration cases: the reference judge's headline
  minus the substitute's as it is (the gap a substitution leaves uncorrected), and minus the
  substitute's mapped (each case mapped by a mapping fitted without it: leave-one-out, so a
  mapping cannot look perfect by fitting the case it maps), each with a paired bootstrap interval
  over the calibration cases (drawn within the protocol's strata).

A run judged by the substitute then gets a reference-judge-equivalent headline: each case's marks
mapped, the record re-scored by the protocol (`Protocol.rejudged`) and the headline made from the
records' parts (`Protocol.headline_parts`). Its interval resamples the run's cases and the
calibration's cases together (each resample refits the mapping), so the calibration's own
uncertainty is in it. It is an estimate, and every place that shows it says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from umni.protocols.protocol import Protocol, get_protocol
from umni.reporting.contributions import CaseParts, case_parts, stratum_of
from umni.reporting.resampling import BOOTSTRAP_SEED, percentile_interval, stratified_draws
from umni.reporting.runset import Run, as_number, protocol_options, run_coverage
from umni.reporting.tables import Cell, Row, Table
from umni.store.completion import require_complete
from umni.store.runfolder import CaseRecord, RoleProvenance, RunFolder
from umni.util.errors import InputError
from umni.util.jsonmodel import JsonModel

if TYPE_CHECKING:
    import numpy as np

#: The version of the calibration file's layout.
CALIBRATION_VERSION = 1
#: Marks that are whole numbers with at most this many distinct values are discrete (a 0–10 scale).
MAX_LABELS = 11
#: Resamples of every calibration bootstrap (percentile intervals, seeded).
CALIBRATION_RESAMPLES = 1000
#: The judge role whose marks a calibration maps.
JUDGE = "judge"

Interval = tuple[float, float] | None


# ------------------------------------------------------------------------------------- the file
class JudgeSide(JsonModel):
    """One of the two runs: where it is, the judge that gave its marks and its headline on the
    calibration cases."""

    optional_sections = frozenset({"provenance"})

    run: str
    spec: str | None
    #: the judge backend's identity as the run recorded it (provider, model, output-relevant settings)
    identity: dict[str, Any]
    headline: float | None
    #: how the judge's marks were made (model, revision, sampling, template hash), where the run recorded it
    provenance: RoleProvenance | None = None


class CalibrationCase(JsonModel):
    """A calibration case's marks by both judges (metric -> mark; a failed judgement left out):
    what the leaderboard's bootstrap draws and refits the mapping from."""

    case_id: str
    stratum: str | None
    reference: dict[str, float]
    substitute: dict[str, float]


class MetricCalibration(JsonModel):
    """Agreement and mapping of one metric's marks (the substitute's mapped onto the reference's)."""

    metric: str
    data: Literal["discrete", "continuous"]
    cases: int
    #: Cohen's kappa, quadratic-weighted (discrete marks only; None where undefined: one judge gave one mark only)
    kappa: float | None
    spearman: float | None
    exact_agreement: float
    #: discrete: the marks either judge gave, the rows and columns of `confusion`
    labels: list[float] | None = None
    #: discrete: how often the substitute gave the row's mark where the reference gave the column's
    confusion: list[list[int]] | None = None
    #: substitute mark -> reference-equivalent mark, interpolated between points, clipped beyond them
    mapping: list[tuple[float, float]]


class TransferError(JsonModel):
    """The headline on the calibration cases by each judge, and how far the substitute's is from
    the reference's, as it is and mapped."""

    optional_sections = frozenset({"no_mapped"})

    reference: float
    substitute: float
    #: reference − substitute, uncorrected, with its paired bootstrap interval
    gap: float
    gap_ci: Interval
    resamples: int
    #: the substitute's headline with each case mapped by a mapping fitted without it
    mapped: float | None
    #: reference − mapped, with its paired bootstrap interval (each case mapped as in `mapped`)
    error: float | None
    error_ci: Interval
    #: why there is no mapped headline (a protocol that cannot re-score a case from mapped marks)
    no_mapped: str | None = None


class Calibration(JsonModel):
    """The calibration file (`umni calibrate --out FILE`)."""

    optional_sections = frozenset({"headline", "no_headline"})

    kind: Literal["umni judge calibration"] = "umni judge calibration"
    version: int = CALIBRATION_VERSION
    protocol: str
    options: dict[str, Any]
    reference: JudgeSide
    substitute: JudgeSide
    metrics: list[MetricCalibration]
    headline: TransferError | None = None
    #: why there is no transfer error of the headline
    no_headline: str | None = None
    cases: list[CalibrationCase]

    def text(self) -> str:
        """What `umni calibrate` prints: per metric the agreement and mapping, then the headline's gap."""
        lines = [f"{self.protocol}: judge calibration on {len(self.cases)} cases",
                 f"  reference: {self.reference.spec} ({self.reference.run})",
                 f"  substitute: {self.substitute.spec} ({self.substitute.run})"]
        for m in self.metrics:
            agreement = [f"{m.data} marks, {m.cases} cases"]
            if m.kappa is not None:
                agreement.append(f"quadratic-weighted kappa {m.kappa:.3f}")
            if m.spearman is not None:
                agreement.append(f"Spearman {m.spearman:.3f}")
            agreement.append(f"exact agreement {m.exact_agreement:.3f}")
            lines.append(f"{m.metric}: " + ", ".join(agreement))
            lines.append("  mapping (substitute -> reference): " + ", ".join(f"{x:g} -> {y:.3g}" for x, y in m.mapping[:12])
                         + (" …" if len(m.mapping) > 12 else ""))
            if m.confusion is not None and m.labels is not None:
                lines.append("  confusion (rows: substitute's mark, columns: reference's): "
                             + "; ".join(f"{label:g}: {row}" for label, row in zip(m.labels, m.confusion)))
        h = self.headline
        if h is None:
            lines.append(f"headline: no transfer error: {self.no_headline}")
        else:
            lines.append(f"headline: reference {h.reference:.4g}, substitute {h.substitute:.4g}: gap {h.gap:+.4g} {_ci(h.gap_ci)}")
            if h.mapped is None or h.error is None:
                lines.append(f"  no mapped headline: {h.no_mapped}")
            else:
                lines.append(f"  substitute mapped (leave-one-out) {h.mapped:.4g}: transfer error {h.error:+.4g} {_ci(h.error_ci)} "
                             f"(bootstrap, {h.resamples} resamples)")
        return "\n".join(lines)


def _ci(ci: Interval, digits: int = 4) -> str:
    return f"95 % CI [{ci[0]:+.{digits}g}, {ci[1]:+.{digits}g}]" if ci is not None else "(no interval)"


def read_calibration(path: Path) -> Calibration:
    """A calibration file; an InputError naming the file when it is not one."""
    try:
        return Calibration.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise InputError(f"cannot read the calibration file ({exc.strerror})", path=path) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"]))
        raise InputError(f"not a calibration file written by `umni calibrate` ({where}: {error['msg']})", path=path) from None


# --------------------------------------------------------------------------------- the mapping
@dataclass(frozen=True)
class MarkMap:
    """A fitted mapping: substitute marks -> reference-equivalent marks, by linear interpolation
    between `xs` (increasing) and `ys`, clipped beyond them."""

    xs: np.ndarray
    ys: np.ndarray

    def __call__(self, values: float | np.ndarray) -> np.ndarray:
        import numpy as np

        return np.interp(values, self.xs, self.ys)


def data_type(values: Sequence[float]) -> Literal["discrete", "continuous"]:
    """Discrete when every value is a whole number and there are at most `MAX_LABELS` of them."""
    whole = all(float(v).is_integer() for v in values)
    return "discrete" if whole and len(set(values)) <= MAX_LABELS else "continuous"


def fit(substitute: np.ndarray, reference: np.ndarray, data: str) -> MarkMap:
    """The mapping of `substitute` marks onto `reference` ones (arrays of equal length, not empty):
    each mark's mean reference mark (discrete), or the isotonic regression (continuous)."""
    import numpy as np

    if data == "discrete":
        xs = np.unique(substitute)
        return MarkMap(xs, np.array([reference[substitute == x].mean() for x in xs]))
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(out_of_bounds="clip").fit(substitute, reference)
    return MarkMap(np.asarray(model.X_thresholds_), np.asarray(model.y_thresholds_))


def _metric(metric: str, substitute: np.ndarray, reference: np.ndarray, data: Literal["discrete", "continuous"]) -> MetricCalibration:
    import numpy as np
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    spearman = None
    if len(set(substitute.tolist())) > 1 and len(set(reference.tolist())) > 1:
        spearman = round(float(stats.spearmanr(substitute, reference)[0]), 4)
    mapping = fit(substitute, reference, data)
    entry = MetricCalibration(
        metric=metric, data=data, cases=len(substitute), kappa=None, spearman=spearman,
        exact_agreement=round(float(np.mean(substitute == reference)), 4),
        mapping=[(float(x), round(float(y), 6)) for x, y in zip(mapping.xs, mapping.ys)],
    )
    if data == "discrete":
        labels = sorted(set(substitute.tolist()) | set(reference.tolist()))
        index = {label: i for i, label in enumerate(labels)}
        confusion = [[0] * len(labels) for _ in labels]
        for s, r in zip(substitute.tolist(), reference.tolist()):
            confusion[index[s]][index[r]] += 1
        kappa = None
        if len(labels) > 1:
            value = cohen_kappa_score([int(v) for v in reference], [int(v) for v in substitute], labels=[int(v) for v in labels],
                                      weights="quadratic")
            kappa = None if math.isnan(value) else round(float(value), 4)
        entry = entry.model_copy(update={"labels": labels, "confusion": confusion, "kappa": kappa})
    return entry


class _Pairs:
    """The calibration cases' marks as arrays per metric (NaN where a judge has none), for refits."""

    def __init__(self, cases: Sequence[CalibrationCase], metrics: Sequence[MetricCalibration]) -> None:
        import numpy as np

        self.data = {m.metric: m.data for m in metrics}
        self.substitute = {m: np.array([c.substitute.get(m, math.nan) for c in cases]) for m in self.data}
        self.reference = {m: np.array([c.reference.get(m, math.nan) for c in cases]) for m in self.data}

    def fit(self, rows: np.ndarray) -> dict[str, MarkMap] | None:
        """The mappings fitted on the cases at `rows` (indices, repeats allowed); None when a metric
        has no case with both marks among them."""
        import numpy as np

        maps = {}
        for metric, data in self.data.items():
            s, r = self.substitute[metric][rows], self.reference[metric][rows]
            both = ~(np.isnan(s) | np.isnan(r))
            if not both.any():
                return None
            maps[metric] = fit(s[both], r[both], data)
        return maps


# ----------------------------------------------------------------------------- the two runs
def _judgements(protocol: Any, record: CaseRecord) -> dict[str, float]:
    return {k: float(v) for k, v in protocol.judgements(record).items() if v is not None and math.isfinite(float(v))}


def _read_run(path: Path) -> tuple[Run, list[CaseRecord]]:
    folder = RunFolder(path)
    if not folder.summary_json.exists():
        raise InputError("not a finished umni run (no summary.json)", path=path)
    require_complete(path)
    run = Run(folder.read_summary(), path)
    return run, sorted(run.records(), key=lambda r: str(r.get("case_id")))


def generated_images(record: CaseRecord) -> list[tuple[str, str]]:
    """The (node, image key) of every image the case's model side made (not its judge's): what two
    runs that judged the same outputs must share."""
    found = []
    for entry in record.get("transcript") or []:
        image = (entry.get("reply") or {}).get("image")
        if image and entry.get("role") != JUDGE:
            found.append((entry["node"], image))
    return sorted(found)


def _same_outputs(reference: Path, ref_records: list[CaseRecord], substitute: Path, sub_records: list[CaseRecord]) -> None:
    """Refuse two runs that did not judge the same cases' same outputs, naming the first case that differs."""
    ref_ids = [str(r.get("case_id")) for r in ref_records]
    sub_ids = [str(r.get("case_id")) for r in sub_records]
    if ref_ids != sub_ids:
        only = sorted(set(ref_ids) ^ set(sub_ids))
        where = reference if only and only[0] in ref_ids else substitute
        raise InputError(f"the two runs hold different cases (case {only[0]} is only in {where}); calibrate with two runs that "
                         "judged the same outputs: `umni rejudge RUN --role judge=SPEC` once per judge", path=where)
    for ref, sub in zip(ref_records, sub_records):
        a, b = generated_images(ref), generated_images(sub)
        if a != b:
            differing = next((f"node {x[0]}: {x[1][:12]}… against {y[1][:12]}…" for x, y in zip(a, b) if x != y),
                             f"{len(a)} images against {len(b)}")
            raise InputError(f"case {ref.get('case_id')}: the two runs judged different images ({differing}); calibrate with two "
                             "runs that judged the same outputs: `umni rejudge RUN --role judge=SPEC` once per judge", path=substitute)


def _side(run: Run, path: Path, headline: float | None) -> JudgeSide:
    summary = run.summary
    provenance = summary.provenance.roles.get(JUDGE) if summary.provenance is not None else None
    return JudgeSide(run=str(path), spec=summary.bindings.get(JUDGE), identity=dict(summary.backends.get(JUDGE) or {}), headline=headline,
                     provenance=provenance)


def _parts(protocol: Any, options: Any, records: Sequence[CaseRecord], strata: list[str | None]) -> CaseParts | str:
    """The headline of `records` (mapped or not) taken apart over them, or why it cannot be."""
    try:
        stated = protocol.headline_parts(records, options)
    except Exception as exc:
        return f"the protocol could not take its headline apart over the cases ({type(exc).__name__}: {exc})"
    if stated is None:
        return f"protocol '{protocol.name}' does not state its headline as a sum over cases (Protocol.headline_parts)"
    if isinstance(stated, str):
        return stated
    return CaseParts.of(stated, [str(r.get("case_id")) for r in records], strata)


def _no_rescoring(protocol: Any) -> str | None:
    """Why the protocol cannot re-score a case from mapped marks, or None when it can."""
    if type(protocol).rejudged is Protocol.rejudged:
        return f"protocol '{protocol.name}' cannot re-score a case from mapped marks (Protocol.rejudged), so it has no calibrated headline"
    return None


def _mapped(protocol: Any, options: Any, records: Sequence[CaseRecord], marks: Sequence[dict[str, float]],
            maps: dict[str, MarkMap]) -> list[CaseRecord]:
    """The records with every mark mapped by `maps` (marks of metrics the maps do not cover kept)."""
    import numpy as np

    columns = {}  # each metric's marks mapped in one call, read back case by case
    for metric, mapping in maps.items():
        values = np.array([judged.get(metric, math.nan) for judged in marks])
        columns[metric] = mapping(np.nan_to_num(values)).tolist()
    out = []
    for i, (record, judged) in enumerate(zip(records, marks)):
        mapped = {k: columns[k][i] if k in columns else v for k, v in judged.items()}
        new = protocol.rejudged(record, mapped, options)
        if new is None:
            raise InputError(f"protocol '{protocol.name}' cannot re-score a case from mapped marks (Protocol.rejudged), "
                             "so it has no reference-judge-equivalent headline")
        out.append(new)
    return out


def calibrate(reference: Path, substitute: Path) -> Calibration:
    """The calibration of the judge of run `substitute` against that of run `reference` (two runs
    that judged the same outputs); InputError naming what stands in the way."""
    import numpy as np

    ref_run, ref_records = _read_run(reference)
    sub_run, sub_records = _read_run(substitute)
    name = ref_run.summary.protocol
    if sub_run.summary.protocol != name:
        raise InputError(f"the reference run is {name}, the substitute run {sub_run.summary.protocol}: a calibration compares one "
                         "protocol's judges", path=substitute)
    if ref_run.summary.options != sub_run.summary.options:
        differ = sorted(k for k in set(ref_run.summary.options) | set(sub_run.summary.options)
                        if ref_run.summary.options.get(k) != sub_run.summary.options.get(k))
        raise InputError(f"the two runs set the protocol's options differently ({', '.join(differ)}); their marks are not on one scale",
                         path=substitute)
    _same_outputs(reference, ref_records, substitute, sub_records)
    protocol = get_protocol(name)
    options = protocol_options(protocol, ref_run.summary.options)
    ref_marks = [_judgements(protocol, r) for r in ref_records]
    sub_marks = [_judgements(protocol, r) for r in sub_records]
    strata = [stratum_of(protocol, r, options) for r in ref_records]
    cases = [CalibrationCase(case_id=str(r.get("case_id")), stratum=s, reference=a, substitute=b)
             for r, s, a, b in zip(ref_records, strata, ref_marks, sub_marks)]
    metrics = []
    for metric in sorted({k for c in cases for k in c.reference} & {k for c in cases for k in c.substitute}):
        both = [(c.substitute[metric], c.reference[metric]) for c in cases if metric in c.substitute and metric in c.reference]
        s, r = np.array([p[0] for p in both]), np.array([p[1] for p in both])
        metrics.append(_metric(metric, s, r, data_type([*s.tolist(), *r.tolist()])))
    if not metrics:
        raise InputError(f"no case has a mark by both judges (protocol '{name}' reports its marks through Protocol.judgements)", path=substitute)
    calibration = Calibration(protocol=name, options=dict(ref_run.summary.options),
                              reference=_side(ref_run, reference, as_number(ref_run.summary.scores.get("overall"))),
                              substitute=_side(sub_run, substitute, as_number(sub_run.summary.scores.get("overall"))),
                              metrics=metrics, cases=cases)
    found = _transfer_error(protocol, options, ref_run, ref_records, sub_run, sub_records, calibration)
    if isinstance(found, str):
        return calibration.model_copy(update={"no_headline": found})
    return calibration.model_copy(update={"headline": found})


def _transfer_error(protocol: Any, options: Any, ref_run: Run, ref_records: list[CaseRecord], sub_run: Run, sub_records: list[CaseRecord],
                    calibration: Calibration) -> TransferError | str:
    import numpy as np

    strata = [c.stratum for c in calibration.cases]
    parts = []
    for run, records in ((ref_run, ref_records), (sub_run, sub_records)):
        figure = as_number(run.summary.scores.get("overall"))
        found = case_parts(protocol, options, records, figure, strata)
        if isinstance(found, str):
            return f"{run.path}: {found}"
        parts.append(found)
    ref_parts, sub_parts = parts
    reference, substitute = ref_parts.headline(), sub_parts.headline()
    assert reference is not None and substitute is not None
    draws = stratified_draws(strata, CALIBRATION_RESAMPLES, BOOTSTRAP_SEED)
    reference_drawn = ref_parts.resampled(draws)
    gap = TransferError(reference=reference, substitute=substitute, gap=reference - substitute,
                        gap_ci=percentile_interval(reference_drawn - sub_parts.resampled(draws)), resamples=CALIBRATION_RESAMPLES,
                        mapped=None, error=None, error_ci=None)
    if (why := _no_rescoring(protocol)) is not None:
        return gap.model_copy(update={"no_mapped": why})
    pairs = _Pairs(calibration.cases, calibration.metrics)
    sub_marks = [c.substitute for c in calibration.cases]
    n = len(calibration.cases)
    # leave-one-out: each case mapped by a mapping fitted on the others
    loo = []
    for i in range(n):
        maps = pairs.fit(np.array([j for j in range(n) if j != i], dtype=np.int64))
        if maps is None:
            return gap.model_copy(update={"no_mapped": "too few cases with marks by both judges to fit a mapping without each of them"})
        loo += _mapped(protocol, options, sub_records[i:i + 1], sub_marks[i:i + 1], maps)
    mapped_parts = _parts(protocol, options, loo, strata)
    if isinstance(mapped_parts, str):
        return gap.model_copy(update={"no_mapped": mapped_parts})
    mapped = mapped_parts.headline()
    if mapped is None:
        return gap.model_copy(update={"no_mapped": "the mapped marks leave the headline undefined"})
    return gap.model_copy(update={"mapped": mapped, "error": reference - mapped,
                                  "error_ci": percentile_interval(reference_drawn - mapped_parts.resampled(draws))})


def write_calibration(calibration: Calibration, path: Path) -> None:
    from umni.store.atomic import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(calibration.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- a run's calibrated headline
@dataclass(frozen=True)
class CalibratedHeadline:
    """A run's reference-judge-equivalent headline (an estimate) with its interval, or why none."""

    value: float | None
    ci: Interval
    #: the run's cases that are calibration cases too
    overlap: int
    reason: str | None = None


def check_applies(calibration: Calibration, run: Run, source: Path | str) -> None:
    """Refuse a calibration made for another protocol, other protocol options or another
    substitute judge than the run's judge, naming both."""
    where = run.path or run.label
    if calibration.protocol != run.summary.protocol:
        raise InputError(f"the calibration {source} was made for protocol '{calibration.protocol}'; run {where} is "
                         f"'{run.summary.protocol}'", path=source)
    if calibration.options != run.summary.options:
        differ = sorted(k for k in set(calibration.options) | set(run.summary.options)
                        if calibration.options.get(k) != run.summary.options.get(k))
        raise InputError(f"the calibration {source} was made with other {calibration.protocol} options than run {where} "
                         f"({', '.join(f'{k}: {calibration.options.get(k)} against {run.summary.options.get(k)}' for k in differ)})", path=source)
    judge = dict(run.summary.backends.get(JUDGE) or {})
    if not judge or _canonical(judge) != _canonical(calibration.substitute.identity):
        raise InputError(f"the calibration {source} maps the marks of judge {calibration.substitute.spec} "
                         f"({_canonical(calibration.substitute.identity)}); run {where} was judged by "
                         f"{run.summary.bindings.get(JUDGE) or 'no judge'} ({_canonical(judge)})", path=source)


def _canonical(identity: dict[str, Any]) -> str:
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


def calibrated_headline(run: Run, calibration: Calibration) -> CalibratedHeadline:
    """The run's headline with every case's marks mapped onto the reference judge's, and its 95 %
    interval from resampling the run's cases and the calibration's cases together."""
    import numpy as np

    protocol = get_protocol(run.summary.protocol)
    options = protocol_options(protocol, run.summary.options)
    records = sorted(run.records(), key=lambda r: str(r.get("case_id")))
    calibration_ids = {c.case_id for c in calibration.cases}
    overlap = sum(str(r.get("case_id")) in calibration_ids for r in records)
    if not records:
        return CalibratedHeadline(None, None, overlap, "the run has no results.jsonl to map")
    if (why := _no_rescoring(protocol)) is not None:
        return CalibratedHeadline(None, None, overlap, why)
    strata = [stratum_of(protocol, r, options) for r in records]
    checked = case_parts(protocol, options, records, as_number(run.summary.scores.get("overall")), strata)
    if isinstance(checked, str):
        return CalibratedHeadline(None, None, overlap, checked)
    marks = [_judgements(protocol, r) for r in records]
    pairs = _Pairs(calibration.cases, calibration.metrics)
    cal_strata = [c.stratum for c in calibration.cases]
    maps = pairs.fit(np.arange(len(calibration.cases)))
    if maps is None:
        return CalibratedHeadline(None, None, overlap, "the calibration holds no case with marks by both judges")
    parts = _parts(protocol, options, _mapped(protocol, options, records, marks, maps), strata)
    if isinstance(parts, str):
        return CalibratedHeadline(None, None, overlap, parts)
    value = parts.headline()
    if value is None:
        return CalibratedHeadline(None, None, overlap, f"no overall on these {len(records)} cases")
    run_draws = stratified_draws(strata, CALIBRATION_RESAMPLES, BOOTSTRAP_SEED)
    cal_draws = stratified_draws(cal_strata, CALIBRATION_RESAMPLES, BOOTSTRAP_SEED + 1)
    values = np.full(CALIBRATION_RESAMPLES, math.nan)
    for b in range(CALIBRATION_RESAMPLES):
        refit = pairs.fit(cal_draws[b])
        if refit is None:
            continue
        resampled = _parts(protocol, options, _mapped(protocol, options, records, marks, refit), strata)
        if not isinstance(resampled, str):
            values[b] = resampled.resampled(run_draws[b:b + 1])[0]
    interval = percentile_interval(values)
    return CalibratedHeadline(value, interval, overlap, None if interval else "defined in too few resamples")


def calibrated_table(runs: Sequence[Run], calibrations: Sequence[tuple[Path, Calibration]]) -> list[Table]:
    """One table per calibration: each of its protocol's runs with its headline as judged and the
    reference-judge-equivalent estimate. Every run must match a calibration of its protocol
    (`check_applies`); a run of a protocol no calibration covers is refused too."""
    by_protocol: dict[str, list[tuple[Path, Calibration]]] = {}
    for path, calibration in calibrations:
        by_protocol.setdefault(calibration.protocol, []).append((path, calibration))
    tables: dict[Path, Table] = {}
    for run in runs:
        candidates = by_protocol.get(run.summary.protocol)
        if not candidates:
            known = ", ".join(f"{p} ({c.protocol})" for p, c in calibrations)
            raise InputError(f"run {run.path or run.label} is {run.summary.protocol}; no calibration given is for it: {known}", path=run.path)
        problems = []
        for path, calibration in candidates:
            try:
                check_applies(calibration, run, path)
            except InputError as exc:
                problems.append(exc)
                continue
            table = tables.setdefault(path, _empty_table(path, calibration))
            row, overlap = _row(run, calibration)
            table.rows.append(row)
            if overlap:
                table.note += f"; {row.run}: {overlap} of its cases are calibration cases"
            break
        else:
            raise problems[0]
    return list(tables.values())


def estimate_column(calibration: Calibration) -> str:
    """The estimate's column: it names the judge it stands in for and says it is an estimate."""
    return f"Overall by {calibration.reference.spec} (estimate)"


def _empty_table(path: Path, calibration: Calibration) -> Table:
    h = calibration.headline
    transfer = ""
    if h is not None:
        transfer = f"; on the calibration cases the reference judge's headline is {h.reference:.3g}, the substitute's {h.substitute:.3g}"
        if h.mapped is not None and h.error is not None:
            transfer += f", and mapped (leave-one-out) {h.mapped:.3g}: transfer error {h.error:+.3g} {_ci(h.error_ci, 3)}"
    note = (f"estimate, not a measurement: each case's marks by {calibration.substitute.spec} mapped onto {calibration.reference.spec}'s "
            f"by the calibration {path} ({len(calibration.cases)} cases; "
            + ", ".join(f"{m.metric}: {m.data}, {_agreement(m)}" for m in calibration.metrics)
            + f") and the headline recomputed; its 95 % interval resamples the run's cases and the calibration's cases together "
            f"({CALIBRATION_RESAMPLES} seeded resamples, the mapping refitted on each){transfer}")
    columns = [f"Overall by {calibration.substitute.spec} (as judged)", estimate_column(calibration)]
    return Table(f"{calibration.protocol} · reference-judge-equivalent headline (estimate)", calibration.protocol, ["run"], columns,
                 note=note)


def _agreement(m: MetricCalibration) -> str:
    if m.kappa is not None:
        return f"kappa {m.kappa:.2f}"
    if m.spearman is not None:
        return f"Spearman {m.spearman:.2f}"
    return f"exact agreement {m.exact_agreement:.2f} (no correlation: a judge gave one mark only)"


def _row(run: Run, calibration: Calibration) -> tuple[Row, int]:
    """The run's row, and how many of its cases the calibration holds too."""
    judged = as_number(run.summary.scores.get("overall"))
    estimate = calibrated_headline(run, calibration)
    decimals = 3 if all(abs(v) <= 1.0 for v in (judged, estimate.value) if v is not None) else 2
    cells = [Cell(judged, decimals=decimals),
             Cell(estimate.value, ci=estimate.ci, decimals=decimals, reason=estimate.reason if estimate.value is None else None,
                  no_interval=estimate.reason if estimate.value is not None and estimate.ci is None else None)]
    coverage, failed = run_coverage(run.summary)
    return Row(run.label or str(run.path), [run.label or str(run.path)], cells, coverage, failed), estimate.overlap
