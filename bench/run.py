"""Run umni's benchmark suite: print a table, write one JSON object per benchmark.

    python -m bench                  # full suite (about ten minutes on two cores; scale runs 20,000 cases)
    python -m bench --quick          # same benchmarks, smaller scale sizes (about two minutes)
    python -m bench --smoke          # tiny sizes, seconds of work: checks the suite still runs (CI)
    python -m bench --only overhead,latency --json out.json

Run from the repository root after ``pip install -e '.[all]'`` (the HTTP and batching benchmarks
use helpers under ``tests/``). Ratios are always measured within one run on one machine; every JSON
object carries that machine's description. A missed target is reported, not an error; ``--strict``
makes it exit 1 (for a dedicated benchmark machine, not shared CI).
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from umni import __version__

from . import batching, hf_batching, inspect_compare, latency, overhead, ray_overhead, scale, stores, swap
from .machine import calibrate, calibration_line, cpu_seconds, machine


@dataclass(frozen=True)
class Sizes:
    overhead_cases: int
    overhead_answers: int
    image_cases: int
    image_side: int
    latency_cases: int
    latency_s: float
    concurrency: int
    naive_cases: int
    swap_cases: int
    scale_sizes: tuple[int, int]
    batch_n: int
    batch_size: int
    batch_steps: int
    #: inspect_ai comparison: samples, calls per sample, seconds per call, calls in flight
    inspect: tuple[int, int, float, int] = (1000, 4, 0.05, 64)


MODES = {
    # 1,000 cases x (19 answers + 1 compute) = 20,000 trivial nodes
    "full": Sizes(1000, 19, 100, 512, 100, 0.05, 16, 10, 100, (1000, 20000), 16, 4, 4),
    "quick": Sizes(250, 19, 50, 512, 100, 0.05, 16, 5, 100, (300, 3000), 8, 4, 2, inspect=(300, 4, 0.05, 64)),
    "smoke": Sizes(20, 9, 4, 64, 8, 0.01, 4, 2, 6, (8, 24), 2, 2, 1, inspect=(20, 2, 0.01, 8)),
}


def _benchmarks(s: Sizes) -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        "overhead": lambda: overhead.run(
            cases=s.overhead_cases, answers_per_case=s.overhead_answers, image_cases=s.image_cases, image_side=s.image_side
        ),
        "latency": lambda: latency.run(
            cases=s.latency_cases, latency=s.latency_s, concurrency=s.concurrency, naive_cases=s.naive_cases
        ),
        "swap": lambda: swap.run(cases=s.swap_cases, latency=s.latency_s, concurrency=s.concurrency),
        "scale": lambda: scale.run(sizes=s.scale_sizes),
        "inspect": lambda: inspect_compare.run(
            samples=s.inspect[0], calls=s.inspect[1], latency=s.inspect[2], concurrency=s.inspect[3]
        ),
        "batching": lambda: batching.run(n=s.batch_n, batch_size=s.batch_size, steps=s.batch_steps, side=32),
        "hf_batching": lambda: hf_batching.run(n=s.batch_n, batch_size=min(8, s.batch_n)),
        "ray_overhead": lambda: ray_overhead.run(calls=max(40, s.overhead_cases * 2)),
        "stores": lambda: stores.run(
            cases=s.overhead_cases // 5, answers_per_case=s.overhead_answers, writes=max(20, s.overhead_cases // 5)
        ),
    }


def _ok(flag: bool | None) -> str:
    return {True: "yes", False: "MISSED", None: "—"}[flag]


def _rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, met) rows for the printed table."""
    if "error" in result:
        return [("error", result["error"].splitlines()[-1][:80], "", "ERROR")]
    if "skipped" in result:
        return [("skipped", result["skipped"], "", "—")]
    name = result["name"]
    if name == "engine_overhead":
        return [
            (f"overhead per trivial node ({result['nodes']:,} nodes)", f"{result['overhead_us_per_node']:.0f} µs (engine CPU {result['engine_cpu_us_per_node']:.0f} µs)", f"≤ {overhead.TARGET_US_PER_NODE:.0f} µs", _ok(result["meets_target"])),
            ("engine / direct loop (wall)", f"{result['engine_seconds']:.2f} s / {result['direct_seconds']:.3f} s = {result['ratio_engine_to_direct']:.0f}× (engine CPU {result['engine_cpu_seconds']:.2f} s)", "", ""),
            ("cached rerun per node (wall, CPU)", f"{result['cached_us_per_node']:.0f} µs, CPU {result['cached_cpu_us_per_node']:.0f} µs", "", ""),
            ("cache write (Cache.put)", f"{result['cache_put_us']:.0f} µs", "", ""),
            ("event log line", f"{result['event_emit_us']:.0f} µs", "", ""),
            (f"per image node ({result['params']['image_side']}² PNG)", f"{result['image_overhead_us_per_node'] / 1000:.1f} ms", "", ""),
        ]
    if name == "latency_hiding":
        rows = []
        for r in result["runs"]:
            extra = f", server CPU {r['server_cpu_seconds']:.1f} s" if r.get("server_cpu_seconds") is not None else ""
            rows += [
                (f"{r['backend']}: wall vs ideal (engine CPU)", f"{r['wall_seconds']:.2f} s vs {r['ideal_seconds']:.2f} s = {r['wall_over_ideal']:.2f}× (CPU {r['process_cpu_seconds']:.2f} s)", "≤ 1.2×", _ok(r["meets_wall_target"])),
                (f"{r['backend']}: speedup over naive loop", f"{r['speedup_over_naive']:.1f}× (naive {r['naive_seconds']:.1f} s)", f"≥ {0.8 * r['concurrency']:g}×", _ok(r["meets_speedup_target"])),
                (f"{r['backend']}: calls, critical path, CPU", f"{r['calls']} calls, {r['critical_path_calls']} deep, engine CPU {r['process_cpu_seconds']:.1f} s{extra}", "", ""),
            ]
        return rows
    if name == "module_swap":
        return [
            ("generate+edit calls on rerun", str(result["second_generate_edit_calls"]), "0", _ok(result["meets_target"])),
            ("rerun wall / first wall", f"{result['second_seconds']:.2f} s / {result['first_seconds']:.2f} s = {result['second_over_first']:.2f}", "", ""),
        ]
    if name == "scale":
        rows = []
        for n, r in result["sizes"].items():
            rows.append((f"{int(n):,} cases", f"{r['ms_per_case']:.1f} ms/case (CPU {r['cpu_ms_per_case']:.1f}), peak RSS {r['peak_rss_mib']:.0f} MiB", "", ""))
        rows.append(("time per case, large / small", f"{result['time_per_case_ratio']:.2f}", "≤ 1.2", _ok(result["time_per_case_ratio"] <= scale.TIME_RATIO_TARGET)))
        target = scale.RSS_TARGET_BYTES / 2**20
        rows.append(("peak RSS, large", f"{result['peak_rss_mib_large']:.0f} MiB", f"≤ {target:.0f} MiB", _ok(result["peak_rss_mib_large"] <= target)))
        return rows
    if name == "local_batching":
        return [
            (f"images/s, batch {result['batch_size']} vs 1 ({result['device']})", f"{result['batched_images_per_second']:.2f} vs {result['sequential_images_per_second']:.2f} = {result['speedup']:.2f}×", "", ""),
            ("pipeline calls, batched vs one by one", f"{result['batched_calls']} vs {result['sequential_calls']} (max pixel diff {result['max_pixel_difference']})", "", ""),
        ]
    if name == "hf_batching":
        b, one = result["batched"], result["sequential"]
        return [
            (f"answers/s, batch {result['params']['batch_size']} vs 1 ({result['device']})", f"{b['answers_per_second']:.2f} vs {one['answers_per_second']:.2f} = {result['answers_speedup']:.2f}×", "", ""),
            (f"images/s, batch {result['params']['batch_size']} vs 1 ({result['device']})", f"{b['images_per_second']:.2f} vs {one['images_per_second']:.2f} = {result['images_speedup']:.2f}×", "", ""),
            ("replies identical batched and alone", str(result["identical_replies"]), "True", _ok(result["identical_replies"])),
        ]
    if name == "inspect_compare":
        p = result["params"]
        rows = [(f"umni: {p['samples']} samples × {p['calls_per_sample']} chained calls, {p['latency_s']} s each, {p['concurrency']} in flight",
                 f"{result['umni_seconds']:.2f} s = {result['umni_over_ideal']:.2f}× ideal ({result['ideal_seconds']:.2f} s); "
                 f"CPU {result['umni_cpu_seconds']:.2f} s = {result['umni_cpu_us_per_node']:.0f} µs/node",
                 f"≤ {inspect_compare.IDEAL_TARGET}×", _ok(result["umni_over_ideal"] <= inspect_compare.IDEAL_TARGET))]
        if isinstance(result["inspect"], str):
            return [*rows, ("inspect_ai", result["inspect"], "", "—")]
        for label, r in result["inspect"].items():
            rows.append((f"inspect_ai {result['inspect_version']} ({label})",
                         f"{r['inspect_seconds']:.2f} s, CPU {r['inspect_cpu_seconds']:.2f} s = {r['inspect_cpu_us_per_node']:.0f} µs/node; "
                         f"umni / inspect = {r['umni_over_inspect']:.2f}", "< 1", _ok(r["umni_over_inspect"] < 1)))
            rows.append(("  CPU per node, umni / inspect_ai", f"{r['umni_cpu_over_inspect']:.2f}",
                         f"≤ {inspect_compare.CPU_TARGET}", _ok(r["umni_cpu_over_inspect"] <= inspect_compare.CPU_TARGET)))
        return rows
    if name == "stores":
        rows = []
        for store in ("sqlite", "postgresql"):
            r = result[store]
            if isinstance(r, str):
                rows.append((store, r[:80], "", "—"))
                continue
            rows += [
                (f"{store}: per node computed / cached ({result['params']['nodes']:,} nodes)",
                 f"{r['computed_us_per_node']:.0f} µs / {r['cached_us_per_node']:.0f} µs", "", ""),
                (f"{store}: put alone / in a burst / get",
                 f"{r['put_alone_us']:.0f} / {r['put_in_burst_us']:.0f} / {r['get_us']:.0f} µs", "", ""),
            ]
        if "postgres_over_sqlite_computed" in result:
            rows.append(("PostgreSQL / SQLite per node, computed / cached",
                         f"{result['postgres_over_sqlite_computed']:.2f}× / {result['postgres_over_sqlite_cached']:.2f}×", "", ""))
        return rows
    if name == "ray_overhead":
        return [
            ("per call in process / through Ray", f"{result['in_process_us_per_call']:.0f} µs / {result['ray_us_per_call']:.0f} µs", "", ""),
            ("Ray over in process", f"{result['ray_over_in_process']:.1f}×", "", ""),
            ("512px edit in process / through Ray (PNG both ways)",
             f"{result['edit_512px_in_process_us_per_call']:.0f} µs / {result['edit_512px_ray_us_per_call']:.0f} µs", "", ""),
        ]
    return [("result", json.dumps(result)[:80], "", "")]


