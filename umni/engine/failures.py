"""What went wrong, as the runner records it: a node's typed failure from what its key or its kind's
`execute` raised, and the one error a stopped run raises (a disk fault, or a lone umni error)."""

from __future__ import annotations

from umni.graph.outcomes import Failure, Outcome
from umni.util.errors import BackendError, InputError, OutputFailure, StorageError, UmniError


def storage_fault(group: BaseExceptionGroup) -> StorageError | None:
    """The first StorageError inside a task group's exception group: a disk fault stops the run
    with that one error, not with a traceback of every task it interrupted."""
    for exc in group.exceptions:
        if isinstance(exc, StorageError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = storage_fault(exc)
            if found is not None:
                return found
    return None


def one_error(group: BaseExceptionGroup) -> BaseException:
    """What a run that stopped raises: a disk fault, or a lone umni error (a case graph that does
    not validate, say), as one line; anything else as the group it came in."""
    fault = storage_fault(group)
    if fault is not None:
        return fault
    if len(group.exceptions) == 1 and isinstance(group.exceptions[0], UmniError):
        return group.exceptions[0]
    return group


def failed(nid: str, kind: str, message: str, attempts: int = 1, raw: str | None = None) -> Outcome:
    return Outcome(nid, "failed", failure=Failure(kind, message, attempts, raw=raw))


#: What making a node's key can raise that belongs to the node, not the run (see `unkeyable`).
KEY_FAULTS = (FileNotFoundError, InputError, TypeError, ValueError)


def unkeyable(nid: str, exc: Exception) -> Outcome:
    """The node's failure when its key cannot be made: a missing or broken case image, a callable
    that cannot be fingerprinted, a parameter that is not JSON."""
    if isinstance(exc, FileNotFoundError):
        return failed(nid, "input", str(exc))
    if isinstance(exc, InputError):  # a case image that cannot be decoded, a callable that cannot be
        return failed(nid, "input", exc.describe())  # fingerprinted (ConfigError is an InputError)
    return failed(nid, "internal", f"the node's parameters cannot be keyed: {exc}")  # TypeError, ValueError


def failure(nid: str, exc: Exception, attempts: int) -> Outcome:
    """What a kind's `execute` raised, as the node's typed failure."""
    if isinstance(exc, OutputFailure):
        return failed(nid, exc.kind, str(exc), attempts, raw=exc.raw)
    if isinstance(exc, BackendError):
        return failed(nid, "backend", str(exc), attempts)
    if isinstance(exc, InputError):  # bad case data met while computing: the user's to fix, not a bug
        return failed(nid, "input", exc.describe(), attempts)
    # a backend or compute bug: recorded against this node, the run goes on
    return failed(nid, "internal", f"{type(exc).__name__}: {exc}", attempts)
