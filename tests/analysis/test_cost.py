"""Usage per role and the estimated cost from a price table."""


import pytest

from umni.cli import main
from umni.reporting.pricing import Price, estimate, load_prices
from umni.store.runfolder import RunFolder
from umni.util.errors import InputError


def test_estimate_hand_computed():
    usage = {"understand": {"calls": 10, "input_tokens": 20_000, "output_tokens": 1_000, "images_out": 0},
             "generate": {"calls": 4, "input_tokens": 0, "output_tokens": 0, "images_out": 4},
             "judge": {"calls": 2, "input_tokens": 5, "output_tokens": 5, "images_out": 0}}
    bindings = {"understand": "openai/gpt-4o?temperature=0", "generate": "openai/gpt-image-1", "judge": "hf/x"}
    prices = {"openai/gpt-4o": Price(input_per_million=2.5, output_per_million=10.0),
              "openai/gpt-image-1": Price(per_image=0.04, per_call=0.001)}
    cost = estimate(usage, bindings, prices)
    assert cost.per_role == {"understand": pytest.approx(0.05 + 0.01), "generate": pytest.approx(0.16 + 0.004)}
    assert cost.total == pytest.approx(0.224)
    assert cost.unpriced_roles == ["judge"]  # listed, never priced at 0


def test_run_reports_usage_and_cost(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("sim/umm:\n  per_call: 0.5\n  per_image: 1.0\n")
    out = tmp_path / "run"
    assert main(["run", "umnibench", "--model", "sim/umm", "--limit", "2", "--out", str(out), "--cache", str(tmp_path / "c"),
                 "--prices", str(prices), "--quiet"]) == 0
    summary = RunFolder(out).read_summary()
    assert summary.usage["generate"]["images_out"] == 2 and summary.usage["understand"]["calls"] == 18
    # generate: 2 calls + 2 images; edit: 4 calls + 4 images; understand: 18 calls
    assert summary.cost.total == pytest.approx(2 * 1.5 + 4 * 1.5 + 18 * 0.5)


def test_bad_price_table_is_an_input_error(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("sim/umm:\n  per_token: 3\n")
    with pytest.raises(InputError, match="per_token"):
        load_prices(path)
