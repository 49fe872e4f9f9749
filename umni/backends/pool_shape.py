"""What a Ray pool asks of the cluster: replicas and their resources, a placement group per replica,
a ``runtime_env`` and node labels — read from a spec's placement parameters.

These parameters say where a backend runs, never what it answers (they are stripped before the real
backend is built, so identities and cache keys ignore them), but they are part of the spec text, so
two specs that differ in any of them are two pools. Everything here is checked when the spec is read,
before any cluster work:

- ``bundles=K&strategy=PACK|SPREAD|STRICT_PACK|STRICT_SPREAD``: each replica reserves a placement
  group of K bundles of ``cpus``/``gpus`` each (a model sharded over K GPUs); its actor sits in the
  first bundle and whatever Ray work the backend starts lands in the group.
- ``runtime_env=JSON``: the Ray runtime environment of the pool's actors (``env_vars``, ``py_modules``,
  ``pip``, …), so models with conflicting dependencies each get their own.
- ``labels=key:value,key:value``: the node labels a replica's node must carry (Ray's label selector).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from umni.util.errors import ConfigError

if TYPE_CHECKING:  # a sweep file's placement is read without the spec model
    from umni.util.spec import Spec

#: Spec parameters that place a backend; operational, and removed before the real backend sees the spec.
PLACEMENT_PARAMS = frozenset(
    {"placement", "replicas", "gpus", "cpus", "start_timeout", "max_restarts", "bundles", "strategy", "runtime_env", "labels"}
)

DEFAULT_START_TIMEOUT = 300.0
DEFAULT_MAX_RESTARTS = 3

#: Most replicas one spec may ask for: a larger number is a typo (10**9), refused before any cluster work.
MAX_REPLICAS = 1024

#: Ray's placement group strategies.
STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


@dataclass(frozen=True)
class PoolShape:
    """The resources, placement and environment of a pool, as its spec's placement parameters give them."""

    replicas: int = 1
    cpus: float = 1.0
    gpus: float = 0.0
    bundles: int | None = None  # None: no placement group
    strategy: str = "PACK"
    runtime_env: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    start_timeout: float = DEFAULT_START_TIMEOUT
    max_restarts: int = DEFAULT_MAX_RESTARTS

    @classmethod
    def of(cls, spec: Spec) -> PoolShape:
        bundles = _number(spec, "bundles", None, int)
        if bundles is not None and bundles < 1:
            raise ConfigError(f"backend spec '{spec}': bundles={bundles} must be at least 1", field="bundles")
        strategy = spec.options.get("strategy", "PACK").upper()
        if strategy not in STRATEGIES:
            raise ConfigError(f"backend spec '{spec}': strategy={strategy!r}; Ray knows {', '.join(STRATEGIES)}", field="strategy")
        if "strategy" in spec.options and bundles is None:
            raise ConfigError(f"backend spec '{spec}': strategy= places bundles; give bundles=K with it", field="strategy")
        return cls(
            replicas=_number(spec, "replicas", 1, int),
            cpus=_number(spec, "cpus", 1.0),
            gpus=_number(spec, "gpus", 0.0),
            bundles=bundles,
            strategy=strategy,
            runtime_env=_runtime_env(spec),
            labels=_labels(spec),
            start_timeout=_number(spec, "start_timeout", DEFAULT_START_TIMEOUT),
            max_restarts=_number(spec, "max_restarts", DEFAULT_MAX_RESTARTS, int),
        )

    def bundle(self) -> dict[str, float]:
        """One bundle (or, without a placement group, one actor): its CPUs and GPUs."""
        return {k: v for k, v in (("CPU", self.cpus), ("GPU", self.gpus)) if v}

    def demand(self) -> dict[str, float]:
        """What the whole pool holds on the cluster while it is loaded."""
        per_replica = self.bundles or 1
        return {k: v * per_replica * self.replicas for k, v in self.bundle().items()}

    def uploaded_env(self) -> dict[str, Any] | None:
        """The runtime_env with its local ``py_modules`` and ``working_dir`` uploaded to the cluster.

        Ray uploads local folders itself only for a job-wide runtime_env (``ray.init``); an actor's
        own may name only URIs, so this does the same upload (Ray's helpers, content-addressed: an
        unchanged folder is not sent twice) and passes the ``gcs://`` URIs it returns.
        """
        if not self.runtime_env:
            return None
        import tempfile

        from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
        from ray._private.runtime_env.working_dir import upload_working_dir_if_needed

        with tempfile.TemporaryDirectory(prefix="umni-env-") as scratch:
            env = upload_py_modules_if_needed(dict(self.runtime_env), include_gitignore=True, scratch_dir=scratch)
            return dict(upload_working_dir_if_needed(env, include_gitignore=True, scratch_dir=scratch))

    def actor_options(self, group: Any = None, runtime_env: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ray ``.options(...)`` of one replica's actor; `group` is its placement group, when it has
        one, and `runtime_env` its environment as `uploaded_env` made it."""
        options: dict[str, Any] = {"num_cpus": self.cpus, "num_gpus": self.gpus}
        if runtime_env:
            options["runtime_env"] = runtime_env
        if group is not None:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
            )
        elif self.labels:
            options["label_selector"] = dict(self.labels)
        return options

    def new_group(self) -> Any:
        """A replica's placement group (not yet placed: wait on ``group.ready()``)."""
        from ray.util.placement_group import placement_group

        assert self.bundles is not None
        bundles = [self.bundle() or {"CPU": 0.001}] * self.bundles  # Ray refuses an empty bundle
        selectors = [dict(self.labels)] * self.bundles if self.labels else None
        return placement_group(bundles, strategy=self.strategy, bundle_label_selector=selectors)

    def matching_nodes(self, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The alive nodes (as ``ray.nodes()`` lists them) whose labels satisfy ``labels``."""
        alive = [n for n in nodes if n.get("Alive")]
        return [n for n in alive if all(_label_matches(n.get("Labels") or {}, k, v) for k, v in self.labels.items())]

    def capacity(self, nodes: list[dict[str, Any]]) -> dict[str, float]:
        """The total CPUs and GPUs of the nodes this pool may use."""
        total: dict[str, float] = {}
        for node in self.matching_nodes(nodes):
            for resource in ("CPU", "GPU"):
                total[resource] = total.get(resource, 0.0) + float(node.get("Resources", {}).get(resource, 0.0))
        return total

    def never_fits(self, spec: Spec, nodes: list[dict[str, Any]]) -> str | None:
        """Why this pool can never be loaded on the cluster `nodes` describe, however long it waits; None if it can."""
        if self.labels and not self.matching_nodes(nodes):
            seen = sorted({f"{k}={v}" for n in nodes if n.get("Alive") for k, v in (n.get("Labels") or {}).items() if not k.startswith("ray.io/")})
            return (
                f"backend spec '{spec}': no node of the Ray cluster has labels "
                f"{', '.join(f'{k}={v}' for k, v in sorted(self.labels.items()))} (the nodes' labels: {', '.join(seen) or 'none'})"
            )
        if self.bundles and self.strategy == "STRICT_SPREAD" and len(self.matching_nodes(nodes)) < self.bundles:
            return (
                f"backend spec '{spec}': strategy=STRICT_SPREAD puts each of {self.bundles} bundles on its own node, "
                f"the Ray cluster has {len(self.matching_nodes(nodes))} node(s) to put them on; use SPREAD or PACK"
            )
        capacity = self.capacity(nodes)
        for resource, amount in self.demand().items():
            if capacity.get(resource, 0.0) < amount - 1e-9:
                where = " on the nodes its labels select" if self.labels else ""
                return (
                    f"backend spec '{spec}': {self.replicas} replica(s) need {amount:g} {resource} in all, the Ray cluster "
                    f"has {capacity.get(resource, 0.0):g}{where}; lower replicas/bundles/cpus/gpus"
                )
        return None


def _label_matches(labels: dict[str, str], key: str, wanted: str) -> bool:
    """Ray's selector values: ``v`` (equal), ``!v`` (not equal), ``in(a,b)`` and ``!in(a,b)``."""
    negate = wanted.startswith("!")
    body = wanted[1:] if negate else wanted
    if body.startswith("in(") and body.endswith(")"):
        hit = labels.get(key) in {v.strip() for v in body[3:-1].split(",")}
    else:
        hit = labels.get(key) == body
    return hit != negate


def _number(spec: Spec, name: str, default: Any, kind: type = float) -> Any:
    raw = spec.options.get(name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"backend spec '{spec}': {name}={raw!r} is not a number", field=name) from None
    if value < 0 or (name == "replicas" and value < 1):
        raise ConfigError(f"backend spec '{spec}': {name}={raw!r} must be positive", field=name)
    if name == "replicas" and value > MAX_REPLICAS:
        raise ConfigError(f"backend spec '{spec}': replicas={raw} is more than {MAX_REPLICAS}; is it a typo?", field=name)
    return value


def _runtime_env(spec: Spec) -> dict[str, Any] | None:
    raw = spec.options.get("runtime_env")
    if raw is None:
        return None
    try:
        env = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"backend spec '{spec}': runtime_env is not JSON ({exc})", field="runtime_env") from None
    if not isinstance(env, dict):
        raise ConfigError(f"backend spec '{spec}': runtime_env is a JSON object (env_vars, py_modules, pip, …)", field="runtime_env")
    for name in env.get("env_vars") or {}:
        upper = str(name).upper()
        if any(word in upper for word in ("TOKEN", "SECRET", "PASSWORD", "API_KEY")) or upper.endswith("_KEY"):
            raise ConfigError(
                f"backend spec '{spec.provider}/{spec.name}': runtime_env env_vars {name} looks like a credential, and a spec is "
                "recorded in run.json; set it in the environment of the cluster's nodes instead",
                field="runtime_env",
            )
    for module in env.get("py_modules") or []:
        if isinstance(module, str) and "://" not in module and not Path(module).exists():
            raise ConfigError(f"backend spec '{spec}': runtime_env py_modules entry {module} does not exist", field="runtime_env")
    return env


def _labels(spec: Spec) -> dict[str, str]:
    raw = spec.options.get("labels")
    if not raw:
        return {}
    labels = {}
    for pair in re.split(r",(?![^()]*\))", raw):  # a comma inside in(a,b) is the value's
        key, sep, value = pair.partition(":")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"backend spec '{spec}': labels={raw!r}; write key:value pairs joined by ','", field="labels")
        labels[key.strip()] = value.strip()
    return labels


def shape_text(shape: PoolShape) -> dict[str, Any]:
    """The shape as events and reports show it."""
    shown: dict[str, Any] = {"replicas": shape.replicas, "demand": shape.demand()}
    if shape.bundles:
        shown["bundles"] = shape.bundles
        shown["strategy"] = shape.strategy
    if shape.labels:
        shown["labels"] = dict(shape.labels)
    return shown
