"""NodeTasks keeps the task-group promises the runner relies on, with plain asyncio tasks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from umni.util.tasks import NodeTasks


def sleeper(cancelled: list[str]) -> Callable[[], Awaitable[None]]:
    """A task that would sleep for 30 s and notes in `cancelled` that it was cancelled instead."""

    async def slow() -> None:
        try:
            await anyio.sleep(30)
        except BaseException:
            cancelled.append("slow")
            raise

    return slow


def test_a_normal_end_waits_for_every_task_and_the_tasks_they_start() -> None:
    finished: list[str] = []

    async def leaf(name: str) -> None:
        await anyio.sleep(0.01)
        finished.append(name)

    async def parent(tasks: NodeTasks) -> None:
        await anyio.sleep(0)
        tasks.start(leaf, "child")
        finished.append("parent")

    async def main() -> None:
        tasks = NodeTasks()

        async def body() -> None:
            tasks.start(parent, tasks)
            tasks.start(leaf, "sibling")

        await tasks.run(body)
        assert sorted(finished) == ["child", "parent", "sibling"]

    anyio.run(main)


def test_the_first_error_cancels_the_other_tasks_and_is_raised() -> None:
    cancelled: list[str] = []
    slow = sleeper(cancelled)

    async def broken() -> None:
        await anyio.sleep(0.01)
        raise OSError("disk gone")

    async def main() -> None:
        tasks = NodeTasks()
        never = anyio.Event()

        async def body() -> None:
            tasks.start(slow)
            tasks.start(broken)
            await never.wait()  # the run's own wait is cancelled too

        with pytest.raises(BaseExceptionGroup) as caught:
            with anyio.fail_after(5):
                await tasks.run(body)
        assert [type(e) for e in caught.value.exceptions] == [OSError]
        assert cancelled == ["slow"]

    anyio.run(main)


def test_an_error_in_the_body_cancels_the_tasks_already_started() -> None:
    cancelled: list[str] = []
    slow = sleeper(cancelled)

    async def main() -> None:
        tasks = NodeTasks()

        async def body() -> None:
            tasks.start(slow)
            await anyio.sleep(0)
            raise ValueError("bad graph")

        with pytest.raises(BaseExceptionGroup) as caught:
            await tasks.run(body)
        assert [type(e) for e in caught.value.exceptions] == [ValueError]
        assert cancelled == ["slow"]

    anyio.run(main)


def test_cancelling_the_run_from_outside_leaves_no_task_running() -> None:
    cancelled: list[str] = []
    slow = sleeper(cancelled)

    async def main() -> None:
        tasks = NodeTasks()

        async def body() -> None:
            tasks.start(slow)
            await anyio.sleep(30)

        with anyio.move_on_after(0.05):
            await tasks.run(body)
        assert cancelled == ["slow"]

    anyio.run(main)
