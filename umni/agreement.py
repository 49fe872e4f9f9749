"""Judge agreement: two runs' judgements item by item, or one run against human ratings.

An item is (case id, metric); each protocol says which per-case numbers are its judgements
(`Protocol.judgements`). Two runs are compared with Pearson and Spearman correlation, exact
agreement, mean absolute error and — when both sides are whole numbers (0/1/2 marks, Y/N) —
Cohen's kappa. Against people (a CSV of case id, metric, rating) the papers report PLCC, SRCC and
MAE; a scatter plot is written beside the numbers. MAE is computed on the values as given, so
put both sides on one scale when you want it to mean something.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from scipy import stats
from sklearn.metrics import cohen_kappa_score

from .errors import InputError
from .protocol import get_protocol

Items = dict[tuple[str, str], float]


def run_judgements(run: Path) -> tuple[str, Items]:
    run = Path(run)
    summary_path = run / "summary.json"
    if not summary_path.exists():
        raise InputError("not a finished umni run (no summary.json)", path=run)
    protocol = get_protocol(json.loads(summary_path.read_text())["protocol"])
    items: Items = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            for metric, value in protocol.judgements(record).items():
                if value is not None:
                    items[(record["case_id"], metric)] = float(value)
    return protocol.name, items


def read_human(path: Path) -> Items:
    """CSV with a header naming `case_id`, `metric`, `rating` (other columns ignored)."""
    items: Items = {}
    try:
        handle = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    with handle:
        reader = csv.DictReader(handle)
        missing = {"case_id", "metric", "rating"} - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"the header must name case_id, metric, rating (missing: {', '.join(sorted(missing))})", path=path, line=1)
        for number, row in enumerate(reader, start=2):
            try:
                value = float(row["rating"])
            except (TypeError, ValueError):
                raise InputError(f"rating {row['rating']!r} is not a number", path=path, line=number, field="rating") from None
            if not math.isfinite(value):
                raise InputError("rating must be finite", path=path, line=number, field="rating")
            items[(row["case_id"], row["metric"])] = value
    if not items:
        raise InputError("no ratings in the file", path=path)
    return items


def _by_metric(a: Items, b: Items) -> dict[str, tuple[list[float], list[float]]]:
    paired: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for key in sorted(set(a) & set(b)):
        xs, ys = paired[key[1]]
        xs.append(a[key])
        ys.append(b[key])
    return dict(paired)


def _correlation(fn: Any, xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None  # undefined for constant series; never reported as 0
    return round(float(fn(xs, ys)[0]), 4)


def compare(a: Items, b: Items) -> dict[str, Any]:
    result: dict[str, Any] = {"only_in_first": len(set(a) - set(b)), "only_in_second": len(set(b) - set(a)), "metrics": {}}
    for metric, (xs, ys) in sorted(_by_metric(a, b).items()):
        entry: dict[str, Any] = {
            "n": len(xs),
            "pearson": _correlation(stats.pearsonr, xs, ys),
            "spearman": _correlation(stats.spearmanr, xs, ys),
            "exact_agreement": round(sum(x == y for x, y in zip(xs, ys)) / len(xs), 4),
            "mae": round(sum(abs(x - y) for x, y in zip(xs, ys)) / len(xs), 4),
        }
        labels = sorted(set(xs) | set(ys))
        if all(float(v).is_integer() for v in xs + ys) and len(labels) > 1:
            kappa = cohen_kappa_score([int(x) for x in xs], [int(y) for y in ys], labels=[int(l) for l in labels])
            entry["cohen_kappa"] = None if math.isnan(kappa) else round(float(kappa), 4)
        result["metrics"][metric] = entry
    return result


def compare_human(run_items: Items, human: Items, plot: Path | None = None) -> dict[str, Any]:
    """PLCC, SRCC and MAE of the run's judgements against human ratings, per metric."""
    result: dict[str, Any] = {"unmatched_ratings": len(set(human) - set(run_items)), "metrics": {}}
    paired = _by_metric(run_items, human)
    for metric, (xs, ys) in sorted(paired.items()):
        result["metrics"][metric] = {
            "n": len(xs),
            "plcc": _correlation(stats.pearsonr, xs, ys),
            "srcc": _correlation(stats.spearmanr, xs, ys),
            "mae": round(sum(abs(x - y) for x, y in zip(xs, ys)) / len(xs), 4),
        }
    if plot is not None and paired:
        _scatter(paired, plot)
        result["plot"] = str(plot)
    return result


def _scatter(paired: dict[str, tuple[list[float], list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(paired), figsize=(4 * len(paired), 3.6), squeeze=False)
    for ax, (metric, (xs, ys)) in zip(axes[0], sorted(paired.items())):
        ax.scatter(xs, ys, s=14, alpha=0.7)
        ax.set_xlabel(f"umni {metric}")
        ax.set_ylabel("human rating")
        ax.set_title(metric)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
