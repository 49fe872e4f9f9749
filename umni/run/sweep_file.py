"""Sweeps: protocols × models × role bindings × seeds from one YAML file, run as one job.

All runs share one cache, one set of backend instances and one set of concurrency lanes, and run
at the same time: a backend's limit is shared by every run that uses it, and identical work (the
same generated image needed by two runs that differ only in their understander) is done once.
Re-running a sweep file resumes every run; adding a model runs only the new work.

    name: demo
    out: runs/sweep-demo          # default: runs/sweep-<file stem>
    protocols: [umnibench]
    models: [sim/umm]
    roles:                        # role overrides; each entry is one binding variant
      - {}
      - {understand: "sim/umm?skill=0.5"}
    seeds: [0]
    labels: {sim/umm: Baseline}   # the name tables show for a model's runs (umni run --label)
    options: {umnibench: {ability: full}}
    cases: {umnibench: path/to/cases.jsonl}
    limit: 10
    concurrency: 4

Models and role bindings can be placed on Ray (issue 14) in a ``placement:`` section keyed by the
spec exactly as written under ``models:`` or as a value under ``roles:``; a role binding's spec is
placed on its own, so a judge can have other replicas than the model it judges:

    ray: auto                     # the cluster ('auto': join a running one or start a local one)
    models: [sim/umm, "diffusers/tiny?steps=2"]
    roles: [{}, {judge: "sim/umm?skill=0.5"}]
    placement:
      sim/umm: {replicas: 2, cpus: 0.5}
      "diffusers/tiny?steps=2": {replicas: 4, gpus: 1, start_timeout: 600, max_restarts: 2}
      "sim/umm?skill=0.5": {replicas: 1}

An entry becomes the spec parameters ``placement=ray&replicas=…`` (the same ones `umni run` takes),
which say where a backend runs and never what it answers: run directories, identities and cache keys
are those of the unplaced sweep, so adding or changing placement resumes the same runs from the
same cache. A ``placement:`` section without ``ray:`` uses ``ray: auto``.

A sweep split into Slurm jobs (`umni sweep FILE --emit slurm`, see `umni.run.sweep_jobs`) can give
each model binding its own resources, cut runs into phases, deal a model's units to one task, pass
environment variables by name and serve a model on the task's node (`umni.run.serving`):

    phases: [[generate, edit, understand], [judge]]   # each phase's arrays after the one before
    resources:
      sim/umm: {gres: "gpu:1", cpus-per-task: 4, mem: 32G, time: "02:00:00"}
      "sim/umm?skill=0.5": none                         # served elsewhere: asks for no GPU
    group: model                  # one task runs every unit of a model (it loads once)
    max_units_per_task: 20
    env: [PGPASSWORD, OPENAI_API_KEY]
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from umni.protocols.caseio import validation_errors
from umni.run.config import RunConfig, build_config
from umni.run.done_task import default_out
from umni.run.serving import Serve
from umni.run.slurm_resources import Resources
from umni.run.sweep_placement import Placement, check_placement, placed
from umni.run.unit_deal import Unit, plan
from umni.store.hashing import fingerprint
from umni.store.urls import check_blobs, check_results
from umni.util.credentials import redact_url
from umni.util.errors import ConfigError, InputError, InputErrors


class SweepFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    out: Path | None = None
    #: the result store and image store of every run (as `umni run --cache/--blobs`: a path or a URL)
    cache: str | None = None
    blobs: str | None = None
    protocols: list[str] = Field(min_length=1)
    models: list[str | None] = Field(default_factory=lambda: list[str | None]([None]))
    roles: list[dict[str, str]] = Field(default_factory=lambda: [dict[str, str]()])
    seeds: list[int] = Field(default_factory=lambda: [0])
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    cases: dict[str, Path] = Field(default_factory=dict)
    limit: int | None = None
    concurrency: int | None = None
    #: Ray cluster for models whose spec says placement=ray ('auto' or an address), as `umni run --ray`
    ray: str | None = None
    #: Ray placement of a model or role binding, keyed by its spec as written in `models:` / `roles:`
    placement: dict[str, Placement] = Field(default_factory=dict)
    #: the label of each model's runs (`umni run --label`), keyed by its spec as written in `models:`
    labels: dict[str, str] = Field(default_factory=dict)
    #: retry settings of every run (as `umni run --max-attempts/--retry-budget/--call-timeout`)
    max_attempts: int | None = None
    retry_budget: float | None = None
    call_timeout: float | None = None
    #: case shards per run: a split sweep's work units are (run, case shard) pairs (`umni sweep --shard`)
    shards: int = Field(1, ge=1, le=10_000)
    #: `#SBATCH` options of `umni sweep --emit slurm` (e.g. partition, gres, time); max_jobs caps the array
    slurm: dict[str, str | int | float] = Field(default_factory=dict)
    #: Slurm resources of a model or role binding (keyed by its spec as written); none: served elsewhere
    resources: dict[str, Resources | None] = Field(default_factory=dict)
    #: roles run in turn, each phase's jobs after the previous phase's (every role its protocols use, once)
    phases: list[list[str]] | None = Field(None, min_length=1)
    #: 'model': one task runs every unit of a model binding (loaded once), at most max_units_per_task
    group: Literal["unit", "model"] = "unit"
    max_units_per_task: int | None = Field(None, ge=1)
    #: environment variables every task needs, passed to the jobs by name (never their values)
    env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(default_factory=list)
    #: a server a task starts for the model (keyed by its spec as written), see `umni.run.serving`
    serve: dict[str, Serve] = Field(default_factory=dict)

    @field_validator("resources", mode="before")
    @classmethod
    def _none_written(cls, value: Any) -> Any:
        """``none`` as written in YAML (a string) means what ``null`` does: nothing asked."""
        if isinstance(value, dict):
            return {k: None if isinstance(v, str) and v.lower() == "none" else v for k, v in value.items()}
        return value


def load_sweep(path: Path) -> SweepFile:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {exc}", path=path, line=mark.line + 1 if mark else None) from None
    except OSError as exc:
        raise InputError(f"cannot read the sweep file ({exc.strerror})", path=path) from None
    if not isinstance(raw, dict):
        raise InputError("a sweep file is a YAML mapping (protocols, models, roles, …)", path=path)
    try:
        sweep = SweepFile.model_validate(raw)
    except ValidationError as exc:
        raise InputErrors(validation_errors(exc, path=path, record=None)) from None
    _check_stores(sweep, path)
    base = path.parent
    sweep.cases = {k: (v if v.is_absolute() else base / v) for k, v in sweep.cases.items()}
    if sweep.out is None:
        sweep.out = default_out(sweep.name, path)
    unknown = sorted(set(sweep.labels) - {m for m in sweep.models if m is not None})
    if unknown:
        raise InputError(f"{', '.join(map(repr, unknown))}: not a spec listed under `models:`; key each label by the spec as written there",
                         path=path, field="labels")
    written = {m for m in sweep.models if m is not None} | {s for roles in sweep.roles for s in roles.values()}
    if sweep.placement:
        check_placement(sweep.placement, written, path)
        sweep.ray = sweep.ray or "auto"  # placement implies Ray
    for section in ("resources", "serve"):
        for text in getattr(sweep, section):
            if text not in written:
                raise InputError(f"no model or role binding of this sweep is spelt '{text}'; key {section} by a spec exactly as "
                                 "written under `models:` or `roles:`", path=path, field=f"{section}.{text}")
    _check_phases(sweep, path)
    return sweep


def _check_phases(sweep: SweepFile, path: Path) -> None:
    """Every role a protocol of the sweep uses is in exactly one phase (a role in none would stay pending)."""
    if sweep.phases is None:
        return
    from umni.protocols.protocol import get_protocol

    listed = [r for phase in sweep.phases for r in phase]
    repeated = sorted({r for r in listed if listed.count(r) > 1})
    if repeated:
        raise InputError(f"role(s) {', '.join(repeated)} in more than one phase; list each role once", path=path, field="phases")
    for name in sweep.protocols:
        try:
            roles = get_protocol(name).roles
        except Exception:  # an unknown protocol: refused with its own message when the runs are expanded
            continue
        missing = [r for r in roles if r not in listed]
        if missing:
            raise InputError(f"protocol {name} uses role(s) {', '.join(missing)}, which no phase lists; add them to a phase",
                             path=path, field="phases")


def require_env(sweep: SweepFile) -> None:
    """Refuse to start a task (one line) when a variable the sweep file's `env:` lists is not set."""
    missing = [name for name in sweep.env if name not in os.environ]
    if missing:
        raise InputError(f"environment variable(s) {', '.join(missing)} not set in this task; export them where the jobs are "
                         "submitted (submit.sh passes them to every job by name)", field="env")


