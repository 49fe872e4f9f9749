"""Backends and the registry that turns a spec into one.

A backend is a class with a ``provider`` name that fills some roles. Built-in backends and
third-party ones are found the same way, through the ``umni.backends`` entry-point group, so an
adapter for a model that needs its own code can live in another package (docs/plugins.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

import anyio
from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
)

from umni.backends.roles import known_roles
from umni.store.runfolder import RoleProvenance, Sampling
from umni.util.entrypoints import entry_points, load_entry_point
from umni.util.errors import ConfigError
from umni.util.spec import Spec


class BackendParams(BaseModel):
    """A backend's spec parameters as a typed model: conversion and error messages come from pydantic.

    Every backend takes these engine parameters; a backend declares its own parameters by
    subclassing this model (``class Params(BackendParams): steps: PositiveInt | None = None``) and
    setting it as ``Backend.Params``. Parameters that do not change outputs are listed in
    ``operational`` so that changing them keeps the cache.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Parameters left out of the backend identity.
    operational: ClassVar[frozenset[str]] = frozenset({"concurrency", "timeout", "batch_size", "max_retries"})

    concurrency: PositiveInt | None = None
    timeout: PositiveFloat | None = None
    batch_size: PositiveInt | None = None
    max_retries: NonNegativeInt | None = None


P = TypeVar("P", bound=BackendParams)


def parse_params(model: type[P], spec: Spec) -> P:
    """Validate a spec's parameters; the error names the spec, the parameter and what it takes."""
    try:
        return model.model_validate(spec.options)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        if error["type"] == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            message = f"unknown parameter '{name}'; {spec.provider}/ takes {known}"
        else:
            message = f"{name}={spec.options.get(name)!r}: {error['msg'].lower()}"
        raise ConfigError(f"backend spec '{spec}': {message}", field=name or None) from None


