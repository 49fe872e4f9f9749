"""`umni sweep FILE --emit slurm`: a ready ``sbatch`` array script, one array task per work unit.

Each task runs ``umni sweep FILE --shard $TASK/N`` with N the number of units, so task t runs unit
t-1 alone. The script is resubmittable as it is: a unit whose record says done is skipped, and the
work of a unit that was cut off is found in the shared result store. The task that finds every unit
done writes the sweep's leaderboard (the assembling step), and ``umni sweep FILE`` does it by hand.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from umni.store.urls import describe, is_postgres
from umni.util.errors import InputError, StorageError

#: sbatch options written by umni itself; the sweep file's ``slurm:`` section cannot set them.
_OWN = frozenset({"array", "output", "job-name"})
_OPTION = re.compile(r"^[a-z][a-z0-9-]*$")


def slurm_script(sweep_file: Path, out: Path, name: str, units: int, options: dict[str, str | int | float], *, cwd: Path) -> str:
    """The text of the array script (`options`: the sweep file's ``slurm:`` section)."""
    settings = dict(options)
    cap = settings.pop("max_jobs", None)
    lines = ["#!/bin/bash", f"#SBATCH --job-name={_safe(f'umni-{name}')}"]
    array = f"1-{units}" + (f"%{int(cap)}" if cap is not None else "")
    lines.append(f"#SBATCH --array={array}")
    lines.append(f"#SBATCH --output={_safe(str(out.resolve() / 'slurm' / '%A_%a.out'))}")
    for key, value in settings.items():
        if not _OPTION.match(key) or key in _OWN:
            raise InputError(f"slurm option '{key}' is not one umni can write (lower-case sbatch long options, not {', '.join(sorted(_OWN))})", field=f"slurm.{key}")
        lines.append(f"#SBATCH --{key}={_safe(str(value))}")
    command = [sys.executable, "-m", "umni", "sweep", str(sweep_file.resolve()), "--shard"]
    lines += [
        "",
        "# one work unit per array task; resubmit this script as it is to finish what is left",
        "set -euo pipefail",
        f"cd {shlex.quote(str(cwd.resolve()))}",
        f"exec {shlex.join(command)} \"${{SLURM_ARRAY_TASK_ID}}/{units}\"",
        "",
    ]
    return "\n".join(lines)


def connection_note(store: str | None, tasks: int) -> str | None:
    """A warning when `tasks` array tasks running at once, each holding its store connections
    (``pool_size`` in the URL, default 1), would exceed what the PostgreSQL server admits; a note
    when the server's limit could not be read. None for other stores or when it fits."""
    if store is None or not is_postgres(store):
        return None
    from umni.store.pgsession import split_options
    from umni.store.postgres import connection_slots

    shown = describe(store)
    per_task = split_options(store, shown)[1].pool_size
    wanted = tasks * per_task
    opened = f"up to {tasks} task(s) at once × {per_task} connection(s) = {wanted} connections"
    try:
        most, reserved = connection_slots(store)
    except StorageError as exc:
        return f"note: could not read max_connections from {shown} ({exc.message}); the array opens {opened}"
    usable = most - reserved
    if wanted <= usable:
        return None
    return (
        f"warning: the array opens {opened} to {shown}, more than its max_connections ({most}, {reserved} of them "
        f"reserved for superusers); cap the array with `slurm: {{max_jobs: {max(1, usable // per_task)}}}` in the "
        "sweep file or raise max_connections"
    )


def _safe(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise InputError(f"slurm option value {value!r} holds a line break", field="slurm")
    return value