def _check_stores(sweep: SweepFile, path: Path) -> None:
    """Refuse a `cache:` or `blobs:` that would put a credential in run.json, naming the file and
    the field, before any folder of the sweep is made."""
    for name, check in (("cache", check_results), ("blobs", check_blobs)):
        value = getattr(sweep, name)
        if value is not None:
            try:
                check(value)
            except ConfigError as exc:
                raise InputError(exc.message, path=path, field=name) from None


def expand(sweep: SweepFile) -> list[RunConfig]:
    """One run request per combination, each with its own run directory under the sweep's."""
    return [build_config(given, source=source) for given, source in run_settings(sweep)]


def run_settings(sweep: SweepFile) -> list[tuple[dict[str, Any], str]]:
    """The settings of each run (only what the sweep file sets) and how to name it in an error."""
    requests = []
    seen: dict[Path, str] = {}
    for protocol, model, roles, seed in combinations(sweep):
        if model is None and not roles:
            raise InputError("each run needs a model or role bindings: give `models:` or non-empty `roles:` entries")
        label = fingerprint([model, sorted(roles.items()), seed, sweep.options.get(protocol, {})])[:10]
        assert sweep.out is not None
        what = f"protocol {protocol}, model {model}, roles {roles or '{}'}, seed {seed}"
        if sweep.out / protocol / label in seen:
            raise InputError(f"the sweep lists the same run twice ({what}); remove the repeated model, role binding or seed")
        seen[sweep.out / protocol / label] = what
        given = {
            "protocol": protocol,
            "out": sweep.out / protocol / label,
            "cases": sweep.cases.get(protocol),
            "model": None if model is None else placed(sweep.placement, model),
            "roles": [f"{r}={placed(sweep.placement, s)}" for r, s in sorted(roles.items())] or None,
            "cache": sweep.cache,
            "blobs": sweep.blobs,
            "limit": sweep.limit,
            "concurrency": sweep.concurrency,
            "ray": sweep.ray,
            "seed": seed,
            "options": dict(sweep.options.get(protocol, {})) or None,
            "label": sweep.labels.get(model) if model is not None else None,
            "max_attempts": sweep.max_attempts,
            "retry_budget": sweep.retry_budget,
            "call_timeout": sweep.call_timeout,
            "progress": False,
        }
        # only what the sweep file sets is set, as on the command line (run.json keeps those)
        requests.append(({k: v for k, v in given.items() if v is not None}, f"sweep run ({what})"))
    return requests


