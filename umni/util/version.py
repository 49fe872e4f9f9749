"""umni's release number, kept at the bottom layer so every layer may record it (run manifests,
`umni --version`) without importing the package's top; and, when umni runs from a git checkout
(an editable install), the commit checked out, so a run made between releases names its code."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@lru_cache(maxsize=1)
def source_commit() -> str | None:
    """The commit of the checkout umni is imported from, with ``+dirty`` left out (reading the
    index would cost more than it tells); None when umni is installed from a wheel or the
    checkout cannot be read. Read from the files under ``.git`` (HEAD, the ref it names, packed
    refs), never by running git: a run records it at every start."""
    return commit_of(Path(__file__).resolve().parents[2])


def commit_of(checkout: Path) -> str | None:
    """The commit checked out in `checkout` (a repository or a worktree of one), or None."""
    git = checkout / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: PATH"
            pointer = git.read_text().strip()
            if not pointer.startswith("gitdir:"):
                return None
            git = (checkout / pointer.removeprefix("gitdir:").strip()).resolve()
        if not git.is_dir():
            return None
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if _COMMIT.fullmatch(head) else None
        ref = head.removeprefix("ref:").strip()
        common = git
        if (git / "commondir").is_file():  # a worktree keeps its branches in the main repository
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for folder in dict.fromkeys((git, common)):
            loose = folder / ref
            if loose.is_file():
                value = loose.read_text().strip()
                return value if _COMMIT.fullmatch(value) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                value, _, name = line.partition(" ")
                if name == ref and _COMMIT.fullmatch(value):
                    return value
    except (OSError, UnicodeDecodeError):
        return None
    return None
