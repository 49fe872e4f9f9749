"""Usage and cost belong to the run, not to the last invocation (issue 10.8)."""

from __future__ import annotations

import json

import pytest

from umni.cli import main


def summary_of(out):
    return json.loads((out / "summary.json").read_text())


def test_rerunning_a_finished_run_keeps_its_calls_and_cost(tmp_path, capsys):
    prices = tmp_path / "prices.yaml"
    prices.write_text("sim/umm:\n  per_call: 0.5\n  per_image: 1.0\n")
    out = tmp_path / "run"
    args = ["run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "c"), "--prices", str(prices), "--quiet"]
    assert main([*args, "--limit", "2"]) == 0
    first = summary_of(out)
    assert main([*args, "--limit", "2"]) == 0
    again = summary_of(out)
    assert again["calls"] == first["calls"] and again["calls"]["understand"] == 18
    assert again["cost"]["total"] == pytest.approx(first["cost"]["total"]) == pytest.approx(18.0)
    assert again["this_invocation"]["calls"] == {} and again["this_invocation"]["cost"]["total"] == 0

    assert main([*args, "--limit", "3"]) == 0  # extended by one case: its calls are added
    extended = summary_of(out)
    added = extended["this_invocation"]["calls"]
    assert sum(added.values()) > 0
    assert extended["calls"] == {r: first["calls"].get(r, 0) + added.get(r, 0) for r in set(first["calls"]) | set(added)}
