"""Statistics on every protocol: paired comparisons (difference, interval, test) of two and of many
runs, intervals on derived cells, power. Checked through the CLI as a user runs them, and against
known answers: a simulated difference of known size, SciPy's own permutation test, Holm's worked
example, the textbook sample-size formula. A numpy RuntimeWarning fails every test here."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from umni.cli import main
from umni.protocols.headline import HeadlineParts
from umni.protocols.protocol import get_protocol, known_protocols
from umni.protocols.scores import scores_json
from umni.reporting.contributions import CaseParts, case_parts, swap_test
from umni.reporting.intervals import bootstrap
from umni.reporting.leaderboard import Run, find_runs, label_runs
from umni.reporting.paired import compare_runs, holm, paired_interval
from umni.reporting.power import power_estimate
from umni.reporting.runset import protocol_options
from umni.store.runfolder import RunFolder, Summary
from umni_graphs.wise.cases import category_of
from umni_graphs.wise.scoring import OVERALL_WEIGHTS

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

GOLDEN = Path(__file__).parents[1] / "golden" / "expected"


@pytest.fixture(scope="module")
def wise_runs(tmp_path_factory):
    """Three WISE runs of the bundled prompts by sim/umm of three skills (three different models)."""
    root = tmp_path_factory.mktemp("wise")
    runs = {}
    for skill in ("0.9", "0.6", "0.3"):
        out = root / f"skill{skill}"
        assert main(["run", "wise", "--model", f"sim/umm?skill={skill}", "--out", str(out), "--cache", str(root / "cache"), "--quiet"]) == 0
        runs[skill] = out
    return runs


def test_two_wise_runs_give_a_difference_an_interval_and_a_p_value(wise_runs, capfd):
    """The issue's report: no interval, no p-value and numpy's 'Mean of empty slice' on stderr
    (one case alone has no WISE Overall, which weights all six categories)."""
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["leaderboard", str(wise_runs["0.9"]), str(wise_runs["0.3"]), "--paired"]) == 0
    out, err = capfd.readouterr()
    assert err == ""
    first = out.splitlines()[0]
    assert first.startswith("overall: A ") and " = +" in first
    assert "95 % CI [" in first and "(paired bootstrap over 18 shared cases, resampled within 6 strata)" in first
    assert "; p = " in first and "paired permutation test" in first
    a, b = label_runs(find_runs([wise_runs["0.9"], wise_runs["0.3"]]))
    result = compare_runs(a, b)
    assert result.ci is not None and result.ci[0] <= result.difference <= result.ci[1]
    assert 0 < result.p_value <= 1 and result.no_interval is None and result.no_test is None
    assert result.difference == pytest.approx(a.summary.scores["overall"] - b.summary.scores["overall"], abs=1e-4)


def test_three_runs_give_a_holm_adjusted_matrix(wise_runs, capfd):
    dirs = [str(wise_runs[s]) for s in ("0.3", "0.9", "0.6")]
    capfd.readouterr()
    assert main(["leaderboard", *dirs, "--paired"]) == 0
    out, err = capfd.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "### wise · paired comparisons of overall"
    assert lines[2] == "| row − column | sim/umm?skill=0.6 | sim/umm?skill=0.3 |"  # best headline first
    assert lines[4].startswith("| sim/umm?skill=0.9 | +") and lines[5].startswith("| sim/umm?skill=0.6 |  | +")
    assert "Holm-adjusted over the 3 pairs tested" in out
    assert main(["leaderboard", *dirs, "--paired", "--format", "csv"]) == 0
    pairs = list(csv.DictReader(io.StringIO(capfd.readouterr().out)))
    assert [(p["a"], p["b"]) for p in pairs] == [("sim/umm?skill=0.9", "sim/umm?skill=0.6"), ("sim/umm?skill=0.9", "sim/umm?skill=0.3"),
                                                 ("sim/umm?skill=0.6", "sim/umm?skill=0.3")]
    raw = [float(p["p_value"]) for p in pairs]
    assert [float(p["p_holm"]) for p in pairs] == pytest.approx(holm(raw))
    assert all(float(p["ci_low"]) <= float(p["difference"]) <= float(p["ci_high"]) for p in pairs)


def test_power_answers_from_one_run_and_from_two(wise_runs, capfd):
    capfd.readouterr()
    assert main(["power", str(wise_runs["0.6"]), "--delta", "0.1"]) == 0
    out, err = capfd.readouterr()
    assert err == "" and out.startswith("power: ") and " cases per model (the same cases for both) to detect a difference of 0.1" in out
    assert "two-sided z-test" in out and "ρ = 0" in out
    assert main(["power", str(wise_runs["0.6"]), str(wise_runs["0.3"]), "--delta", "0.1", "--alpha", "0.01"]) == 0
    assert "paired differences between this run and sim/umm?skill=0.3" in capfd.readouterr().out
    assert main(["power", str(wise_runs["0.6"]), "--delta", "-1"]) == 2
    assert "--delta must be a positive difference" in capfd.readouterr().err


def test_the_wise_overall_cell_has_an_interval(wise_runs, capsys):
    """Before: every resample that missed a category had no Overall, so the cell had none."""
    assert main(["leaderboard", str(wise_runs["0.6"])]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| sim/umm"))
    overall = row.split(" | ")[7]
    assert "[" in overall, overall
    run = Run(RunFolder(wise_runs["0.6"]).read_summary(), wise_runs["0.6"])
    low, high = run.intervals["overall"]
    assert low <= run.summary.scores["overall"] <= high
    assert json.loads((wise_runs["0.6"] / "tables.json").read_text())["version"] == 2


@pytest.mark.parametrize("protocol", sorted(known_protocols()))
def test_each_protocols_headline_parts_give_its_headline(protocol):
    """The parts every protocol states add up, by the headline's formula, to the Overall its own
    summarize gives (the golden runs of the bundled cases)."""
    summary = json.loads((GOLDEN / protocol / "summary.json").read_text())
    records = [json.loads(line) for line in (GOLDEN / protocol / "results.jsonl").read_text().splitlines()]
    spec = get_protocol(protocol)
    options = protocol_options(spec, summary["options"])
    stated = spec.headline_parts(records, options)
    assert isinstance(stated, HeadlineParts) and len(stated.cases) == len(records)
    figure = summary["scores"]["overall"]
    printed = len(repr(figure).partition(".")[2])  # AEGIS prints two decimals, the others four or all
    assert stated.headline() == pytest.approx(figure, abs=0.5 * 10 ** -printed + 1e-9)
    parts = case_parts(spec, options, records, summary["scores"]["overall"])
    assert isinstance(parts, CaseParts) and parts.note == ""
    assert parts.contributions().sum() == pytest.approx(parts.headline())


# ------------------------------------------------------------------------------ known answers
def _write_wise_run(path: Path, marks: dict[int, int | None], label: str) -> Run:
    """A WISE run directory of verified binary marks by prompt id (None: a judge failure)."""
    protocol = get_protocol("wise")
    options = protocol.parse_options({})
    records = [{"case_id": str(pid), "prompt_id": pid, "category": category_of(pid, "verified"), "marks": None if m is None else {"score": m},
                "score": m, "failure": "parse" if m is None else None, "official": None if m is None else {"score": m}}
               for pid, m in sorted(marks.items())]
    summary = {"protocol": "wise", "label": label, "options": options.model_dump(mode="json"), "bindings": {"generate": label},
               "counts": {"cases": len(records), "nodes": 2 * len(records)}, "failures": {},
               "scores": scores_json(protocol.summarize(records, options))}
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return Run(Summary.model_validate(summary), path, label=label)


#: Prompt ids of the verified set by category, and how many of each a simulated run holds.
VERIFIED = {"culture": range(1, 401), "time": range(401, 521), "space": range(521, 641), "biology": range(641, 761),
            "physics": range(761, 881), "chemistry": range(881, 1001)}
SIMULATED = {"culture": 200, "time": 60, "space": 60, "biology": 60, "physics": 60, "chemistry": 60}


def test_a_simulated_difference_of_known_size_is_found_and_covered(tmp_path):
    """Model A is right on a prompt with its category's chance, B with 0.1 less, on a shared latent
    difficulty: the Overall differs by exactly 0.1 in expectation (the weights sum to 1). The
    interval covers 0.1, its width is the one the stratified design gives, the test rejects."""
    rng = np.random.default_rng(1)
    chance = {"culture": 0.8, "time": 0.7, "space": 0.6, "biology": 0.75, "physics": 0.65, "chemistry": 0.7}
    a_marks, b_marks = {}, {}
    for category, n in SIMULATED.items():
        for pid, u in zip(list(VERIFIED[category])[:n], rng.random(n)):
            a_marks[pid], b_marks[pid] = int(u < chance[category]), int(u < chance[category] - 0.1)
    a, b = _write_wise_run(tmp_path / "a", a_marks, "A"), _write_wise_run(tmp_path / "b", b_marks, "B")
    result = compare_runs(a, b)
    weights = OVERALL_WEIGHTS["verified"]
    by_hand = sum(w * np.mean([a_marks[p] - b_marks[p] for p in list(VERIFIED[c])[:SIMULATED[c]]]) for c, w in weights.items())
    assert result.difference == pytest.approx(by_hand)
    assert result.ci[0] < 0.1 < result.ci[1]
    d = {c: np.array([a_marks[p] - b_marks[p] for p in list(VERIFIED[c])[:n]]) for c, n in SIMULATED.items()}
    se = math.sqrt(sum(weights[c] ** 2 * d[c].var(ddof=1) / len(d[c]) for c in d))
    assert result.ci[1] - result.ci[0] == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert result.p_value == pytest.approx(1 / 10_000) and result.strata == 6


def test_the_same_run_twice_differs_by_nothing():
    parts = CaseParts.of(HeadlineParts({"x": 1.0}, [{"x": (float(v), 1.0)} for v in [1, 0, 1, 1, 0, 1, 0, 1]]), [str(i) for i in range(8)], [None] * 8)
    assert swap_test(parts, parts, 999) == 1.0
    assert paired_interval(parts, parts)["ci"] == (0.0, 0.0)


def _one_mean(values: np.ndarray, strata: list[str | None] | None = None) -> CaseParts:
    n = len(values)
    return CaseParts.of(HeadlineParts({"x": 1.0}, [{"x": (float(v), 1.0)} for v in values]), [f"{i:04d}" for i in range(n)], strata or [None] * n)


def test_the_permutation_test_is_scipys_on_a_simple_case():
    """A pooled mean with no failures: swapping a case's two parts is flipping the sign of its
    difference, which is what SciPy's paired permutation test does; every swap when 2^n is few."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.3, 1, 12), rng.normal(0, 1, 12)
    ours = swap_test(_one_mean(x), _one_mean(y), 9999)
    theirs = stats.permutation_test((x, y), lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis),
                                    permutation_type="samples", vectorized=True, n_resamples=9999).pvalue
    assert ours == pytest.approx(theirs, abs=1e-12)  # both exact: all 4096 swaps
    x, y = rng.normal(0.2, 1, 80), rng.normal(0, 1, 80)
    ours = swap_test(_one_mean(x), _one_mean(y), 20_000)
    theirs = stats.permutation_test((x, y), lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis),
                                    permutation_type="samples", vectorized=True, n_resamples=20_000, rng=np.random.default_rng(0)).pvalue
    assert ours == pytest.approx(theirs, abs=0.01)  # two samples of the same null distribution