def combinations(sweep: SweepFile) -> list[tuple[str, str | None, dict[str, str], int]]:
    """(protocol, model, role bindings, seed) of each run, in the sweep's order."""
    return list(itertools.product(sweep.protocols, sweep.models, sweep.roles, sweep.seeds))


def work_units(sweep: SweepFile) -> list[Unit]:
    """The sweep's (run, case shard[, phase]) work units, in an order every process agrees on."""
    assert sweep.out is not None
    return plan([Path(r.out) for r in expand(sweep)], sweep.shards, _run_phases(sweep))


def _run_phases(sweep: SweepFile) -> list[list[int]] | None:
    """The phases (indices into `phases:`) of each run: those holding a role its protocol has."""
    if sweep.phases is None:
        return None
    from umni.protocols.protocol import get_protocol

    phases = sweep.phases
    return [[i for i, p in enumerate(phases) if set(p) & set(get_protocol(c[0]).roles)] for c in combinations(sweep)]


def phase_roles(sweep: SweepFile, unit: Unit) -> tuple[str, ...]:
    """The roles a phased unit calls: its phase's, less those its protocol does not have."""
    from umni.protocols.protocol import get_protocol

    assert unit.phase is not None and sweep.phases
    known = get_protocol(combinations(sweep)[unit.run][0]).roles
    return tuple(r for r in sweep.phases[unit.phase] if r in known)


def unit_request(sweep: SweepFile, unit: Unit) -> RunConfig:
    given, source = run_settings(sweep)[unit.run]
    if unit.shard is not None:
        given = {**given, "shard": str(unit.shard)}
    if unit.phase is not None:
        given = {**given, "phase": list(phase_roles(sweep, unit))}
    return build_config(given, source=f"{source}, shard {unit.shard}" if unit.shard else source)


#: Sweep-file settings that say how runs are executed or where they go, never what they compute:
#: changing one (the Slurm time of a resubmission, more attempts) goes on with the same sweep.
OPERATIONAL_SETTINGS = frozenset(
    {"name", "out", "slurm", "concurrency", "placement", "ray", "max_attempts", "retry_budget", "call_timeout",
     "resources", "group", "max_units_per_task", "env", "serve"}  # `phases:` decides the units: not here
)


def planned_settings(sweep: SweepFile) -> dict[str, JsonValue]:
    """The settings a split sweep's plan keeps (`umni.run.units.UnitBook.begin`): everything that
    decides its units and results, store URLs without credentials (the plan is a file others read)."""
    settings: dict[str, JsonValue] = sweep.model_dump(mode="json", exclude=set(OPERATIONAL_SETTINGS))
    for name in ("cache", "blobs"):
        value = settings.get(name)
        if isinstance(value, str):
            settings[name] = redact_url(value, keep_user=False)
    return settings
