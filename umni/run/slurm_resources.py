"""The Slurm resources a sweep file can give one model binding (``resources:``, see
`umni.run.sweep_jobs`): sbatch long options, each checked so a job script cannot be made malformed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: sbatch options that ask for GPUs: left out of `slurm:`'s defaults for a unit served elsewhere
GPU_OPTIONS = frozenset({"gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"})
_NO_SPACE = r"^\S+$"


class Resources(BaseModel):
    """What one model binding's jobs ask Slurm for (sbatch long options, spelt as sbatch spells them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    gres: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$", description="e.g. gpu:1, gpu:a100:2")
    cpus_per_task: int | None = Field(None, alias="cpus-per-task", ge=1, le=100_000)
    mem: str | None = Field(None, pattern=r"^\d+[KMGT]?$", description="e.g. 32G")
    time: str | None = Field(None, pattern=r"^\d+(-\d+)?(:\d+){0,2}$", description="minutes, HH:MM:SS or D-HH:MM:SS")
    partition: str | None = Field(None, pattern=_NO_SPACE)
    constraint: str | None = Field(None, pattern=_NO_SPACE)

    def options(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.model_dump(by_alias=True, exclude_none=True).items()}
