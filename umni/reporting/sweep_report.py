"""The sweep report: every run of a sweep side by side, case by case, plus plots.

For each case, one row per run shows that run's image strip (stage 1 → 2 → 3, or each reflection
round) and its answers or judge scores, so a reader sees where models diverge. Plots show each
score table of the leaderboard (stage-by-stage degradation, per-domain scores …) with one series
per run. Images are files next to the page; it opens from disk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from jinja2 import Environment, PackageLoader, select_autoescape  # noqa: E402

from umni.protocols.protocol import get_protocol  # noqa: E402
from umni.reporting.format import format_cell
from umni.reporting.leaderboard import Table, build_tables, summary_label  # noqa: E402
from umni.reporting.pool_hours import pools_held
from umni.reporting.report import export_image  # noqa: E402
from umni.store.atomic import atomic_write_text  # noqa: E402
from umni.store.completion import require_complete  # noqa: E402
from umni.store.runfolder import REPORT_HTML, CaseRecord, RunFolder, Summary  # noqa: E402
from umni.store.urls import run_blobs  # noqa: E402

_env = Environment(loader=PackageLoader("umni.reporting", "templates"), autoescape=select_autoescape(default=True))
_env.filters["cell"] = format_cell


def plot_table(table: Table, path: Path) -> Path | None:
    """A line plot (one line per run) of a table's numeric columns; None if nothing to plot."""
    numeric = [i for i, _ in enumerate(table.columns) if any(isinstance(r.cells[i].value, (int, float)) for r in table.rows)]
    if len(numeric) < 2 or not table.rows:
        return None
    fig, ax = plt.subplots(figsize=(max(5.0, 0.55 * len(numeric) + 2), 3.6))
    xs = list(range(len(numeric)))
    for row in table.rows:
        ys = [row.cells[i].value if isinstance(row.cells[i].value, (int, float)) else float("nan") for i in numeric]
        ax.plot(xs, ys, marker="o", label=" · ".join(row.keys)[:60])
    ax.set_xticks(xs, [table.columns[i] for i in numeric], rotation=35, ha="right", fontsize=8)
    ax.set_title(table.title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _records(run_dir: Path) -> Iterator[CaseRecord]:
    folder = RunFolder(run_dir)
    require_complete(run_dir)
    return folder.each_record() if folder.results_jsonl.exists() else iter(())


def write_sweep_report(out: Path, results: Sequence[tuple[Path, Summary]]) -> Path:
    """`results`: each run of the sweep as its folder and its summary."""
    summaries = [summary for _, summary in results]
    tables = build_tables(summaries, layout="tidy")  # one row per run: the plots draw a line per run
    plots = []
    for index, table in enumerate(tables):
        made = plot_table(table, out / "plots" / f"table-{index}.png")
        if made is not None:
            plots.append({"title": table.title, "src": str(made.relative_to(out))})
    cases: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run_dir, summary in results:
        protocol = get_protocol(summary.protocol)
        folder = RunFolder(run_dir)
        blobs = run_blobs(folder.read_manifest())
        for record in _records(run_dir):
            panels = []
            for view in protocol.views(record):
                src = export_image(out, view.image, blobs) if view.image and blobs is not None else None
                panels.append({"view": view, "src": src})
            key = (summary.protocol, record["case_id"])
            inside = folder.path.resolve().is_relative_to(out.resolve())
            report_link = folder.path.resolve().relative_to(out.resolve()) / REPORT_HTML if inside else None
            cases.setdefault(key, []).append({"label": summary_label(summary), "panels": panels, "report": report_link})
    pools = pools_held(out)
    html = _env.get_template("sweep.html.j2").render(tables=tables, plots=plots, cases=cases, out_dir=str(out), pools=pools)
    path = out / REPORT_HTML  # a sweep's folder names its report as a run folder does
    atomic_write_text(path, html)
    return path
