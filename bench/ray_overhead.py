"""Ray placement overhead: what one call costs through a pool of Ray actors compared with the same
backend in this process. The backend is `sim/umm`, whose answers cost almost nothing, so the
difference is Ray's: pickling arguments and replies, the actor round trip, the pool's dispatch.
A second pair of figures is an edit of a 512x512 image, where the image goes to the replica and the
edited one comes back as PNG bytes (`umni.placement_wire`).

Run: python -m bench --only ray_overhead
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from PIL import Image

from umni.backends import Backend, create_backend
from umni.util.spec import Spec


def _respond(backend: Any, i: int) -> Any:
    return backend.respond([f"question {i}"], seed=i)


_PICTURE = Image.new("RGB", (512, 512), (40, 90, 160))


def _edit(backend: Any, i: int) -> Any:
    return backend.edit([_PICTURE], f"make it brighter {i}", seed=i)


async def _per_call_us(backend: Backend, calls: int, concurrency: int, call: Callable[[Any, int], Any] = _respond) -> float:
    await backend.ensure_started()
    try:
        await call(backend, -1)  # warm up
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                await call(backend, i)

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return (time.perf_counter() - started) / calls * 1e6
    finally:
        await backend.ensure_closed()


def run(calls: int = 500, replicas: int = 2, concurrency: int = 8) -> dict[str, Any]:
    try:
        import ray
    except ImportError:
        return {"name": "ray_overhead", "skipped": "Ray is not installed (pip install 'umni[ray]')"}
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=max(2, replicas), include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        local = asyncio.run(_per_call_us(create_backend(Spec.parse("sim/umm")), calls, concurrency))
        placed_spec = Spec.parse(f"sim/umm?placement=ray&replicas={replicas}&cpus=0.5")
        placed = asyncio.run(_per_call_us(create_backend(placed_spec), calls, concurrency))
        edits = max(20, calls // 10)
        local_edit = asyncio.run(_per_call_us(create_backend(Spec.parse("sim/umm")), edits, concurrency, _edit))
        placed_edit = asyncio.run(_per_call_us(create_backend(placed_spec), edits, concurrency, _edit))
    finally:
        if started_here:
            ray.shutdown()
    return {
        "name": "ray_overhead",
        "params": {"calls": calls, "replicas": replicas, "concurrency": concurrency},
        "in_process_us_per_call": local,
        "ray_us_per_call": placed,
        "ray_over_in_process": placed / local,
        "ray_added_us_per_call": placed - local,
        "edit_512px_in_process_us_per_call": local_edit,
        "edit_512px_ray_us_per_call": placed_edit,
        "edit_512px_ray_added_us_per_call": placed_edit - local_edit,
    }