def test_the_permutation_test_holds_its_level_and_the_interval_its_coverage():
    """Under no difference about 5 % of tests reject at 0.05; with a difference of known size about
    95 % of intervals cover it. Stratified (two strata of unequal weight), 300 simulated pairs."""
    rng = np.random.default_rng(5)
    strata = ["s1"] * 60 + ["s2"] * 40
    rejected = covered = 0
    for _ in range(300):
        base = rng.random(100)
        a = CaseParts.of(HeadlineParts({"s1": 0.7, "s2": 0.3}, [{s: (float(u < 0.6), 1.0)} for s, u in zip(strata, base)]),
                         [f"{i:03d}" for i in range(100)], list(strata))
        noise = rng.random(100)
        b_null = CaseParts.of(HeadlineParts({"s1": 0.7, "s2": 0.3}, [{s: (float(v < 0.6), 1.0)} for s, v in zip(strata, noise)]), a.case_ids, a.strata)
        rejected += swap_test(a, b_null, 499, seed=int(rng.integers(1 << 30))) < 0.05
        b_shift = CaseParts.of(HeadlineParts({"s1": 0.7, "s2": 0.3}, [{s: (float(u < 0.45), 1.0)} for s, u in zip(strata, base)]), a.case_ids, a.strata)
        low, high = paired_interval(a, b_shift)["ci"]
        covered += low <= 0.15 <= high
    assert 0.02 <= rejected / 300 <= 0.09
    assert 0.90 <= covered / 300 <= 0.99


