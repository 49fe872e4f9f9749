"""Per-node policies as data: how a call is retried, and whether a result is read from or written
to the cache.

A run sets the default `RetryPolicy` (``--retries`` and friends); a graph may attach its own
policies to single nodes (`Graph.policy`), e.g. a judge that should give up sooner, or a node that
must be recomputed each run. Policies decide how work is done, never what it computes, so they are
not part of a node's cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tenacity loads with the first retry: a run's configuration does not need it
    from tenacity import RetryCallState


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on retrying one call: attempts, total time, and the backoff between tries."""

    max_attempts: int = 5
    budget_seconds: float = 600.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    parse_retries: int = 2
    #: Longest one attempt may take before it counts as a (retryable) failure; None: no limit.
    attempt_timeout: float | None = 3600.0

    def wait(self, state: RetryCallState) -> float:
        from tenacity.wait import wait_exponential_jitter

        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), self.max_wait)
        return wait_exponential_jitter(initial=self.initial_wait, max=self.max_wait, jitter=self.jitter)(state)


@dataclass(frozen=True)
class CachePolicy:
    """Whether a node may take its result from the cache (`read`) and whether it stores what it
    computed (`write`). A node that neither reads nor writes is recomputed every run; its
    dependents are still keyed by its output's content, so they stay cached when it repeats itself."""

    read: bool = True
    write: bool = True


#: The policy of every node that sets none.
DEFAULT_CACHE = CachePolicy()
