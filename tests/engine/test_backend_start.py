"""Backends start side by side: each of two backends here finishes starting only once the other has
begun, which can only happen when their starts overlap (one after the other would wait forever)."""

import anyio
import pytest

from umni.backends.contract import Backend, start_backends
from umni.util.spec import Spec


class SlowToLoad(Backend):
    provider = "slow"

    def __init__(self, name: str, began: dict[str, anyio.Event]) -> None:
        super().__init__(Spec.parse(f"slow/{name}"))
        self.name = name
        self.began = began

    async def start(self) -> None:
        self.began[self.name].set()
        other = "judge" if self.name == "painter" else "painter"
        await self.began[other].wait()  # a sequential start would never see the other begin


def test_backends_start_concurrently():
    async def main() -> None:
        began = {"painter": anyio.Event(), "judge": anyio.Event()}
        backends = [SlowToLoad("painter", began), SlowToLoad("judge", began)]
        with anyio.fail_after(5):
            await start_backends(backends)
        assert all(b._started for b in backends)

    anyio.run(main)


def test_a_failing_start_is_raised():
    class Broken(Backend):
        provider = "broken"

        async def start(self) -> None:
            raise RuntimeError("weights not found")

    with pytest.raises(RuntimeError, match="weights not found"):  # the error itself, not a group
        anyio.run(start_backends, [Broken(Spec.parse("broken/x"))])
