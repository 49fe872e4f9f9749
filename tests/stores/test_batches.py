"""The one batching loop both stores use (writes, and PostgreSQL's reads)."""

from __future__ import annotations

import anyio
import pytest

from umni.store.results import Batches


def test_requests_made_while_a_batch_is_out_go_together_in_the_next_one() -> None:
    seen: list[list[int]] = []

    async def handle(items: list[int]) -> list[int]:
        seen.append(items)
        await anyio.sleep(0.01)
        return [i * 10 for i in items]

    async def main() -> list[int]:
        batches: Batches[int, int] = Batches(handle, max_batch=3)
        results: dict[int, int] = {}

        async def one(i: int) -> None:
            results[i] = await batches.submit(i)

        async with anyio.create_task_group() as tg:
            for i in range(7):
                tg.start_soon(one, i)
        return [results[i] for i in range(7)]

    assert anyio.run(main) == [0, 10, 20, 30, 40, 50, 60]
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]  # all queued before the batching task ran; 3 at most a batch


def test_a_failed_batch_reaches_each_of_its_callers_and_the_next_batch_still_runs() -> None:
    async def handle(items: list[str]) -> list[str]:
        await anyio.sleep(0.01)
        if "bad" in items:
            raise OSError("disk full")
        return [item.upper() for item in items]

    async def main() -> dict[str, object]:
        batches: Batches[str, str] = Batches(handle, max_batch=2)
        outcome: dict[str, object] = {}

        async def one(item: str) -> None:
            try:
                outcome[item] = await batches.submit(item)
            except OSError as exc:
                outcome[item] = exc

        async with anyio.create_task_group() as tg:
            for item in ("bad", "with-bad", "later"):
                tg.start_soon(one, item)
        await batches.drain()
        return outcome

    outcome = anyio.run(main)
    assert isinstance(outcome["bad"], OSError) and isinstance(outcome["with-bad"], OSError)
    assert outcome["later"] == "LATER"


@pytest.mark.parametrize("max_batch", [1, 512])
def test_a_store_used_from_two_event_loops_in_turn_serves_both(max_batch: int) -> None:
    async def handle(items: list[int]) -> list[int]:
        return [i + 1 for i in items]

    batches: Batches[int, int] = Batches(handle, max_batch=max_batch)
    assert anyio.run(batches.submit, 1) == 2
    assert anyio.run(batches.submit, 5) == 6
