"""Serve one backend spec from a pool of Ray actors (``placement=ray&replicas=N&gpus=G&cpus=C``).

The placement parameters say where a backend runs, never what it answers: they are stripped before
the real backend is built, so its identity and every cache key are the same in process or on Ray.
Each replica builds the real backend from the stripped spec once and starts it; a call goes to the
least-busy replica. A replica that dies is restarted (a bounded number of times) and the calls it
had in flight fail as retryable, so the runner's retry policy sends them again. Images cross as
PNG bytes (`umni.placement_wire`), never as pickled PIL objects.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

from umni.backends.contract import Backend, backend_class
from umni.backends.wire import from_wire, to_wire
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec

#: Spec parameters that place a backend; operational, and removed before the real backend sees the spec.
PLACEMENT_PARAMS = frozenset({"placement", "replicas", "gpus", "cpus", "start_timeout", "max_restarts"})

DEFAULT_START_TIMEOUT = 300.0
DEFAULT_MAX_RESTARTS = 3


def connect(address: str) -> None:
    """Join the Ray cluster at `address`; 'auto' joins a running one or starts a local one on 127.0.0.1.

    Only model calls go to the cluster: the cache and the run directory stay with this process.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'umni[ray]'", field="ray") from None
    if ray.is_initialized():
        return
    if address != "auto":
        ray.init(address=address, log_to_driver=False)
        return
    try:
        ray.init(address="auto", log_to_driver=False)
    except ConnectionError:
        ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)


def is_placed(spec: Spec) -> bool:
    """Whether the spec asks for a placement other than this process."""
    return spec.options.get("placement", "local") not in ("", "local")


def inner_spec(spec: Spec) -> Spec:
    """The spec the real backend is built from: the same one without placement parameters."""
    return Spec(
        provider=spec.provider,
        name=spec.name,
        params=tuple((k, v) for k, v in spec.params if k not in PLACEMENT_PARAMS),
    )


def _number(spec: Spec, name: str, default: float, kind: type = float) -> Any:
    raw = spec.options.get(name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"backend spec '{spec}': {name}={raw!r} is not a number", field=name) from None
    if value < 0 or (name == "replicas" and value < 1):
        raise ConfigError(f"backend spec '{spec}': {name}={raw!r} must be positive", field=name)
    return value


class _Replica:
    """One Ray actor's body: the real backend, built and started in the actor's process."""

    def __init__(self, spec_text: str) -> None:
        spec = Spec.parse(spec_text)  # the pool's inner spec: no placement left in it
        self.backend = backend_class(spec.provider)(spec)

    async def start(self) -> list[str]:
        await self.backend.ensure_started()
        return sorted(self.backend.fills())

    async def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        reply = await getattr(self.backend, method)(*from_wire(args), **from_wire(kwargs))
        return to_wire(reply)

    async def close(self) -> None:
        await self.backend.ensure_closed()