def test_holm_adjusts_as_the_worked_example():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.01]) == pytest.approx([0.5, None, 0.02]) and holm([]) == []
    assert holm([0.6, 0.7]) == [1.0, 1.0]


def test_power_is_the_textbook_sample_size(tmp_path):
    """Half the prompts of each category right (σ² = 0.25): one run, the second model assumed to
    vary as much, independently. The stratified variance is written out here by hand."""
    marks = {}
    for category, n in SIMULATED.items():
        for i, pid in enumerate(list(VERIFIED[category])[:n]):
            marks[pid] = i % 2
    run = _write_wise_run(tmp_path / "half", marks, "half")
    estimate = power_estimate(run, 0.1)
    weights = OVERALL_WEIGHTS["verified"]
    total = sum(SIMULATED.values())
    sigma2 = total * sum(weights[c] ** 2 * 0.25 / (n - 1) for c, n in SIMULATED.items())
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert estimate.per_case_variance == pytest.approx(2 * sigma2)
    assert estimate.needed == math.ceil(z * z * 2 * sigma2 / 0.1 ** 2)
    # what the answer promises: a z-test of two such models at that many cases detects 0.1 about 80 % of the time
    rng = np.random.default_rng(2)
    m = estimate.needed
    share = {c: n / total for c, n in SIMULATED.items()}
    sizes = {c: max(2, round(m * share[c])) for c in SIMULATED}
    detected = 0
    for _ in range(2000):
        diff, var = 0.0, 0.0
        for c, n in sizes.items():
            pa, pb = rng.binomial(n, 0.5) / n, rng.binomial(n, 0.6) / n
            diff += weights[c] * (pb - pa)
            var += weights[c] ** 2 * (pa * (1 - pa) + pb * (1 - pb)) / n
        detected += abs(diff) > 1.96 * math.sqrt(var)
    assert 0.74 <= detected / 2000 <= 0.88


