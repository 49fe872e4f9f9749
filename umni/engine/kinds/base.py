"""What a node kind is, and the context its `execute` runs in.

A kind declares the role it uses by default, what it outputs (image / text / value, for typed
`Ref`s), which of a node's inputs it reads and of what type (`slots`, checked by
`Graph.validate`), a pydantic model of its output, and `async execute(ctx)`. The runner only
schedules: it finds the kind by name, hands it a `KindContext`, and stores what it returns.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
from PIL import Image
from pydantic import BaseModel

from umni.backends.roles import Usage
from umni.engine.kinds.inputs import InputReader
from umni.engine.lanes import Place
from umni.graph.nodes import ImageFile, Node, OutputType, Ref
from umni.graph.outcomes import Outcome
from umni.graph.params import NodeParams
from umni.graph.registry import Slot
from umni.store.cache import Cache
from umni.store.hashing import fingerprint
from umni.store.imageref import ImageRef
from umni.util.errors import BackendError, ConfigError, DegenerateOutput
from umni.util.events import EventLog
from umni.util.policy import DEFAULT_CACHE, CachePolicy, RetryPolicy
from umni.util.progress import Progress

#: Smallest side an image may have and still be scored.
MIN_IMAGE_SIDE = 8


@functools.cache
def _state_owner() -> Any:
    """The retry object a call state names (tenacity wants one; our loop reads only the state).
    Made, with tenacity imported, at the first retry: a run whose calls succeed, or that makes
    none (every node in the store), never loads it."""
    from tenacity import Retrying

    return Retrying()

PROMPT_TYPES: tuple[OutputType, ...] = ("image", "text", "value")
IMAGE_TYPES: tuple[OutputType, ...] = ("image",)
ANY_TYPE: tuple[OutputType, ...] = ("any",)


#: The order node statuses are listed in, per role.
STATUS_ORDER = ("computed", "cached", "failed", "blocked", "skipped", "pending")


@dataclass
class RunStats:
    """What this invocation did: node statuses (in all and per role), failures by kind, calls and
    usage per role."""

    statuses: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    usage: dict[str, Usage] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    #: (role, status) -> nodes; a node no backend fills counts under its kind (``compute``)
    role_statuses: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add_usage(self, role: str, usage: Usage) -> None:
        self.usage.setdefault(role, Usage(calls=0)).add(usage)

    def nodes_by_role(self) -> dict[str, dict[str, int]]:
        """Role -> status -> nodes, roles sorted and statuses in `STATUS_ORDER`: which work this
        invocation did and which it took from the store (a rebound judge: only judge nodes computed)."""
        roles = sorted({role for role, _ in self.role_statuses})
        return {
            role: {status: n for status in STATUS_ORDER if (n := self.role_statuses[role, status])} for role in roles
        }


@dataclass
class Services:
    """What every node execution of one runner shares: cache, input reader, counters, logs."""

    cache: Cache
    inputs: InputReader
    stats: RunStats
    events: EventLog
    progress: Progress
    retry: RetryPolicy
    seed: int


def check_usage(usage: Usage) -> None:
    """Refuse usage counts that are not finite non-negative integers (unknown, None, is allowed):
    a server reporting -5 or Infinity tokens is misbehaving, and its counts would corrupt the run's
    totals and cost, so the call is a backend failure rather than a silently summed number."""
    for name, value in vars(usage).items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise BackendError(f"the backend reported an invalid usage count: {name}={value!r}", retryable=False)


class KindContext:
    """One execution of one node: its inputs, its backend, and calls under its retry policy."""

    __slots__ = ("node", "backend", "outcomes", "services", "retry", "calls", "case", "usage", "place")

    def __init__(self, node: Node, backend: Any, outcomes: Mapping[str, Outcome], services: Services, case: str = "",
                 place: Place | None = None) -> None:
        self.node = node
        self.backend = backend
        self.outcomes = outcomes
        self.services = services
        self.retry = node.retry or services.retry
        #: the case the node belongs to (named in the events it emits)
        self.case = case
        #: attempts made so far (backend calls, or 1 for code run in process)
        self.calls = 0
        #: what this node's accepted replies consumed (None: no reply reported usage)
        self.usage: Usage | None = None
        #: the node's place in its backend's lane: given up while an output is stored, taken back
        #: before another call
        self.place = place

    # inputs ---------------------------------------------------------------
    def parts(self) -> list[str | Image.Image]:
        return self.services.inputs.parts(self.outcomes, self.node)

    def image(self, item: ImageFile | Ref) -> Image.Image:
        return self.services.inputs.image(self.outcomes, item)

    def values(self) -> dict[str, Any]:
        return self.services.inputs.values(self.outcomes, self.node.inputs)

    def seed(self, extra: int = 0) -> int:
        return (self.services.seed * 1_000_003 + self.node.repeat * 1009 + extra) % (2**31)

    def emit(self, event: str, **fields: Any) -> None:
        self.services.events.emit(event, case=self.case, node=self.node.id, **fields)

    def spent(self) -> dict[str, Any]:
        """What the node's event says about its calls: the backend that answered (``provider/name``,
        the price table's key) and the usage its replies reported, kept compact for events.jsonl:
        a count of 0 is left out, and so is ``calls`` (replies) when it equals the node's attempts;
        None is a count the server did not give."""
        fields: dict[str, Any] = {}
        if self.backend is not None:
            fields["backend"] = self.backend.usage_key()
        if self.usage is not None:
            fields["usage"] = {k: v for k, v in vars(self.usage).items() if v != 0 and not (k == "calls" and v == self.calls)}
        return fields

    # calls ----------------------------------------------------------------
    async def call(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        """One backend call under the node's retry policy; counts every attempt as a call.

        The first attempt runs directly (most calls succeed at once, and building tenacity's retry
        machinery costs about 70 us a call); a retryable failure continues in `_retry`, which keeps
        the attempt numbers, waits and time budget of an uninterrupted tenacity loop."""
        role = self.node.role or "compute"
        if self.place is not None and not self.place.held:
            await self.place.reacquire()
        started = time.monotonic()
        try:
            reply = await self._counted(role, fn)
        except BackendError as exc:
            if not exc.retryable or self.retry.max_attempts <= 1:
                raise
            reply = await self._retry(role, fn, exc, started)
        return self._accepted(role, reply)

    async def _counted(self, role: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        self.calls += 1
        self.services.stats.calls[role] += 1
        return await self._attempt(fn)

    def _accepted(self, role: str, reply: Any) -> Any:
        usage = getattr(reply, "usage", None)
        if isinstance(usage, Usage):
            check_usage(usage)
            self.services.stats.add_usage(role, usage)
            if self.usage is None:
                self.usage = Usage(calls=0)
            self.usage.add(usage)
        return reply

    async def _retry(self, role: str, fn: Callable[[], Awaitable[Any]], failure: BackendError, started: float) -> Any:
        """Attempts 2, 3, ... after a retryable failure: tenacity's stop and wait rules (attempts,
        time budget counted from the first attempt, backoff or Retry-After) on its call state."""
        from tenacity import RetryCallState, stop_after_attempt, stop_before_delay

        policy = self.retry
        stop = stop_after_attempt(policy.max_attempts) | stop_before_delay(policy.budget_seconds)
        state = RetryCallState(_state_owner(), None, (), {})
        state.start_time = started
        exc: BaseException = failure
        while True:
            state.set_exception((type(exc), exc, exc.__traceback__))
            state.upcoming_sleep = policy.wait(state)
            if stop(state):
                raise exc
            self.services.progress.bump("retrying")
            self.emit("node.retry", attempt=state.attempt_number, error=str(exc))
            await anyio.sleep(state.upcoming_sleep)
            state.prepare_for_next_attempt()
            self.services.progress.bump("retrying", -1)
            try:
                return await self._counted(role, fn)
            except BackendError as again:
                if not again.retryable:
                    raise
                exc = again

    async def _attempt(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        timeout = self.retry.attempt_timeout
        if timeout is None:
            return await fn()
        try:
            # asyncio's own timeout: a node makes one per attempt, and anyio's costs several times more
            async with asyncio.timeout(timeout):
                return await fn()
        except TimeoutError:
            raise BackendError(f"no answer within {timeout:g} s", retryable=True) from None

    async def store_image(self, image: Image.Image | None, *, png: bytes | None = None) -> ImageRef:
        """Check and store a produced image. Encoding, hashing and writing the blob all run in a
        worker thread (Pillow, hashlib and file writes release the GIL), so neither a large image nor
        a slow disk holds up every other node; the node is done only once its blob is written. ``png`` (bytes already in
        the stored encoding) is stored as it is, without decoding the image. The node's place in its
        backend's lane is given up first: storing is the engine's work, and the model can meanwhile
        take its next request (a later `call` waits for a place again)."""
        if image is None or image.width < MIN_IMAGE_SIDE or image.height < MIN_IMAGE_SIDE:
            size = "no image" if image is None else f"{image.width}x{image.height}"
            raise DegenerateOutput(f"the model returned a degenerate image ({size}; need at least {MIN_IMAGE_SIDE}px a side)")
        if self.place is not None:
            self.place.release()  # the backend is done with this node: it can take the next request
        blobs = self.services.cache.blobs
        if png is not None:
            return await anyio.to_thread.run_sync(lambda: blobs.put_png(png, image.width, image.height))
        return await anyio.to_thread.run_sync(blobs.put_image, image)


class Kind:
    """A node kind. Subclass, set the class attributes, implement `execute`, and register an
    instance with `umni.kinds.register` in a module of the `umni.kinds` package (named in its
    import line) or in a module a plugin lists under the ``umni.kinds`` entry-point group."""

    name: ClassVar[str]
    #: The role a node of this kind uses when the graph names none (None: it must name one).
    default_role: ClassVar[str | None] = None
    #: What a node of this kind outputs, as others read it.
    output: ClassVar[OutputType] = "value"
    #: The pydantic model of the stored output (validated before it is stored).
    Output: ClassVar[type[BaseModel]]
    #: Whether results come from and go to the cache, unless a node sets its own policy.
    cache: ClassVar[CachePolicy] = DEFAULT_CACHE
    #: Whether the kind calls a backend (False: in-process code, run in the compute lane).
    calls_backend: ClassVar[bool] = True
    #: The node parameters the kind reads (`umni.graph.params`), checked when the graph is validated.
    Params: ClassVar[type[NodeParams]] = NodeParams

    def output_type(self, node: Node) -> OutputType:
        return self.output

    def check(self, node: Node, where: str) -> None:
        """Refuse a node of this kind that cannot run (ConfigError naming `where`): no role, or
        parameters that do not fit the kind's `Params`."""
        if self.calls_backend and not node.role:
            raise ConfigError(f"{where}: a {self.name} node needs a role")
        self.Params.of(node, where)

    def slots(self, node: Node) -> Iterator[Slot]:
        """Each Ref the node reads, with the output types accepted there (prompt parts: any
        output; images: images; named inputs and gates: anything)."""
        for i, part in enumerate(node.prompt):
            if isinstance(part, Ref):
                yield f"prompt part {i}", part, PROMPT_TYPES
        for i, item in enumerate(node.images):
            if isinstance(item, Ref):
                yield f"image {i}", item, IMAGE_TYPES

    def cache_policy(self, node: Node) -> CachePolicy:
        return node.cache or self.cache

    async def execute(self, ctx: KindContext) -> BaseModel:
        raise NotImplementedError

    def fingerprint(self, output: Mapping[str, Any]) -> str:
        """What the output contributes to the keys of nodes that read it: its content only. An
        image is its hash; bookkeeping such as usage counts is left out, so the same image reached
        through a different call still lets everything downstream come from the cache."""
        if "image" in output:
            return "image:" + output["image"]["sha256"]
        return fingerprint({k: v for k, v in output.items() if k != "usage"})
