"""Real-size throughput: images per second of one UMM and replies per second of one judge, batch 1 vs N.

Give the real checkpoints as umni specs (docs/models.md's family tables list them), on a GPU machine:

    python -m bench.gpu_throughput --umm 'diffusers/black-forest-labs/FLUX.1-dev?steps=28&dtype=bf16' \
        --judge 'hf/Qwen/Qwen2.5-VL-7B-Instruct?dtype=bf16' -n 16 --batch-size 8

Each model is loaded once through its real backend; the same ``n`` requests, all started at once, run
with ``batch_size=1`` and with ``batch_size=N`` in the same process, and the script prints per second
figures, the ratio, wall and CPU seconds and the peak accelerator memory of each run
(``torch.cuda.max_memory_allocated``; none on a CPU), with the device name. ``--tiny`` builds tiny
random models (the test suite's builders) instead: a smoke test that runs on any CPU and says
nothing about real speed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .repo import load_repo_module


def _backend(spec: str, batch_size: int) -> Any:
    from umni.backends import create_backend
    from umni.util.spec import Spec

    joiner = "&" if "?" in spec else "?"
    return create_backend(Spec.parse(f"{spec}{joiner}batch_size={batch_size}"))


def _measure(spec: str, role: str, n: int, batch_size: int) -> dict[str, Any]:
    import anyio
    import numpy as np
    import torch
    from PIL import Image

    model = _backend(spec, batch_size)
    anyio.run(model.start)
    picture = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8))

    async def one(i: int) -> Any:
        if role == "umm":
            return await model.generate([f"a photo of {i} red cubes on a table"], seed=i)
        return await model.choose([picture, f"Does the image show {i} cubes?"], ["yes", "no"], seed=i)

    async def all_at_once() -> None:
        async with anyio.create_task_group() as group:
            for i in range(n):
                group.start_soon(one, i)

    anyio.run(all_at_once)  # warm-up
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    wall, cpu = time.perf_counter(), time.process_time()
    anyio.run(all_at_once)
    if cuda:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    return {"per_second": n / wall, "wall_seconds": wall, "cpu_seconds": cpu, "peak_gib": peak}


def run(umm: str, judge: str, *, n: int, batch_size: int) -> dict[str, Any]:
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    result: dict[str, Any] = {"device": device, "n": n, "batch_size": batch_size}
    for role, spec in (("umm", umm), ("judge", judge)):
        one = _measure(spec, role, n, 1)
        many = _measure(spec, role, n, batch_size)
        result[role] = {"spec": spec, "unit": "images" if role == "umm" else "replies", "batch_1": one,
                        f"batch_{batch_size}": many, "speedup": many["per_second"] / one["per_second"]}
    return result


def _tiny_specs(root: Path) -> tuple[str, str]:
    diffusers = load_repo_module("tests/adapters/tiny_diffusers.py", "umni_gpu_tiny_diffusers", "--tiny")
    hf = load_repo_module("tests/adapters/tiny_hf.py", "umni_gpu_tiny_hf", "--tiny")
    sd = diffusers.build_tiny_sd(root / "sd")
    judge = hf.build_idefics3(root / "idefics3")
    return f"diffusers/{sd}?steps=2&width=32&height=32", f"hf/{judge}?mode=likelihood"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--umm", help="spec of the image model (generate)")
    parser.add_argument("--judge", help="spec of the judge (multiple-choice replies)")
    parser.add_argument("--tiny", action="store_true", help="tiny random models: a CPU smoke test")
    parser.add_argument("-n", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with tempfile.TemporaryDirectory(prefix="umni-gpu-throughput-") as tmp:
        if args.tiny:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            umm, judge = _tiny_specs(Path(tmp))
        elif args.umm and args.judge:
            umm, judge = args.umm, args.judge
        else:
            parser.error("give --umm and --judge specs, or --tiny")
        result = run(umm, judge, n=args.n, batch_size=args.batch_size)
    print(json.dumps(result, indent=2))
    for role in ("umm", "judge"):
        figures = result[role]
        one, many = figures["batch_1"], figures[f"batch_{args.batch_size}"]
        peak = "" if many["peak_gib"] is None else f", peak {one['peak_gib']:.1f} vs {many['peak_gib']:.1f} GiB"
        print(f"{role}: {figures['unit']}/s batch {args.batch_size} vs 1 on {result['device']}: "
              f"{many['per_second']:.2f} vs {one['per_second']:.2f} = {figures['speedup']:.2f}x{peak}")


if __name__ == "__main__":
    main()
