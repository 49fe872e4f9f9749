"""A sweep file's ``placement:`` section: where each model or role binding runs on Ray.

An entry is keyed by a spec exactly as written under ``models:`` or as a value under ``roles:`` and
becomes that spec's placement parameters (`umni.backends.pool_shape`): they say where a backend runs,
never what it answers, so run directories, identities and cache keys are those of the unplaced sweep.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from umni.backends.pool_shape import MAX_REPLICAS, PLACEMENT_PARAMS
from umni.util.errors import InputError


class Placement(BaseModel):
    """Where one spec's backend runs: a pool of Ray actors (the spec parameters of `umni.backends.placement`)."""

    model_config = ConfigDict(extra="forbid")

    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    gpus: float | None = Field(None, ge=0)
    cpus: float | None = Field(None, ge=0)
    start_timeout: float | None = Field(None, gt=0)
    max_restarts: int | None = Field(None, ge=0)
    #: a placement group of this many bundles (of cpus/gpus each) per replica
    bundles: int | None = Field(None, ge=1)
    strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] | None = None
    #: Ray runtime environment of the pool's actors (env_vars, py_modules, pip, …)
    runtime_env: dict[str, Any] | None = None
    #: node labels a replica's node must carry (Ray's label selector: value, !value, in(a,b))
    labels: dict[str, str] | None = None

    def params(self) -> tuple[tuple[str, str], ...]:
        given = self.model_dump(exclude_none=True)
        return (("placement", "ray"), *((k, _text(k, v)) for k, v in given.items()))


def _text(name: str, value: Any) -> str:
    """A setting as its spec parameter: labels as ``key:value,…``, a runtime_env as compact JSON."""
    if name == "labels":
        return ",".join(f"{k}:{v}" for k, v in sorted(value.items()))
    if name == "runtime_env":
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return f"{value:g}" if isinstance(value, float) else str(value)


def check_placement(placement: dict[str, Placement], written: set[str], path: Path) -> None:
    """Every placed spec is one the sweep uses (`written`) and places nowhere else; a runtime_env's
    local ``py_modules`` and ``working_dir`` are made absolute against the sweep file's folder."""
    for text, where in placement.items():
        field = f"placement.{text}"
        if text not in written:
            raise InputError(
                f"no model or role binding of this sweep is spelt '{text}'; key placement by a spec exactly as "
                f"written under models: or roles: ({', '.join(sorted(written)) or 'none given'})",
                path=path,
                field=field,
            )
        from umni.util.spec import Spec  # here: a sweep without placement reads no spec

        inline = PLACEMENT_PARAMS & set(Spec.parse(text).options)
        if inline:
            raise InputError(
                f"'{text}' already sets {', '.join(sorted(inline))} in the spec; place it either there or here",
                path=path,
                field=field,
            )
        if where.strategy is not None and where.bundles is None:
            raise InputError("strategy places bundles; give bundles: K with it", path=path, field=f"{field}.strategy")
        if where.runtime_env:
            where.runtime_env = _absolute_env(where.runtime_env, path.parent, path, f"{field}.runtime_env")


def _absolute_env(env: dict[str, Any], base: Path, path: Path, field: str) -> dict[str, Any]:
    env = dict(env)
    modules = env.get("py_modules")
    if modules is not None:
        if not isinstance(modules, list):
            raise InputError("py_modules is a list of folders or URLs", path=path, field=f"{field}.py_modules")
        env["py_modules"] = [_local(m, base, path, f"{field}.py_modules") for m in modules]
    if isinstance(env.get("working_dir"), str):
        env["working_dir"] = _local(env["working_dir"], base, path, f"{field}.working_dir")
    return env


def _local(entry: Any, base: Path, path: Path, field: str) -> Any:
    if not isinstance(entry, str) or "://" in entry:
        return entry
    folder = Path(entry) if Path(entry).is_absolute() else base / entry
    if not folder.exists():
        raise InputError(f"{entry} does not exist (relative paths are read from the sweep file's folder)", path=path, field=field)
    return str(folder.resolve())


def placed(placement: dict[str, Placement], text: str) -> str:
    """The spec a run uses for `text`: with the sweep's placement parameters, when it has any."""
    where = placement.get(text)
    if where is None:
        return text
    from umni.util.spec import Spec

    spec = Spec.parse(text)
    return str(Spec(provider=spec.provider, name=spec.name, params=tuple(sorted((*spec.params, *where.params())))))
