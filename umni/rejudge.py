"""Re-scoring an existing run with another judge, without re-running anything else.

The new run replays the original command with only the ``judge`` role rebound. Every other node
must come from the shared cache (its role is frozen), so no generate, edit or answer call is made;
a node missing from the cache is recorded as a failure rather than recomputed. The new run records
both judges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from .caseio import read_json
from .completion import require_complete
from .errors import InputError
from .evaluation import RunRequest, RunResult, evaluate_async, prepare
from .roles import ALL_ROLES, JUDGE
from .spec import Spec


def read_manifest(run: Path) -> dict[str, Any]:
    path = Path(run) / "run.json"
    if not path.exists():
        raise InputError("not a umni run directory (no run.json)", path=run)
    require_complete(run)  # never re-score a half-written run
    manifest = read_json(path)  # not JSON, or not UTF-8: an InputError naming run.json
    if not isinstance(manifest, dict):
        raise InputError("run.json does not hold a JSON object", path=path)
    return manifest


def rejudge(run: Path, judge: str, out: Path | None = None, *, concurrency: int | None = None, progress: bool | None = False) -> RunResult:
    manifest = read_manifest(run)
    bindings: dict[str, str] = manifest["bindings"]
    old_judge = bindings.get(JUDGE)
    new_bindings = {**bindings, JUDGE: str(Spec.parse(judge))}
    out = out or Path(str(run).rstrip("/") + "-rejudged")
    request = RunRequest(
        protocol=manifest["protocol"],
        out=out,
        cases=Path(manifest["cases"]["path"]),
        roles=[f"{role}={spec}" for role, spec in sorted(new_bindings.items())],
        cache=Path(manifest["cache"]),
        seed=manifest["seed"],
        limit=manifest.get("limit"),
        options=dict(manifest["options"]),
        concurrency=concurrency,
        progress=progress,
    )
    prepared = prepare(request)
    lineage = {"rejudged_from": str(Path(run).resolve()), "judges": {"original": old_judge, "new": new_bindings[JUDGE]}}
    frozen = frozenset(ALL_ROLES) - {JUDGE}
    return anyio.run(lambda: evaluate_async(request, prepared, frozen_roles=frozen, lineage=lineage))