def test_a_headline_missing_on_the_shared_cases_says_why(tmp_path):
    """No Overall (a category without a scored prompt): one line, no difference and no numpy warning."""
    marks = {pid: 1 for c in VERIFIED for pid in list(VERIFIED[c])[:5]}
    failed = marks | {pid: None for pid in list(VERIFIED["time"])[:5]}
    a, b = _write_wise_run(tmp_path / "a", marks, "A"), _write_wise_run(tmp_path / "b", failed, "B")
    result = compare_runs(a, b)
    assert result.difference is None and result.p_value is None
    assert result.text().splitlines()[0] == "overall: no paired comparison: B: no overall on these 30 cases (no score for time)"


def test_genius_overall_interval_is_centred_on_the_overall(tmp_path):
    """GENIUS's Overall pools RC, VC and AQ; VC applies to some cases only. Before, each resample's
    Overall was the mean of the cases' Overalls scored alone, which counts VC as 0 on a case without
    one: the interval sat low. Now each resample is scored by the Overall's own formula."""
    out = tmp_path / "genius"
    assert main(["run", "genius", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet"]) == 0
    run = Run(RunFolder(out).read_summary(), out, intervals=None)
    resampled = bootstrap(run).column("overall")
    overall = run.summary.scores["overall"]
    assert abs(float(np.nanmean(resampled)) - overall) < 0.5, (np.nanmean(resampled), overall)
