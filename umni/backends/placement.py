"""Serve one backend spec from a pool of Ray actors (``placement=ray&replicas=N&gpus=G&cpus=C``, and
``bundles``/``strategy``/``runtime_env``/``labels``: see `umni.backends.pool_shape`).

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
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from umni.backends.contract import Backend, backend_class
from umni.backends.pool_shape import PLACEMENT_PARAMS, PoolShape, shape_text
from umni.backends.wire import from_wire, to_wire
from umni.store.runfolder import RoleProvenance
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec

#: Tries at starting a private local cluster; a busy machine sometimes fails the first.
START_TRIES = 3


def ray_token_source() -> str | None:
    """Where a token for a token-authenticated cluster comes from, as Ray reads it; None when there is none.

    Ray reads ``RAY_AUTH_TOKEN`` (the token itself), then ``RAY_AUTH_TOKEN_PATH`` (a file), then
    ``~/.ray/auth_token`` (which ``ray start --head`` writes). umni never reads the token itself.
    """
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH ({path})"
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def connect(address: str) -> None:
    """Join the Ray cluster the user pointed at, or start a private one; never join one found by chance.

    ``auto`` joins ``$RAY_ADDRESS`` when it is set and otherwise starts a cluster of this process's own
    on 127.0.0.1 (stopped when the process exits), even when another cluster runs on the machine: it may
    be another user's. Any other value is the address to join. Only model calls go to the cluster: the
    cache and the run directory stay with this process.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'umni[ray]'", field="ray") from None
    if ray.is_initialized():
        return
    target = os.environ.get("RAY_ADDRESS") or None if address == "auto" else address
    handler = signal.getsignal(signal.SIGTERM)  # Ray replaces it with one that raises SystemExit anywhere
    try:
        if target is None:
            _start_private(ray)
        else:
            _join(ray, target)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)


def _join(ray: Any, address: str) -> None:
    """Join `address`; a token-authenticated cluster (Ray's default for ``ray start --head``) is
    joined with the token Ray finds (`ray_token_source`), which an explicit address does not look for."""
    source = ray_token_source()
    if source is not None and "RAY_AUTH_MODE" not in os.environ:
        _enable_token_auth()
    try:
        ray.init(address=address, log_to_driver=False)
    except Exception as exc:  # Ray raises ConnectionError, AuthenticationError, RuntimeError, ValueError
        _shutdown_quietly(ray)
        text = str(exc).split("\n")[0]
        text = text.split(". ")[0] if len(text) > 200 else text  # Ray's long advice follows its first sentence
        hint = ""
        if "auth" in text.lower() or "token" in text.lower():
            hint = (
                f" (token read from {source})" if source else
                "; the cluster wants a token: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the file "
                "`ray get-auth-token` prints on the head node"
            )
        raise ConfigError(f"cannot join the Ray cluster at {address}: {text}{hint}", field="ray") from None


def _enable_token_auth() -> None:
    """Send the token Ray finds: Ray does this itself only for a cluster it finds on this machine, never
    for an address it is given, so ``ray start --head`` clusters (token on by default) refuse the join."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication: nothing to send
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _start_private(ray: Any) -> None:
    """Start a local cluster of this process's own, a bounded number of times, cleaning up after each failure."""
    last = ""
    for attempt in range(1, START_TRIES + 1):
        try:
            ray.init(
                address="local",
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
                configure_logging=False,
            )
            return
        except Exception as exc:  # noqa: BLE001 - any failure to start is retried, then reported as one line
            last = str(exc).split("\n")[0][:300]
            _shutdown_quietly(ray)
            if attempt < START_TRIES:
                time.sleep(float(attempt))
    raise ConfigError(
        f"could not start a local Ray cluster ({START_TRIES} tries; last: {last}); "
        "point umni at a running one with --ray ADDRESS or RAY_ADDRESS",
        field="ray",
    )


