"""Case sharding (``--shard I/N``, ``--shard slurm``): one run split over N processes or machines.

A case belongs to shard I of N by a stable hash of its id (sha256, not Python's salted `hash`), so
every process agrees without talking to the others, and adding cases never moves an existing case
to another shard of the same N. Each shard writes its own run directory (``<out>-shard<I>of<N>``);
all share one result store (``--cache postgresql://…`` across machines). The assemble step is the
same command without ``--shard``: every node is then served from the store (0 computed).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Shard", "parse_shard", "shard_folders"]


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, case_id: str) -> bool:
        digest = hashlib.sha256(case_id.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def directory(self, out: Path) -> Path:
        """This shard's own run directory, beside the assembled run's."""
        return out.with_name(f"{out.name}-shard{self.index}of{self.count}")


_FOLDER_TAIL = re.compile(r"-shard([1-9][0-9]*)of([1-9][0-9]*)")


def shard_folders(out: Path) -> list[tuple[Shard, Path]]:
    """The shard directories beside `out` (`Shard.directory`), of every split, ordered by split
    (N) then shard (I). Names are compared as text, so an `out` whose name holds glob characters
    (``sh[1]``) finds its own shards and no one else's."""
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return []
    found: list[tuple[Shard, Path]] = []
    for entry in entries:
        if not entry.name.startswith(out.name):
            continue
        match = _FOLDER_TAIL.fullmatch(entry.name, len(out.name))
        if match and int(match[1]) <= int(match[2]) and entry.is_dir():
            found.append((Shard(int(match[1]), int(match[2])), entry))
    return sorted(found, key=lambda item: (item[0].count, item[0].index))


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> Shard:
    """``I/N`` (1 <= I <= N), or ``slurm``: the array task's place among the array's tasks
    (SLURM_ARRAY_TASK_ID relative to SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT)."""
    env = os.environ if environ is None else environ
    if text.strip().lower() == "slurm":
        try:
            task = int(env["SLURM_ARRAY_TASK_ID"])
            count = int(env["SLURM_ARRAY_TASK_COUNT"])
            first = int(env.get("SLURM_ARRAY_TASK_MIN", "0"))
        except KeyError as exc:
            raise ValueError(
                f"--shard slurm needs {exc.args[0]} (run it as a Slurm array task: sbatch --array=0-N)"
            ) from None
        except ValueError:
            raise ValueError("--shard slurm: SLURM_ARRAY_TASK_ID/COUNT/MIN are not integers") from None
        shard_text = f"{task - first + 1}/{count}"
        try:
            return parse_shard(shard_text, env)
        except ValueError as exc:
            raise ValueError(
                f"--shard slurm: task {task} (array starting at {first}) of {count} tasks: {exc}; "
                "use a contiguous array (--array=0-N or 1-N, no step)"
            ) from None
    index_text, sep, count_text = text.partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"--shard expects I/N (e.g. 1/4) or 'slurm', got {text!r}") from None
    if not sep or count < 1 or not 1 <= index <= count:
        raise ValueError(f"--shard {text}: I must be between 1 and N (shards are numbered 1/N … N/N)")
    return Shard(index, count)
