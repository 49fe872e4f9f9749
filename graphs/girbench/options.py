"""The ``--option`` fields of a GIR-Bench run: which tasks, which roles are unbound, where the
official feature extractors come from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from umni.plugin import EMBED

from .tasks import ALL_ROLES, FEATURE_METRICS, METRIC_ROLES, OFFICIAL_UNI_MODEL, TASK_ALIASES, TASKS


def _split_names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class GirOptions(BaseModel):
    """``tasks``: comma-separated subset of the tasks (empty: every task the case folder holds).
    ``skip_roles``: roles this run does not bind; what needs them is skipped and counted.
    ``features``: ``official`` (default) scores Uni similarity with DINOv3 (``uni_model``, a local
    folder for transformers or a hub id already in the Hugging Face cache) and the Visual Puzzle FID
    with torchmetrics' InceptionV3 (``fid_weights``: a local weights file in torch-fidelity's format;
    empty for the standard file in torch's hub cache); a run never downloads them (`weights.py`).
    ``embed`` uses the run's embed role for both instead (a deviation, listed as such)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = Field("", description="comma-separated tasks to run (default: every task in the folder)")
    skip_roles: str = Field("", description="roles this run does not bind; what needs them is skipped and counted")
    features: Literal["official", "embed"] = Field(
        "official", description="official: DINOv3 (Uni) and InceptionV3 FID (puzzle); embed: the run's embed role"
    )
    uni_model: str = Field(
        OFFICIAL_UNI_MODEL, description="DINOv3 checkpoint for Uni similarity: local folder, or hub id already in the Hugging Face cache"
    )
    fid_weights: str = Field(
        "", description="InceptionV3 weights file (torch-fidelity format); empty: the standard file in torch's hub cache"
    )
    #: Left out of summaries while unset, so they read as before the option existed.
    puzzle_inputs: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Visual Puzzle: the folder of shuffled input images (<id>.png), a name inside VisualPuzzle/ or a "
        "path; default: the one folder of numbered images beside solution/ (question/, input/, ...)",
    )

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: str) -> str:
        chosen: list[str] = []
        for name in _split_names(value):
            key = name.lower().replace("_", "").replace("-", "")
            task = TASK_ALIASES.get(key, name.lower())
            if task not in TASKS:
                raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
            if task not in chosen:
                chosen.append(task)
        return ",".join(t for t in TASKS if t in chosen)

    @field_validator("skip_roles")
    @classmethod
    def _known_roles(cls, value: str) -> str:
        roles = {name.lower() for name in _split_names(value)}
        unknown = sorted(roles - set(ALL_ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; GIR-Bench uses: {', '.join(ALL_ROLES)}")
        return ",".join(r for r in ALL_ROLES if r in roles)

    @property
    def task_list(self) -> list[str]:
        return _split_names(self.tasks)

    @property
    def skipped_roles(self) -> set[str]:
        return set(_split_names(self.skip_roles))

    def metric_roles(self, metric: str) -> tuple[str, ...]:
        """The roles `metric` needs: with official features, Uni and puzzle need no embed role."""
        roles = METRIC_ROLES[metric]
        if self.features == "official" and metric in FEATURE_METRICS:
            return tuple(r for r in roles if r != EMBED)
        return roles

    def unmet_roles(self, metric: str) -> list[str]:
        return [role for role in self.metric_roles(metric) if role in self.skipped_roles]


def with_unbound_roles_skipped(options: GirOptions, bound_roles: Iterable[str]) -> GirOptions:
    """The options with every role this run leaves unbound added to ``skip_roles``.

    `build` cannot see the bindings, so a run that lacks, say, a detector would fail graph
    validation. Calling this before `load` (with the bound role names) turns that into counted,
    stated skips instead.
    """
    bound = set(bound_roles)
    missing = {role for role in ALL_ROLES if role not in bound}
    return GirOptions(**{**options.model_dump(), "skip_roles": ",".join(sorted(options.skipped_roles | missing))})
