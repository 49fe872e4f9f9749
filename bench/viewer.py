"""Benchmark — `umni view` on a large run: start, first page, search, one case, memory.

A real 6-case UmniBench run on the offline `sim/umm` backend is made, then its records are
replicated (ids and domains renamed, every 10th case given a failed node with a raw reply) into an
N-case run directory, and the finish step's viewer files (tables.json, the case index) are written
by `write_viewer_files` as `RunDir.finish` writes them — with `--resamples` bootstrap resamples, as
the interval is not what is measured here. Then `umni view DIR` runs in its own process, as a user
starts it, and is measured over HTTP (gzip accepted, as a browser asks):

- seconds until it prints its URL (and the CPU seconds of that start, from /proc);
- seconds for /api/index.json plus the first page of /api/cases (what the case list shows first);
- seconds for a search that matches only text deep inside one case (a failure's raw reply);
- seconds for one case's detail (read at its offset in results.jsonl);
- the server's peak RSS (VmHWM) after all of it.

Run from the repository root: ``python -m bench.viewer --cases 20000 [--json out.json]``.

``--baseline CHECKOUT --repeat N``: the same run directory is also served by the ``umni`` package of
another checkout (``CHECKOUT/umni``, put first on PYTHONPATH; the protocols still come from this
install), the two alternated N times in one session; each figure is the median of its N starts,
with the ratio this/baseline of the start's wall and CPU seconds. To compare with a commit:
``git archive COMMIT umni | tar -x -C /tmp/base`` and ``--baseline /tmp/base``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from umni.store.runfolder import RunFolder

DOMAINS = ["Spatial", "Plant", "Fluid", "Optics", "Mechanics"]


def make_run(root: Path, cases: int) -> Path:
    """An N-case UmniBench run directory replicated from a real small run."""
    from umni.run.evaluation import RunRequest, evaluate

    small = RunFolder(root / "small")
    evaluate(RunRequest(protocol="umnibench", model="sim/umm", limit=6, out=small.path, cache=root / "cache", progress=False))
    records = list(small.each_record())
    big = RunFolder(root / "big")
    big.path.mkdir()
    failed = 0

    def made() -> Iterator[dict[str, Any]]:
        nonlocal failed
        for i in range(cases):
            record = json.loads(json.dumps(records[i % len(records)]))
            record["case_id"] = f"case-{i:05d}"
            record["domain"] = DOMAINS[i % len(DOMAINS)]
            if i % 10 == 0:
                failed += 1
                record["nodes"]["generation/Q1"] = {"status": "failed", "failure": {
                    "kind": "parse", "message": f"no option letter in reply {i}", "attempts": 2, "raw": f"I think maybe the answer is purple {i}"}}
            yield record

    big.write_results(made())
    summary = small.read_summary()
    summary.counts = summary.counts.model_copy(update={"cases": cases, "nodes": 12 * cases})
    summary.failures = summary.failures | {"parse": failed}
    summary.run_dir = str(big.path)
    big.write_summary(summary)
    big.write_manifest(small.read_manifest())
    return big.path


def _get(url: str) -> tuple[float, Any]:
    began = time.perf_counter()
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return time.perf_counter() - began, json.loads(body)


def _proc(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of a live process."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    peak = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM")) / 1024
    return cpu, peak


def measure(big: Path, cases: int, pythonpath: Path | None = None) -> dict[str, float]:
    """One `umni view DIR` start and its first requests (`pythonpath`: another checkout's umni)."""
    import os

    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), *filter(None, [env.get("PYTHONPATH")])])
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "umni", "view", str(big)], stdout=subprocess.PIPE, text=True, env=env,
                               cwd=big.parent)  # not a checkout: `-m` puts the working directory first on sys.path
    try:
        line = process.stdout.readline() if process.stdout else ""
        start_s = time.perf_counter() - began
        start_cpu, _ = _proc(process.pid)
        url = line.split()[2]
        index_s, _ = _get(url + "api/index.json")
        page_s, page = _get(url + "api/cases?offset=0&limit=50")
        last = (cases - 1) // 10 * 10
        search_s, found = _get(url + f"api/cases?q=purple+{last}")
        case_s, _ = _get(url + f"api/case?run=big&id=case-{last:05d}")
        cpu, peak = _proc(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {
        "url_after_seconds": start_s, "start_cpu_seconds": start_cpu, "first_page_seconds": index_s + page_s,
        "first_page_cases": len(page["cases"]), "search_seconds": search_s, "search_hits": found["total"],
        "case_seconds": case_s, "server_cpu_seconds": cpu, "peak_rss_mib": peak,
    }


_DIGITS = {"url_after_seconds": 2, "start_cpu_seconds": 2, "first_page_seconds": 3, "search_seconds": 3, "case_seconds": 3,
           "server_cpu_seconds": 2, "peak_rss_mib": 0, "first_page_cases": 0, "search_hits": 0}


def _medians(samples: list[dict[str, float]]) -> dict[str, float]:
    from statistics import median

    return {key: round(median(s[key] for s in samples), _DIGITS[key] or None) for key in samples[0]}


def run(*, cases: int, resamples: int = 30, baseline: Path | None = None, repeat: int = 1) -> dict[str, Any]:
    from umni.protocols.protocol import get_protocol
    from umni.reporting import intervals
    from umni.reporting.caseindex import write_viewer_files

    with tempfile.TemporaryDirectory() as tmp:
        big = make_run(Path(tmp), cases)
        intervals.BOOTSTRAP_RESAMPLES = resamples
        began = time.perf_counter()
        write_viewer_files(big, get_protocol("umnibench"), RunFolder(big).read_summary())
        finish_s = time.perf_counter() - began
        mine: list[dict[str, float]] = []
        theirs: list[dict[str, float]] = []
        for round_ in range(repeat):  # alternated, each side first every other round
            sides = [(mine, None), (theirs, baseline)] if baseline is not None else [(mine, None)]
            for samples, pythonpath in sides if round_ % 2 == 0 else reversed(sides):
                samples.append(measure(big, cases, pythonpath))
        result: dict[str, Any] = {
            "name": "viewer", "cases": cases, "results_mib": round(RunFolder(big).results_jsonl.stat().st_size / 2**20, 1),
            "finish_step_seconds": round(finish_s, 2), "bootstrap_resamples": resamples, "repeat": repeat, **_medians(mine),
        }
        if baseline is not None:
            result["baseline"] = {"checkout": str(baseline), **_medians(theirs)}
            for key in ("url_after_seconds", "start_cpu_seconds"):
                result[f"{key.removesuffix('_seconds')}_ratio"] = round(result[key] / result["baseline"][key], 2)
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--resamples", type=int, default=30)
    parser.add_argument("--baseline", type=Path, help="another checkout whose umni package serves the same run, alternated with this one")
    parser.add_argument("--repeat", type=int, default=1, help="starts of each side (medians reported)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from .machine import emit

    return emit(run(cases=args.cases, resamples=args.resamples, baseline=args.baseline, repeat=args.repeat), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
