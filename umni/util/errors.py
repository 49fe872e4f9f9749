"""Error types, split by who can act on them.

`InputError` is the user's to fix (a case file, a spec, a run directory) and maps to exit code 2.
`BackendError` comes from a model call; only the backend knows whether trying again can help, so it
says so with `retryable` (and `retry_after` when the server named a wait).
`ParseFailure`, `InvalidAnswer` and `DegenerateOutput` are model outputs that cannot be scored: the
runner records them as typed failures and counts them apart from scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class UmniError(Exception):
    """Base class of every error umni raises on purpose.

    Errors cross process boundaries (a Ray replica's failure reaches the driver), so every subclass
    pickles whatever its constructor looks like: it is rebuilt from its arguments and attributes,
    without calling ``__init__`` again.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


def _rebuild_error(cls: type[UmniError], args: tuple[Any, ...], state: dict[str, Any]) -> UmniError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class InputError(UmniError):
    """Bad input the user can fix; names where it is (file, line or record, field)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        record: str | int | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.record = record
        self.field = field
        self.line = line
        super().__init__(self.describe())

    def describe(self) -> str:
        where = []
        if self.path:
            where.append(self.path + (f":{self.line}" if self.line is not None else ""))
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field:
            where.append(f"field '{self.field}'")
        return (", ".join(where) + ": " if where else "") + self.message


class InputErrors(InputError):
    """Several input problems found in one pass, so the user can fix them all at once."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        first = errors[0]
        super().__init__(first.message, path=first.path, record=first.record, field=first.field, line=first.line)

    def describe(self) -> str:  # noqa: D102
        shown = "\n".join("  " + e.describe() for e in self.errors[:50])
        more = f"\n  … and {len(self.errors) - 50} more" if len(self.errors) > 50 else ""
        return f"{len(self.errors)} problem(s) in the input:\n{shown}{more}"


class BackendError(UmniError):
    """A model call failed. `retryable` says whether the same call may succeed later."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message)


class OutputFailure(UmniError):
    """A model answered, but the answer cannot be used. Subclasses name why."""

    kind = "output"

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        self.raw = raw
        super().__init__(message)


class ParseFailure(OutputFailure):
    """A judge or model answer does not follow the format it was asked for."""

    kind = "parse"


class InvalidAnswer(OutputFailure):
    """An answer that parses but is not allowed (an option that does not exist, say)."""

    kind = "invalid"


class Refusal(OutputFailure):
    """The model declined to answer (a refusal message, or the server's content filter stopped it).
    The refusal text is kept as ``raw``; asking again with the same request would only repeat it."""

    kind = "refusal"


class DegenerateOutput(OutputFailure):
    """An output that exists but carries nothing to score (an empty or 1x1 image)."""

    kind = "degenerate"


class ConfigError(InputError):
    """A spec, role or option that cannot be honoured; says what would work."""


class StorageError(UmniError):
    """The disk, not the model or the input, failed: full, read-only, no permission, or a damaged database.

    It is never recorded as a node outcome (the model did nothing wrong): the runner lets it through, the
    CLI prints one line and exits 1, and a resume once the disk is fixed gives the uninterrupted result.
    """

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)
