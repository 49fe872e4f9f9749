"""`umni sweep FILE --emit slurm`: ready ``sbatch`` scripts, one array per phase and resource class
(`umni.run.sweep_jobs`), an assemble job, and ``submit.sh`` that submits them in order.

Array task t of array NAME runs ``umni sweep FILE --task NAME:t``: the units the sweep file deals to
it. ``submit.sh`` submits each phase's arrays after every array of the phase before has succeeded
(``--dependency=afterok``) and the assemble job after every array has ended, however
(``afterany``): it writes the leaderboard when every unit is done, and otherwise names the units that
are not, exiting 1. Everything is resubmittable as it is: a unit whose record says done is skipped,
and the work of a unit that was cut off is found in the shared result store. Variables the sweep
file's ``env:`` lists are passed by name on the sbatch command line (which wins over
``SBATCH_EXPORT``), never by value.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from umni.run.sweep_jobs import ArrayJob
from umni.store.urls import describe, is_postgres
from umni.util.errors import InputError, StorageError

#: sbatch options written by umni itself; the sweep file's ``slurm:`` section cannot set them.
_OWN = frozenset({"array", "output", "job-name", "export", "dependency", "parsable"})
_OPTION = re.compile(r"^[a-z][a-z0-9-]*$")


def check_options(options: dict[str, str | int | float]) -> None:
    """The sweep file's ``slurm:`` keys are sbatch long options umni does not write itself."""
    for key, value in options.items():
        if key != "max_jobs" and (not _OPTION.match(key) or key in _OWN):
            raise InputError(f"slurm option '{key}' is not one umni can write (lower-case sbatch long options, not {', '.join(sorted(_OWN))})", field=f"slurm.{key}")
        _safe(str(value))


def array_script(job: ArrayJob, *, sweep_file: Path, out: Path, name: str, cap: int | None, env: list[str], cwd: Path) -> str:
    """The text of one array's script: one task per entry of ``job.tasks``."""
    array = f"1-{len(job.tasks)}" + (f"%{cap}" if cap is not None else "")
    lines = _header(f"umni-{name}-{job.name}", out / "slurm" / "%x_%A_%a.out", env, dict(job.options)) + [f"#SBATCH --array={array}"]
    command = [sys.executable, "-m", "umni", "sweep", str(sweep_file.resolve()), "--task"]
    return _body(lines, cwd, f"exec {shlex.join(command)} \"{job.name}:${{SLURM_ARRAY_TASK_ID}}\"",
                 "# one task's units per array task; resubmit to finish what is left (done units are skipped)")


def assemble_script(*, sweep_file: Path, out: Path, name: str, env: list[str], options: dict[str, str], cwd: Path) -> str:
    """The assemble job: the leaderboard from the store when every unit is done, else the units that are not."""
    lines = _header(f"umni-{name}-assemble", out / "slurm" / "%x_%j.out", env, options)
    command = [sys.executable, "-m", "umni", "sweep", str(sweep_file.resolve()), "--assemble"]
    return _body(lines, cwd, f"exec {shlex.join(command)}", "# after every array: assemble, or name the units that did not finish")


def submit_script(jobs: list[ArrayJob], scripts: dict[str, Path], assemble: Path, env: list[str]) -> str:
    """``submit.sh``: every array in phase order with ``sbatch --parsable``, then the assemble job."""
    export = [f"--export={','.join(env)}"] if env else []
    lines = [
        "#!/bin/bash",
        "# submits the sweep's arrays phase by phase, then the assemble job (umni sweep --emit slurm)",
        "set -euo pipefail",
    ]
    for var in env:  # by name only: the value stays in the submitting shell
        lines.append(f': "${{{var}:?is not set: export {var} before submitting (the jobs get it by name)}}"')
    before: list[str] = []  # the job ids of the previous phase
    current: list[str] = []
    every: list[str] = []
    phase = jobs[0].phase if jobs else 0
    for k, job in enumerate(jobs):
        if job.phase != phase:
            before, current, phase = current, [], job.phase
        var = f"job{k + 1}"
        after = [f"--dependency=afterok:{':'.join('$' + b for b in before)}"] if before else []
        call = " ".join(["sbatch", "--parsable", *export, *after, shlex.quote(str(scripts[job.name].resolve()))])
        lines += [f"{var}=$({call})", f"{var}=${{{var}%%;*}}   # {job.name}: {len(job.tasks)} task(s)"]
        current.append(var)
        every.append(var)
    after = [f"--dependency=afterany:{':'.join('$' + v for v in every)}"] if every else []
    call = " ".join(["sbatch", "--parsable", *export, *after, shlex.quote(str(assemble.resolve()))])
    lines += [f"assemble=$({call})", 'assemble=${assemble%%;*}']
    shown = " ".join(f"{job.name}=${'{'}job{k + 1}{'}'}" for k, job in enumerate(jobs))
    lines += [f'echo "submitted: {shown} assemble=$assemble"', ""]
    return "\n".join(lines)


def _header(job_name: str, log: Path, env: list[str], options: dict[str, str]) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={_safe(job_name)}", f"#SBATCH --output={_safe(str(log.resolve()))}"]
    if env:
        lines.append(f"#SBATCH --export={','.join(env)}")
    lines += [f"#SBATCH --{key}={_safe(value)}" for key, value in options.items()]
    return lines


def _body(lines: list[str], cwd: Path, command: str, comment: str) -> str:
    return "\n".join([*lines, "", comment, "set -euo pipefail", f"cd {shlex.quote(str(cwd.resolve()))}", command, ""])


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
