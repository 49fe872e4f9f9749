"""``compute``: plain Python over other nodes' outputs, run in process; its result must be JSON."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from pydantic import BaseModel

from umni.engine.kinds import register
from umni.engine.kinds.base import ANY_TYPE, Kind, KindContext, Slot
from umni.graph.graph import Node, Ref
from umni.graph.params import ComputeParams
from umni.util.errors import ConfigError


class ValueOutput(BaseModel):
    value: Any


def json_output(value: Any, where: str = "value") -> Any:
    """`value` as plain JSON data, numpy scalars and arrays converted; TypeError names what is not.

    A compute function's result is stored, hashed into downstream keys and written to results, so
    it must be JSON: a numpy number becomes the Python number, an array a (nested) list."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.generic):
            return json_output(value.item(), where)
        if isinstance(value, numpy.ndarray):
            if value.dtype.kind not in "biuf":
                raise TypeError(f"{where} is a numpy array of dtype {value.dtype}, which is not JSON")
            return value.tolist()
    if isinstance(value, (list, tuple)):
        return [json_output(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{where} has a key {bad[0]!r} that is not a string")
        return {k: json_output(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which is not JSON")


class Compute(Kind):
    name = "compute"
    calls_backend: ClassVar[bool] = False
    Output = ValueOutput
    Params = ComputeParams

    def check(self, node: Node, where: str) -> None:
        if node.fn is None:
            raise ConfigError(f"{where}: compute node has no function")
        self.Params.of(node, where)
        for name, value in node.inputs.items():
            if not isinstance(value, Ref):
                raise ConfigError(
                    f"{where}: compute input '{name}' is {type(value).__name__}, not a node output (Ref); fixed values go in const={{...}}"
                )

    def slots(self, node: Node) -> Iterator[Slot]:
        for name, ref in node.inputs.items():
            yield f"input '{name}'", ref, ANY_TYPE

    async def execute(self, ctx: KindContext) -> ValueOutput:
        node = ctx.node
        fn = node.fn
        assert fn is not None
        const = ComputeParams.of(node).const
        ctx.calls += 1

        def compute() -> Any:
            return json_output(fn(**const, **ctx.values()), f"the value returned by compute node '{node.id}'")

        # Off the event loop, so a slow metric (OCR, a segmentation score) never holds up model
        # calls; on one thread, so compute functions still run one at a time, as they always have.
        value = await asyncio.get_running_loop().run_in_executor(_COMPUTE_THREAD, compute)
        return ValueOutput(value=value)


#: The thread every compute function runs on (one per process: a sweep's runs share it).
_COMPUTE_THREAD = ThreadPoolExecutor(1, thread_name_prefix="umni-compute")


register(Compute())