class Backend:
    """Base class for backends.

    Subclasses set ``provider`` and ``roles`` and implement the role interfaces (see ``roles``).
    ``operational_params`` lists spec parameters that do not change outputs (latency, concurrency,
    timeouts): they are left out of the backend identity so that changing them keeps the cache.
    """

    provider: ClassVar[str] = ""
    roles: ClassVar[frozenset[str]] = frozenset()
    operational_params: ClassVar[frozenset[str]] = BackendParams.operational
    default_concurrency: ClassVar[int] = 4
    #: The spec's parameter model; ``None`` leaves parsing to the subclass (older plugins).
    Params: ClassVar[type[BackendParams] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.Params is not None:
            cls.operational_params = cls.Params.operational

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.params: Any = parse_params(self.Params, spec) if self.Params is not None else None
        self._started = False
        self._start_lock: anyio.Lock | None = None

    @property
    def _observers(self) -> list[Callable[..., None]]:
        # kept in __dict__ so a plugin whose __init__ does not call ours still works
        return self.__dict__.setdefault("_observer_list", [])

    def observe(self, listener: Callable[..., None]) -> Callable[[], None]:
        """Call ``listener(event, **fields)`` for what the backend reports about its servers (a fleet
        server set aside or returned); returns the function that stops it. Runs route these into
        their event log and count them in summary.json."""
        self._observers.append(listener)
        return lambda: self._observers.remove(listener) if listener in self._observers else None

    def notify(self, event: str, **fields: Any) -> None:
        """Tell every observer (see `observe`); a backend with nothing to report never calls it."""
        for listener in list(self._observers):
            listener(event, **fields)

    async def preflight(self, roles: frozenset[str]) -> list[str]:
        """Problems a cheap probe finds before a run (one line each, naming the server): a server that
        does not answer, refuses the key, serves another model or lacks an endpoint one of `roles` (the
        roles the run binds to this backend) calls.
        Never a model call; the default (nothing to probe) finds none."""
        return []

    async def settle(self, roles: frozenset[str]) -> dict[str, Any]:
        """Learn, once and before any node's key is made, what this backend's identity depends on that
        only its server can tell (the `roles` bound to it: an OpenAI-compatible server asked to draw
        decides whether it draws through chat or through its images endpoints). Returns what the
        server reported, for run.json (empty: nothing to record). The default asks nothing."""
        return {}

    def servers(self) -> list[str]:
        """The servers a backend spreads its calls over, as they may be shown (none: it is one thing)."""
        return []

    async def ensure_started(self) -> None:
        """`start()` once, however many runs share this instance (a sweep's runs do)."""
        if self._started:  # the common case, every call after the first: no lock to take
            return
        if self._start_lock is None:
            self._start_lock = anyio.Lock()
        async with self._start_lock:
            if not self._started:
                await self.start()
                self._started = True

    async def ensure_closed(self) -> None:
        """`aclose()` if started; the instance can be started again by a later run."""
        if self._started:
            self._started = False
            self._start_lock = None
            await self.aclose()

    def fills(self) -> frozenset[str]:
        """The roles this instance fills (may depend on the model it loaded)."""
        return self.roles

    def identity(self) -> dict[str, Any]:
        """What distinguishes this backend's outputs, for cache keys and run records."""
        params = {k: v for k, v in self.spec.params if k not in self.operational_params}
        return {"provider": self.spec.provider, "name": self.spec.name, "params": params}

    def identity_for(self, role: str | None) -> dict[str, Any]:
        """The identity as it enters the key of a node of `role`: `identity()`, unless some roles'
        outputs depend on more than the rest (how an HTTP backend is asked for images enters the
        keys of image nodes only, so changing it recomputes those and nothing else)."""
        return self.identity()

    def provenance(self, role: str) -> RoleProvenance:
        """How this backend makes `role`'s outputs, as a methods section states it (summary.json's
        ``provenance``, `umni methods`): its model, the revision it resolved, dtype, device, the
        sampling settings it applies, how it uses the node's seed, how it is asked over HTTP.

        The default reads `identity_for` (a name, a ``revision`` or ``model_version``, a ``dtype``,
        the sampling parameters the spec sets); a backend that knows more (the snapshot it loaded,
        its device, the id its server reported) overrides it. None is an honest "unknown"."""
        identity = self.identity_for(role)
        params = identity.get("params")
        return RoleProvenance(
            backend=self.spec.provider,
            model=_text(identity.get("name") or identity.get("model")) or self.spec.name,
            revision=_text(identity.get("revision") or identity.get("model_version")),
            dtype=_text(identity.get("dtype")),
            sampling=sampling_of(params if isinstance(params, dict) else {}),
        )

    def request_settings(self, role: str) -> frozenset[str]:
        """The sampling settings of a node's request (``temperature``, ``max_tokens``) this backend
        applies to `role`'s calls: the run's provenance takes their values from the protocol where
        the backend sets none itself. A backend that ignores a node's temperature (a reasoning
        model's API that refuses it, a program that does not sample) leaves it out."""
        return frozenset({"temperature", "max_tokens"})

    def identity_hash(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def concurrency(self) -> int:
        raw = self.spec.options.get("concurrency")
        return int(raw) if raw else self.default_concurrency

    async def start(self) -> None:
        """Load weights or open connections; called once before the first node runs.

        Constructors only validate the spec (cheaply, so bad specs fail before any work); heavy
        loading happens here, once per process, shared by every node bound to this backend.
        """

    async def aclose(self) -> None:
        """Release connections or memory; called once at the end of a run."""

    def usage_key(self) -> str:
        """``provider/name``: the key of the backend's usage, its price, and the backend each node
        event names (made once: a run asks for it per node)."""
        key = self.__dict__.get("_usage_key")
        if key is None:
            key = self.__dict__["_usage_key"] = str(Spec(provider=self.spec.provider, name=self.spec.name))
        return key


#: Spec parameter names that set each sampling setting, in the spellings umni's backends use.
_SAMPLING_NAMES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "max_tokens": ("max_tokens", "max_new_tokens"),
    "steps": ("steps", "num_inference_steps"),
    "guidance": ("guidance", "guidance_scale", "cfg"),
}


def sampling_of(params: dict[str, Any]) -> Sampling | None:
    """The sampling settings among a backend's parameters (spec values are text: read as numbers);
    None when it sets none."""
    found: dict[str, int | float] = {}
    for setting, names in _SAMPLING_NAMES.items():
        for name in names:
            value = _number(params.get(name))
            if value is not None:
                found[setting] = int(value) if setting in ("max_tokens", "steps") else value
                break
    return Sampling.model_validate(found) if found else None


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        number = float(str(value))
    except ValueError:
        return None
    return int(number) if number.is_integer() and "." not in str(value) else number


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


async def start_backends(backends: Iterable[Backend]) -> None:
    """Start every backend at once: a large judge and a diffusion model load side by side instead of
    one after the other (each start is mostly waiting on disk, network or a remote cluster)."""
    try:
        async with anyio.create_task_group() as group:
            for backend in backends:
                group.start_soon(backend.ensure_started)
    except BaseExceptionGroup as failed:  # one start's own error, as a sequential start raised it
        raise failed.exceptions[0] from None


def _registered() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group="umni.backends")}


def known_providers() -> list[str]:
    return sorted(_registered())


def backend_class(provider: str) -> type[Backend]:
    registered = _registered()
    if provider not in registered:
        raise ConfigError(
            f"unknown backend provider '{provider}'; known providers: {', '.join(sorted(registered)) or 'none'}"
        )
    cls = load_entry_point(registered[provider])
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConfigError(f"entry point umni.backends:{provider} does not name a umni.backends.Backend subclass")
    return cls


def check_roles(roles: frozenset[str] | set[str]) -> None:
    unknown = set(roles) - set(known_roles())
    if unknown:
        raise ConfigError(f"unknown role(s) {sorted(unknown)}; known roles: {', '.join(known_roles())}")
