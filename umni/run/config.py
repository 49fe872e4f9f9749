"""The one description of a run: what `umni run` takes, what a sweep entry expands to, what
`umni rejudge` replays and what ``run.json`` keeps.

`RunConfig` is a pydantic model so every front end validates the same way (a `--limit 0` from the
command line, a `limit: 0` in a sweep file and `RunConfig(limit=0)` in Python give the same message).
Only the fields a user set are persisted (`persisted()`): replaying a run therefore passes exactly what
the user gave, never a protocol option that was merely defaulted (a defaulted option replayed as an
explicit one can be refused, or mean something else under a later default).

New run options belong here as fields; operational ones that do not describe the run (where it is
written, whether progress is drawn, a programmatic retry policy) are listed in `NOT_PERSISTED`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from umni.util.errors import ConfigError, InputError
from umni.util.policy import RetryPolicy

#: Fields that say how this invocation behaves, not what the run is; kept out of run.json.
NOT_PERSISTED = frozenset({"out", "progress", "retry", "fail_on_error"})


class RunConfig(BaseModel):
    """Everything a run is made of; also the Python entry point's argument.

    `retry` is a programmatic override of the whole retry policy (tests use it for zero waits); the
    command line sets `max_attempts`, `retry_budget` and `call_timeout` instead.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_assignment=True)

    protocol: str
    out: Path = Path(".")
    cases: Path | None = None
    model: str | None = None
    roles: list[str] = Field(default_factory=list)
    cache: str | None = Field(default=None, description="result store: a directory, sqlite:///… or postgresql://…")
    blobs: str | None = Field(default=None, description="image store: a directory, file:///dir or s3://bucket/prefix (default: beside the cache)")
    shard: str | None = Field(default=None, description="run only shard I/N of the cases ('slurm': the array task's)")
    phase: list[str] | None = Field(default=None, description="run only nodes of these roles; the rest stay pending")
    limit: int | None = Field(default=None, description="run only the first N cases (N >= 1)")
    concurrency: int | None = Field(default=None, description="calls in flight per backend (>= 1)")
    ray: str | None = Field(
        default=None, description="Ray cluster for placement=ray specs: 'auto' (join or start a local one) or an address"
    )
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)
    label: str | None = Field(default=None, description="the name tables show for the run (a paper's model name for "
                              "leaderboard --compare-paper; a prefix before '/' groups it in leaderboard --group)")
    max_attempts: int = Field(default=5, description="tries per call for retryable errors (>= 1)")
    retry_budget: float = Field(default=600.0, description="seconds one call may spend retrying (> 0)")
    call_timeout: float | None = Field(default=3600.0, description="seconds one attempt may take (> 0)")
    prices: Path | None = None
    progress: bool | None = None
    retry: RetryPolicy | None = None
    fail_on_error: float | None = Field(
        default=None, description="exit 3 when the share of failed or blocked nodes exceeds this (0-1; 0: any failure)"
    )

    @field_validator("limit", "concurrency")
    @classmethod
    def _at_least_one(cls, value: int | None, info: Any) -> int | None:
        if value is not None and value < 1:
            flag = info.field_name
            raise ValueError(f"--{flag} must be at least 1 (got {value})")
        return value

    @field_validator("max_attempts")
    @classmethod
    def _attempts(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"--max-attempts must be at least 1 (got {value})")
        return value

    @field_validator("retry_budget")
    @classmethod
    def _budget(cls, value: float) -> float:
        if not value > 0 or value != value:
            raise ValueError(f"--retry-budget must be a positive number of seconds (got {value})")
        return value

    @field_validator("call_timeout")
    @classmethod
    def _timeout(cls, value: float | None) -> float | None:
        if value is not None and (not value > 0 or value != value):
            raise ValueError(f"--call-timeout must be a positive number of seconds (got {value})")
        return value

    @field_validator("fail_on_error")
    @classmethod
    def _failure_share(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"--fail-on-error must be a share between 0 and 1 (got {value})")
        return value

    @field_validator("label")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("--label must name the run (got an empty label)")
        return None if value is None else value.strip()

    @field_validator("cache", "blobs", mode="before")
    @classmethod
    def _location(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @field_validator("cache", "blobs")
    @classmethod
    def _no_credentials(cls, value: str | None, info: Any) -> str | None:
        """A store setting that would put a credential in run.json is refused before anything is made."""
        from umni.store.urls import check_blobs, check_results

        if value is not None:
            try:
                (check_blobs if info.field_name == "blobs" else check_results)(value)
            except ConfigError as exc:
                raise ValueError(exc.message) from None
        return value

    @field_validator("shard")
    @classmethod
    def _shard(cls, value: str | None) -> str | None:
        from umni.util.sharding import parse_shard

        return None if value is None else str(parse_shard(value))  # 'slurm' resolved to I/N here

    @field_validator("phase", mode="before")
    @classmethod
    def _phase(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, (list, tuple, set, frozenset)):
            roles = [str(r).strip() for r in value if str(r).strip()]
            if not roles:
                raise ValueError("--phase needs at least one role (e.g. --phase generate)")
            return roles
        return value

    @field_validator("roles", mode="before")
    @classmethod
    def _roles_list(cls, value: Any) -> Any:
        return list(value) if isinstance(value, (tuple, set, frozenset)) else value

    # ------------------------------------------------------------------ derived
    def retry_policy(self) -> RetryPolicy:
        """The retry policy of this run: the programmatic override, else the three settings."""
        if self.retry is not None:
            return self.retry
        return RetryPolicy(max_attempts=self.max_attempts, budget_seconds=self.retry_budget, attempt_timeout=self.call_timeout)

    def persisted(self) -> dict[str, Any]:
        """The fields the user set, as JSON: what run.json keeps and a replay passes back verbatim."""
        given = self.model_dump(mode="json", exclude_unset=True, exclude=set(NOT_PERSISTED))
        for name in ("cases", "cache", "blobs", "prices"):  # absolute, so a replay from elsewhere finds them
            if given.get(name) is not None:
                given[name] = _absolute(given[name])
        return given

    @classmethod
    def replay(cls, persisted: dict[str, Any], **changes: Any) -> RunConfig:
        """Rebuild a run's configuration from run.json, with `changes` set on top (they count as set)."""
        return build_config({**persisted, **changes})


def _absolute(location: str) -> str:
    """A path made absolute; a URL as it is, less any password (libpq reads it from PGPASSWORD or
    ~/.pgpass, so run.json never holds it)."""
    from umni.store.urls import describe

    return describe(location)


def build_config(fields: dict[str, Any], *, source: str | None = None) -> RunConfig:
    """A RunConfig from keyword fields; invalid values become one InputError naming each field."""
    try:
        return RunConfig(**fields)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "config"
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(message if message.startswith("--") else f"{where}: {message}")
        prefix = f"{source}: " if source else ""
        raise InputError(prefix + "; ".join(problems)) from None


#: The old name of RunConfig, kept for code written against it.
RunRequest = RunConfig
