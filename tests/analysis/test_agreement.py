"""Agreement numbers on hand-computed examples."""

import pytest

from umni.reporting.agreement import compare, compare_human, read_human
from umni.util.errors import InputError


def items(metric, values):
    return {(f"c{i}", metric): v for i, v in enumerate(values)}


def test_two_judges_hand_computed():
    a = items("rc", [0, 1, 2, 2, 1])
    b = items("rc", [0, 2, 2, 2, 0])
    r = compare(a, b)["metrics"]["rc"]
    assert r["n"] == 5
    assert r["exact_agreement"] == 0.6  # c0, c2, c3 agree
    assert r["mae"] == 0.4  # |1-2| + |1-0| over 5
    # Pearson by hand: x mean 1.2, y mean 1.2; sxy = 1.2*1.2 + (-0.2)(0.8) + 0.8*0.8*2 + (-0.2)(-1.2) = 1.44-0.16+1.28+0.24 = 2.8
    # sxx = 1.44+0.04+0.64+0.64+0.04 = 2.8; syy = 1.44+0.64+0.64+0.64+1.44 = 4.8 -> r = 2.8/sqrt(2.8*4.8)
    assert r["pearson"] == pytest.approx(round(2.8 / (2.8 * 4.8) ** 0.5, 4))
    # Cohen's kappa: observed 0.6; expected = sum_k pA(k) pB(k) with pA = (.2,.4,.4), pB = (.4,.0,.6) -> .08+0+.24 = .32
    assert r["cohen_kappa"] == pytest.approx(round((0.6 - 0.32) / (1 - 0.32), 4))


def test_constant_series_has_no_correlation_rather_than_zero():
    r = compare(items("s", [1, 1, 1]), items("s", [1, 0, 1]))["metrics"]["s"]
    assert r["pearson"] is None and r["spearman"] is None


def test_unmatched_items_are_counted():
    a = items("s", [1, 0, 1])
    b = {("c0", "s"): 1.0, ("zz", "s"): 0.0}
    r = compare(a, b)
    assert r["only_in_first"] == 2 and r["only_in_second"] == 1 and r["metrics"]["s"]["n"] == 1


def test_human_ratings(tmp_path):
    csv_path = tmp_path / "human.csv"
    csv_path.write_text("case_id,metric,rating\nc0,accuracy,1\nc1,accuracy,3\nc2,accuracy,5\nc9,accuracy,2\n")
    run = items("accuracy", [20.0, 40.0, 100.0])
    with pytest.raises(InputError, match="--human-scale"):  # 1-5 ratings against 0-100 accuracies
        compare_human(run, read_human(csv_path), tmp_path / "plot.png")
    r = compare_human(run, read_human(csv_path), tmp_path / "plot.png", human_scale=(1, 5))
    m = r["metrics"]["accuracy"]
    assert m["n"] == 3 and m["srcc"] == 1.0
    # PLCC: x = 20,40,100 (mean 53.33), y = 1,3,5 (mean 3): sxy = (-33.33)(-2)+(-13.33)(0)+(46.67)(2) = 160
    # sxx = 1111.1+177.8+2177.8 = 3466.7, syy = 8 -> r = 160/sqrt(27733.3)
    assert m["plcc"] == pytest.approx(round(160 / (3466.6667 * 8) ** 0.5, 4), abs=1e-4)
    # ratings rescaled 1-5 -> 0-100: 1, 3, 5 -> 0, 50, 100; MAE = (20 + 10 + 0) / 3
    assert m["mae"] == pytest.approx(10.0)
    assert r["rescaled"] == {"accuracy": {"from": [1, 5], "to": [0, 100]}}
    assert r["unmatched_ratings"] == 1 and r["unmatched"] == [{"case_id": "c9", "metric": "accuracy"}]
    assert (tmp_path / "plot.png").stat().st_size > 1000


def test_bad_human_file_names_line_and_field(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("case_id,metric,rating\nc0,accuracy,high\n")
    with pytest.raises(InputError) as info:
        read_human(path)
    assert f"{path}:2" in info.value.describe() and "rating" in info.value.describe()
