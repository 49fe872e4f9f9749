"""Re-scoring an existing run with another judge, without re-running anything else.

The new run replays the original command with only the ``judge`` role rebound. Every other node
must come from the shared cache (its role is frozen), so no generate, edit or answer call is made;
a node missing from the cache is recorded as a failure rather than recomputed. The new run records
both judges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from .errors import InputError
from .evaluation import RunRequest, RunResult, evaluate_async, prepare
from .roles import ALL_ROLES, JUDGE
from .spec import Spec


def read_manifest(run: Path) -> dict[str, Any]:
    path = Path(run) / "run.json"
    if not path.exists():
        raise InputError("not a umni run directory (no run.json)", path=run)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"run.json is not valid JSON ({exc.msg})", path=path) from None


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
