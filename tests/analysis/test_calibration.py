"""Judge substitution, measured (issue 33 item 2): a sim judge with a known bias, calibrated against an
unbiased reference judge on 40 cases, gives a reference-judge-equivalent headline whose interval covers
the reference judge's headline on 100 other cases; a calibration refuses runs it does not fit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from umni.cli import main
from umni.reporting.calibration import data_type, fit, read_calibration
from umni.store.runfolder import RunFolder
from umni_graphs.wise.cases import OFFICIAL_CATEGORY, category_of

#: The reference judge reads half the images and guesses the other half's marks, so its marks
#: spread over the whole scale; the substitute is the same judge with every mark one step higher.
REFERENCE = "sim/umm?skill=0.5"
SUBSTITUTE = "sim/umm?judge_bias=1&skill=0.5"
THINGS = ["apple", "lantern", "bicycle", "violin", "teapot", "kite", "anchor", "candle", "owl", "tulip"]
COLOURS = ["red", "blue", "green", "yellow", "purple", "white", "black", "orange"]


def wise_files(folder: Path, scoring: str) -> tuple[Path, Path]:
    """Two WISE case files of made-up prompts over all six categories: 40 calibration cases and 100
    other ones (ids drawn at random from the set's 1000, so every category has some)."""
    ids = list(range(1, 1001))
    random.Random(7).shuffle(ids)
    paths = []
    for name, chosen in (("calibration", ids[:40]), ("fresh", ids[40:140])):
        prompts = []
        for i in sorted(chosen):
            thing, other, colour = THINGS[i % 10], THINGS[(i // 10) % 10], COLOURS[i % 8]
            prompts.append({"Prompt": f"A {colour} {thing} beside a {other}", "Explanation": f"The image should show a {colour} {thing}",
                            "Category": OFFICIAL_CATEGORY[category_of(i, scoring)], "Subcategory": "made up", "prompt_id": i})
        path = folder / f"{name}-{scoring}.json"
        path.write_text(json.dumps(prompts))
        paths.append(path)
    return paths[0], paths[1]


def judged_twice(tmp_path: Path, cases: Path, name: str, scoring: str) -> tuple[Path, Path]:
    """The cases' outputs judged by the reference judge, then re-judged by the substitute."""
    reference, substitute, cache = tmp_path / f"{name}-ref", tmp_path / f"{name}-sub", tmp_path / "cache"
    assert main(["run", "wise", "--option", f"scoring={scoring}", "--cases", str(cases), "--model", "sim/umm", "--role",
                 f"judge={REFERENCE}", "--out", str(reference), "--cache", str(cache), "--quiet"]) == 0
    assert main(["rejudge", str(reference), "--role", f"judge={SUBSTITUTE}", "--out", str(substitute)]) == 0
    return reference, substitute


def overall(run: Path) -> float:
    value = RunFolder(run).read_summary().scores.overall
    assert value is not None
    return float(value)


@pytest.mark.parametrize("scoring", ["legacy", "verified"])  # three 0-2 marks; one yes/no (0/1) mark
def test_a_biased_judge_calibrated_on_40_cases_recovers_the_reference_on_100_others(tmp_path, capsys, scoring):
    calibration_cases, fresh_cases = wise_files(tmp_path, scoring)
    cal_ref, cal_sub = judged_twice(tmp_path, calibration_cases, "calibration", scoring)
    fresh_ref, fresh_sub = judged_twice(tmp_path, fresh_cases, "fresh", scoring)
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(cal_ref), str(cal_sub), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "quadratic-weighted kappa" in printed and "transfer error" in printed

    calibration = read_calibration(out)
    assert calibration.protocol == "wise" and calibration.options["scoring"] == scoring
    assert calibration.reference.spec == REFERENCE and calibration.substitute.spec == SUBSTITUTE
    assert calibration.substitute.identity["params"]["judge_bias"] == "1"
    assert len(calibration.cases) == 40
    for metric in calibration.metrics:
        assert metric.data == "discrete"
        labels = metric.labels
        assert labels is not None and metric.confusion is not None
        # every substitute mark is the reference's one step up, clipped: the confusion matrix says so
        for row, sub in zip(metric.confusion, labels):
            for count, ref in zip(row, labels):
                assert count == 0 or sub == min(ref + 1, labels[-1])
        mapping = dict(metric.mapping)
        if labels[-1] == 2:
            assert mapping[1.0] == 0.0  # a 1 by the substitute is always a 0 by the reference
        else:  # one step up a two-mark scale: the substitute says yes to everything, and the estimate rests on the calibration
            assert list(mapping) == [1.0] and mapping[1.0] == sum(c.reference[metric.metric] for c in calibration.cases) / 40
    transfer = calibration.headline
    assert transfer is not None and transfer.gap < 0  # the lenient judge scores higher
    assert transfer.gap_ci is not None and transfer.gap_ci[1] < 0
    assert transfer.error_ci is not None and transfer.error_ci[0] <= 0 <= transfer.error_ci[1]

    board = tmp_path / "board"
    assert main(["leaderboard", str(fresh_sub), "--calibration", str(out), "--out", str(board)]) == 0
    tables = json.loads((board / "leaderboard.json").read_text())
    estimate = next(t for t in tables if "(estimate)" in t["title"])
    assert estimate["columns"][1] == f"Overall by {REFERENCE} (estimate)"
    assert estimate["note"].startswith("estimate, not a measurement")
    judged, corrected = estimate["rows"][0]["cells"]
    assert judged["value"] == pytest.approx(overall(fresh_sub))
    low, high = corrected["ci"]
    reference = overall(fresh_ref)
    assert low <= reference <= high, (corrected, reference)
    assert not low <= overall(fresh_sub) <= high  # the uncorrected headline is far off
    assert "(estimate)" in (board / "leaderboard.md").read_text()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Six legacy cases, judged by the reference and re-judged by the substitute."""
    folder = tmp_path_factory.mktemp("small")
    cache = folder / "cache"
    run, again = folder / "ref", folder / "sub"
    assert main(["run", "wise", "--option", "scoring=legacy", "--model", "sim/umm", "--role", f"judge={REFERENCE}", "--limit", "6",
                 "--out", str(run), "--cache", str(cache), "--quiet"]) == 0
    assert main(["rejudge", str(run), "--role", f"judge={SUBSTITUTE}", "--out", str(again)]) == 0
    out = folder / "calibration.json"
    assert main(["calibrate", str(run), str(again), "--out", str(out)]) == 0
    return folder, run, again, out


def test_calibrate_refuses_runs_that_judged_other_images_naming_the_case(small, tmp_path, capsys):
    folder, run, again, _ = small
    other = tmp_path / "other"
    assert main(["run", "wise", "--option", "scoring=legacy", "--model", "sim/umm?seed=3", "--role", f"judge={SUBSTITUTE}",
                 "--limit", "6", "--out", str(other), "--cache", str(folder / "cache"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["calibrate", str(run), str(other), "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "case 1: the two runs judged different images (node image:" in err and "umni rejudge" in err
    assert not (tmp_path / "c.json").exists()


def test_leaderboard_refuses_a_calibration_of_another_judge_naming_both(small, capsys):
    _, run, again, out = small
    capsys.readouterr()
    assert main(["leaderboard", str(run), "--calibration", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"maps the marks of judge {SUBSTITUTE}" in err and f"was judged by {REFERENCE}" in err


def test_leaderboard_refuses_a_calibration_of_another_protocol(small, tmp_path, capsys):
    folder, _, _, out = small
    genius = tmp_path / "genius"
    assert main(["run", "genius", "--model", "sim/umm", "--limit", "1", "--out", str(genius), "--cache", str(folder / "cache"),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(genius), "--calibration", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is genius; no calibration given is for it" in err and "(wise)" in err


def test_paired_comparisons_do_not_take_a_calibration(small, capsys):
    _, run, again, out = small
    assert main(["leaderboard", str(run), str(again), "--paired", "--calibration", str(out)]) == 2
    assert "give one of them" in capsys.readouterr().err


def test_a_file_that_is_no_calibration_is_named(small, tmp_path, capsys):
    _, run, _, _ = small
    bad = tmp_path / "bad.json"
    bad.write_text('{"protocol": "wise"}')
    assert main(["leaderboard", str(run), "--calibration", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_marks_are_discrete_or_continuous_by_their_values():
    assert data_type([0, 1, 2, 2.0]) == "discrete"
    assert data_type([0, 50, 100, 75]) == "discrete"
    assert data_type([0.25, 0.5, 1.0]) == "continuous"
    assert data_type(list(range(12))) == "continuous"  # more marks than a 0-10 scale: a number, not a mark


def test_the_mapping_is_the_mean_reference_mark_or_the_isotonic_fit():
    sub, ref = np.array([1.0, 1, 2, 2, 2, 2]), np.array([0.0, 0, 1, 2, 2, 1])
    mapping = fit(sub, ref, "discrete")
    assert mapping.xs.tolist() == [1.0, 2.0] and mapping.ys.tolist() == [0.0, 1.5]
    assert mapping(np.array([0.0, 1.5, 3.0])).tolist() == [0.0, 0.75, 1.5]  # clipped beyond, interpolated between
    continuous = fit(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 0.3, 0.2, 0.9]), "continuous")
    assert continuous(np.array([0.1, 0.25, 0.4])).tolist() == pytest.approx([0.0, 0.25, 0.9])  # pooled 0.3, 0.2 -> 0.25


def test_a_protocol_that_cannot_rescore_mapped_marks_still_gets_agreement_and_the_gap(tmp_path, capsys):
    run, again, cache = tmp_path / "ref", tmp_path / "sub", tmp_path / "cache"
    assert main(["run", "genius", "--model", "sim/umm", "--role", f"judge={REFERENCE}", "--limit", "4", "--out", str(run),
                 "--cache", str(cache), "--quiet"]) == 0
    assert main(["rejudge", str(run), "--role", f"judge={SUBSTITUTE}", "--out", str(again)]) == 0
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(run), str(again), "--out", str(out)]) == 0
    calibration = read_calibration(out)
    assert {m.metric for m in calibration.metrics} == {"rc", "vc", "aq"}
    assert all(m.data == "discrete" and set(m.labels or []) <= {0.0, 50.0, 100.0} for m in calibration.metrics)
    transfer = calibration.headline
    assert transfer is not None and transfer.gap < 0 and transfer.mapped is None
    assert "Protocol.rejudged" in (transfer.no_mapped or "")
    capsys.readouterr()
    assert main(["leaderboard", str(again), "--calibration", str(out)]) == 0
    assert "cannot re-score a case from mapped marks" in capsys.readouterr().out


def test_checklist_scores_are_continuous_and_mapped_by_isotonic_regression(tmp_path, capsys):
    """AEGIS's per-case judgement is the fraction of Y: continuous. One step down the N/Y scale says
    no to every item, so every case maps to the calibration's mean, and on the calibration's own
    cases the estimate is the reference judge's headline itself."""
    run, again, cache = tmp_path / "ref", tmp_path / "sub", tmp_path / "cache"
    assert main(["run", "aegis", "--model", "sim/umm", "--role", f"judge={REFERENCE}", "--out", str(run), "--cache", str(cache),
                 "--quiet"]) == 0
    assert main(["rejudge", str(run), "--role", "judge=sim/umm?judge_bias=-1&skill=0.5", "--out", str(again)]) == 0
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(run), str(again), "--out", str(out)]) == 0
    (score,) = read_calibration(out).metrics
    assert score.metric == "score" and score.data == "continuous" and score.confusion is None and score.kappa is None
    assert overall(again) == 0
    board = tmp_path / "board"
    assert main(["leaderboard", str(again), "--calibration", str(out), "--out", str(board)]) == 0
    estimate = next(t for t in json.loads((board / "leaderboard.json").read_text()) if "(estimate)" in t["title"])
    assert estimate["rows"][0]["cells"][1]["value"] == pytest.approx(overall(run), abs=0.005)  # the summary rounds to 2 decimals