class RayPool(Backend):
    """A backend served by ``replicas`` Ray actors; identity and roles are the real backend's."""

    #: The runner's lane for a pool is its whole capacity, whatever the run's `--concurrency`.
    pooled: ClassVar[bool] = True

    def __init__(self, spec: Spec) -> None:
        self.inner = inner_spec(spec)
        self.real_class = backend_class(spec.provider)
        probe = self.real_class(self.inner)  # validates the spec here, before any cluster work
        super().__init__(spec)
        placement = spec.options.get("placement")
        if placement != "ray":
            raise ConfigError(f"backend spec '{spec}': placement={placement!r}; umni knows placement=ray")
        self.replicas: int = _number(spec, "replicas", 1, int)
        self.gpus: float = _number(spec, "gpus", 0.0)
        self.cpus: float = _number(spec, "cpus", 1.0)
        self.start_timeout: float = _number(spec, "start_timeout", DEFAULT_START_TIMEOUT)
        self.max_restarts: int = _number(spec, "max_restarts", DEFAULT_MAX_RESTARTS, int)
        self._identity = probe.identity()
        self._per_replica = probe.concurrency
        self._roles = probe.fills()
        self._takes_options = (
            "options" in inspect.signature(getattr(self.real_class, "respond", lambda: None)).parameters
        )
        self._actors: list[Any] = []
        self._busy: list[int] = []
        self._restarts = 0
        self._restart_lock = asyncio.Lock()

    # identity, roles and capacity are the real backend's -------------------------------------------
    def identity(self) -> dict[str, Any]:
        return self._identity

    def fills(self) -> frozenset[str]:
        return self._roles

    @property
    def concurrency(self) -> int:
        return self.replicas * self._per_replica

    def usage_key(self) -> str:
        return str(Spec(provider=self.spec.provider, name=self.spec.name))

    # lifecycle ----------------------------------------------------------------------------------------
    def _check_resources(self) -> None:
        import ray

        available = ray.available_resources()
        wanted = {"CPU": self.cpus * self.replicas, "GPU": self.gpus * self.replicas}
        for resource, amount in wanted.items():
            if amount and available.get(resource, 0.0) < amount:
                raise ConfigError(
                    f"backend spec '{self.spec}': {self.replicas} replica(s) need {amount:g} {resource}, "
                    f"the Ray cluster has {available.get(resource, 0.0):g} free; lower replicas/cpus/gpus"
                )

    def _new_actor(self) -> Any:
        import ray

        actor_class = ray.remote(_Replica)
        return actor_class.options(num_cpus=self.cpus, num_gpus=self.gpus).remote(str(self.inner))

    async def _start_actor(self, actor: Any) -> None:
        import ray

        try:
            await asyncio.wait_for(actor.start.remote(), timeout=self.start_timeout)
        except TimeoutError:
            ray.kill(actor)
            raise ConfigError(
                f"backend spec '{self.spec}': a Ray replica did not start within {self.start_timeout:g}s "
                "(raise start_timeout=, or check the cluster has the resources it asks for)"
            ) from None

    async def start(self) -> None:
        import ray

        if not ray.is_initialized():
            raise ConfigError(f"backend spec '{self.spec}': placement=ray needs Ray; run with --ray auto|ADDRESS")
        self._check_resources()
        self._actors = [self._new_actor() for _ in range(self.replicas)]
        self._busy = [0] * self.replicas
        try:
            await asyncio.gather(*(self._start_actor(actor) for actor in self._actors))
        except BaseException:
            for actor in self._actors:
                ray.kill(actor)
            self._actors = []
            raise

    async def aclose(self) -> None:
        import ray

        for actor in self._actors:
            try:
                await actor.close.remote()
            except ray.exceptions.RayActorError:
                pass
            ray.kill(actor)
        self._actors = []

    # calls --------------------------------------------------------------------------------------------
    async def _restart(self, index: int, dead: Any) -> None:
        async with self._restart_lock:
            if self._actors[index] is not dead:  # another call already replaced it
                return
            if self._restarts >= self.max_restarts:
                raise BackendError(
                    f"backend spec '{self.spec}': Ray replica died and {self.max_restarts} restart(s) are spent",
                    retryable=False,
                )
            self._restarts += 1
            actor = self._new_actor()
            await self._start_actor(actor)
            self._actors[index] = actor

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        import ray

        if not self._actors:
            raise BackendError(f"backend spec '{self.spec}' is not started", retryable=False)
        index = min(range(len(self._actors)), key=self._busy.__getitem__)
        actor = self._actors[index]
        self._busy[index] += 1
        try:
            reply = await actor.call.remote(method, to_wire(args), to_wire(kwargs))
        except ray.exceptions.RayActorError as died:
            await self._restart(index, actor)
            raise BackendError(f"backend spec '{self.spec}': Ray replica died ({died})", retryable=True) from None
        finally:
            self._busy[index] -= 1
        return from_wire(reply)

    async def respond(self, parts: Sequence[Any], *, max_tokens: int = 512, seed: int = 0, options: Any = None) -> Any:
        if options is not None and self._takes_options:
            return await self._call("respond", list(parts), max_tokens=max_tokens, seed=seed, options=options)
        if options is not None and options.system:
            parts = [options.system, *parts]
        return await self._call("respond", list(parts), max_tokens=max_tokens, seed=seed)

    async def choose(self, parts: Sequence[Any], options: Sequence[str], *, seed: int = 0) -> Any:
        return await self._call("choose", list(parts), list(options), seed=seed)

    async def generate(self, parts: Sequence[Any], *, seed: int = 0) -> Any:
        return await self._call("generate", list(parts), seed=seed)

    async def edit(self, images: Sequence[Any], instruction: str, *, seed: int = 0) -> Any:
        return await self._call("edit", list(images), instruction, seed=seed)

    async def read_text(self, image: Any) -> Any:
        return await self._call("read_text", image)

    async def detect(self, image: Any, labels: Sequence[str]) -> Any:
        return await self._call("detect", image, list(labels))

    async def embed(self, images: Sequence[Any]) -> Any:
        return await self._call("embed", list(images))
