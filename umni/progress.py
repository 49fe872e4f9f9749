"""Live progress: done / cached / running / retrying / failed, per run.

Drawn with rich when the terminal is interactive; otherwise silent (the summary line and the event
log carry the same facts).
"""

from __future__ import annotations

import sys
from collections import Counter

from rich.console import Console
from rich.live import Live
from rich.text import Text


class Progress:
    def __init__(self, title: str, *, enabled: bool | None = None) -> None:
        self.title = title
        self.counts: Counter[str] = Counter()
        self.cases_done = 0
        self.cases_total = 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._live: Live | None = None

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._live = Live(
                console=Console(stderr=True), refresh_per_second=4, transient=False, get_renderable=self._render
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.__exit__(None, None, None)
            self._live = None

    def bump(self, key: str, delta: int = 1) -> None:
        self.counts[key] += delta

    def _render(self) -> Text:
        c = self.counts
        text = Text(f"{self.title}  cases {self.cases_done}/{self.cases_total}  ")
        text.append(f"done {c['computed']}  ", style="green")
        text.append(f"cached {c['cached']}  ", style="cyan")
        text.append(f"running {c['running']}  ", style="yellow")
        text.append(f"retrying {c['retrying']}  ", style="magenta")
        text.append(f"failed {c['failed']}", style="red" if c["failed"] else "")
        return text