def _shutdown_quietly(ray: Any) -> None:
    """Stop what a failed start or join left (Ray's own processes of this driver), whatever state it is in."""
    try:
        ray.shutdown()
    except Exception:  # noqa: BLE001 - cleaning up after a failure must not hide it
        pass


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
        self.shape = PoolShape.of(spec)
        self.replicas = self.shape.replicas
        self.start_timeout = self.shape.start_timeout
        self.max_restarts = self.shape.max_restarts
        self._identity = probe.identity()
        self._role_identities = {role: probe.identity_for(role) for role in probe.fills()}
        #: as the probe, built here, states it (its device is this machine's guess, not the actors')
        self._provenance = {role: probe.provenance(role) for role in probe.fills()}
        self._request_settings = {role: probe.request_settings(role) for role in probe.fills()}
        self._per_replica = probe.concurrency
        self._roles = probe.fills()
        self._takes_options = (
            "options" in inspect.signature(getattr(self.real_class, "respond", lambda: None)).parameters
        )
        self._actors: list[Any] = []
        self._groups: list[Any] = []  # one placement group per replica, with bundles=
        self._env: dict[str, Any] | None = None  # the runtime_env, its local folders uploaded
        self._busy: list[int] = []
        self._restarts = 0
        self._restart_lock = asyncio.Lock()

    # identity, roles and capacity are the real backend's -------------------------------------------
    def identity(self) -> dict[str, Any]:
        return self._identity

    def identity_for(self, role: str | None) -> dict[str, Any]:
        return self._role_identities.get(role or "", self._identity)

    def provenance(self, role: str) -> RoleProvenance:
        found = self._provenance.get(role)
        return found.model_copy(update={"device": None}) if found is not None else super().provenance(role)

    def request_settings(self, role: str) -> frozenset[str]:
        found = self._request_settings.get(role)  # an empty set is an answer: the backend applies none
        return found if found is not None else super().request_settings(role)

    def fills(self) -> frozenset[str]:
        return self._roles

    @property
    def concurrency(self) -> int:
        return self.replicas * self._per_replica

    def usage_key(self) -> str:
        return str(Spec(provider=self.spec.provider, name=self.spec.name))

    # lifecycle ----------------------------------------------------------------------------------------
    def demand(self) -> dict[str, float]:
        """The CPUs and GPUs the pool holds on the cluster while it is started."""
        return self.shape.demand()

    def describe(self) -> dict[str, Any]:
        """The pool as events and reports show it: its spec, replicas, demand and placement."""
        return {"spec": str(self.spec), **shape_text(self.shape)}

    def _check_resources(self) -> None:
        import ray

        refused = self.shape.never_fits(self.spec, ray.nodes())
        if refused:
            raise ConfigError(refused)
        available = ray.available_resources()
        for resource, amount in self.demand().items():
            if available.get(resource, 0.0) < amount - 1e-9:
                raise ConfigError(
                    f"backend spec '{self.spec}': {self.replicas} replica(s) need {amount:g} {resource}, "
                    f"the Ray cluster has {available.get(resource, 0.0):g} free; lower replicas/bundles/cpus/gpus"
                )

    def _new_actor(self, index: int = 0) -> Any:
        import ray

        group = self._groups[index] if self._groups else None
        actor_class = ray.remote(_Replica)
        return actor_class.options(**self.shape.actor_options(group, self._env)).remote(str(self.inner))

    async def _place_groups(self) -> None:
        """One placement group per replica, each placed (all its bundles reserved) before any actor starts."""
        from ray.util.placement_group import remove_placement_group

        if not self.shape.bundles:
            return
        self._groups = [self.shape.new_group() for _ in range(self.replicas)]
        try:
            await asyncio.wait_for(asyncio.gather(*(group.ready() for group in self._groups)), timeout=self.start_timeout)
        except TimeoutError:
            for group in self._groups:
                remove_placement_group(group)
            self._groups = []
            raise ConfigError(
                f"backend spec '{self.spec}': a placement group of {self.shape.bundles} bundle(s) "
                f"({self.shape.strategy}) was not placed within {self.start_timeout:g}s (raise start_timeout=, "
                "or check the cluster's nodes can hold the bundles together)"
            ) from None
        except BaseException:
            for group in self._groups:
                remove_placement_group(group)
            self._groups = []
            raise

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
        self._env = self.shape.uploaded_env()
        await self._place_groups()
        self._actors = [self._new_actor(index) for index in range(self.replicas)]
        self._busy = [0] * self.replicas
        try:
            await asyncio.gather(*(self._start_actor(actor) for actor in self._actors))
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        """Kill every actor and remove every placement group: what the pool held is free again."""
        import ray
        from ray.util.placement_group import remove_placement_group

        for actor in self._actors:
            ray.kill(actor)
        for group in self._groups:
            remove_placement_group(group)
        self._actors = []
        self._groups = []

    async def aclose(self) -> None:
        import ray

        for actor in self._actors:
            try:
                await actor.close.remote()
            except ray.exceptions.RayActorError:
                pass
        self._release()

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
            actor = self._new_actor(index)  # in the dead one's placement group, which outlives it
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
