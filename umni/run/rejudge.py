"""Re-scoring an existing run with another judge, without re-running anything else.

The new run replays the original command with only the ``judge`` role rebound. Every other node
must come from the shared cache (its role is frozen), so no generate, edit or answer call is made;
a node missing from the cache is recorded as a failure rather than recomputed. The new run records
both judges.
"""

from __future__ import annotations

from pathlib import Path

from umni.backends.roles import CRITIC, DERIVED_ROLES, JUDGE, known_roles
from umni.protocols.protocol import get_protocol
from umni.run.config import RunConfig
from umni.run.evaluation import RunResult, evaluate_async, prepare
from umni.store.completion import require_complete
from umni.store.runfolder import JudgeChange, Lineage, Manifest, RunFolder
from umni.util.errors import InputError
from umni.util.spec import Spec
from umni.util.stopping import run_async


def read_manifest(run: Path) -> Manifest:
    folder = RunFolder(run)
    if not folder.run_json.exists():
        raise InputError("not a umni run directory (no run.json)", path=run)
    require_complete(run)  # never re-score a half-written run
    return folder.read_manifest()  # not JSON, not UTF-8 or not a manifest: an InputError naming run.json


def rejudge(run: Path, judge: str, out: Path | None = None, *, concurrency: int | None = None, progress: bool | None = False) -> RunResult:
    manifest = read_manifest(run)
    bindings = manifest.bindings
    old_judge = bindings.get(JUDGE)
    new_bindings = {**bindings, JUDGE: str(Spec.parse(judge))}
    if old_judge is not None and CRITIC not in bindings:
        # the in-loop critic stays the original judge: the loop's trajectory is replayed, not re-decided
        new_bindings[CRITIC] = old_judge
    out = out or Path(str(run).rstrip("/") + "-rejudged")
    roles = [f"{role}={spec}" for role, spec in sorted(new_bindings.items())]
    if manifest.config is not None:
        # the run's own configuration, verbatim: options it left at their defaults stay defaulted
        given = {k: v for k, v in manifest.config.items() if k not in ("model", "phase")}
        request = RunConfig.replay(given, roles=roles, out=out, cache=manifest.cache, progress=progress,
                                   **({"concurrency": concurrency} if concurrency is not None else {}))
    else:  # a run directory written before run.json kept the configuration
        request = RunConfig(
            protocol=manifest.protocol,
            out=out,
            cases=Path(manifest.cases.path),
            roles=roles,
            cache=manifest.cache,
            seed=manifest.seed,
            limit=manifest.limit,
            options=dict(manifest.options),
            concurrency=concurrency,
            progress=progress,
        )
    if JUDGE not in get_protocol(request.protocol).roles:
        raise InputError(f"protocol '{request.protocol}' has no judge, so there is nothing to re-judge", path=run)
    prepared = prepare(request)
    lineage = Lineage(rejudged_from=str(Path(run).resolve()), judges=JudgeChange(original=old_judge, new=new_bindings[JUDGE]))
    frozen = (frozenset(known_roles()) | frozenset(DERIVED_ROLES)) - {JUDGE}
    return run_async(lambda: evaluate_async(request, prepared, frozen_roles=frozen, lineage=lineage))