def _cost_row(result: dict[str, Any]) -> tuple[str, str, str, str]:
    """Wall and CPU seconds of the whole benchmark (this process and the children it waited for)."""
    return ("whole benchmark: wall / CPU", f"{result['seconds_to_run']:.1f} s / {result['cpu_seconds_to_run']:.1f} s", "", "")


def print_table(results: list[dict[str, Any]], console: Console, calibration: dict[str, float] | None = None) -> None:
    info = machine()
    table = Table(title=f"umni benchmarks — {info['cpu_model']}, {info['usable_cpus']} CPUs, Python {info['python']}")
    for column in ("benchmark", "figure", "value", "target", "met"):
        table.add_column(column)
    for result in results:
        rows = _rows(result)
        if "seconds_to_run" in result and "cpu_seconds_to_run" in result:
            rows.append(_cost_row(result))
        for i, (figure, value, target, met) in enumerate(rows):
            table.add_row(result["name"] if i == 0 else "", figure, value, target, met)
        table.add_section()
    console.print(table)
    if calibration:
        console.print(calibration_line(calibration))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--smoke", action="store_const", const="smoke", dest="mode", help="tiny sizes (seconds); used by the test suite")
    mode.add_argument("--quick", action="store_const", const="quick", dest="mode", help="smaller scale sizes (300 and 3,000 cases)")
    parser.add_argument("--only", default="", help=f"comma list of: {', '.join(_benchmarks(MODES['smoke']))}")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"), help="where to write results (default: %(default)s)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    mode_name = args.mode or "full"
    benchmarks = _benchmarks(MODES[mode_name])
    chosen = [b.strip() for b in args.only.split(",") if b.strip()] or list(benchmarks)
    unknown = sorted(set(chosen) - set(benchmarks))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(benchmarks)}")

    console = Console(stderr=True)
    calibration = {"before_seconds": calibrate()}
    console.print(calibration_line(calibration))
    results: list[dict[str, Any]] = []
    for key in chosen:
        console.print(f"[bold]running {key}[/bold] ({mode_name})")
        began, cpu_began = time.perf_counter(), cpu_seconds()
        try:
            result = benchmarks[key]()
        except Exception:
            result = {"name": key, "error": traceback.format_exc(), "meets_target": None}
            console.print(result["error"])
        result["seconds_to_run"] = time.perf_counter() - began
        result["cpu_seconds_to_run"] = cpu_seconds() - cpu_began
        result["calibration"] = calibration
        result["mode"] = mode_name
        result["umni_version"] = __version__
        result["machine"] = machine()
        results.append(result)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")  # partial results survive a crash

    calibration["after_seconds"] = calibrate()
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out = Console()
    print_table(results, out if out.is_terminal else Console(width=150), calibration)
    console.print(f"results written to {args.json}")
    if any("error" in r for r in results):
        return 1
    if args.strict and any(r.get("meets_target") is False for r in results):
        return 1
    return 0
