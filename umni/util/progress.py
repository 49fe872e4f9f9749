"""Live progress: cases done of total, elapsed time, rate and ETA, and node counts.

On an interactive terminal it is one line redrawn by rich. When stderr is not a terminal (a batch
job, a CI log, output piped to a file) it writes a plain log line every `log_every` seconds
(``$UMNI_PROGRESS_INTERVAL``, default 30) and one when the run ends, so a long job's log shows
how far it got. ``enabled=False`` (``--quiet``) shows nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # rich loads when a live line is drawn: a batch job or a sweep task draws none
    from rich.live import Live
    from rich.text import Text


def _clock_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _default_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("UMNI_PROGRESS_INTERVAL", "30")))
    except ValueError:
        return 30.0


class Progress:
    """Progress of one run. `mode`: ``live`` (rich, a terminal), ``log`` (plain lines) or ``off``."""

    def __init__(
        self,
        title: str,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        log_every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.title = title
        self.counts: Counter[str] = Counter()
        self.cases_total = 0
        self._cases_done = 0
        self._start_done = 0
        self.stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if enabled is False:
            self.mode = "off"
        elif tty or enabled is True and stream is None:
            self.mode = "live"
        else:
            self.mode = "log"
        self.log_every = _default_interval() if log_every is None else log_every
        self._clock = clock
        self._started: float | None = None
        self._last_log = 0.0
        self._live: Live | None = None

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    # cases_done is set by the runner as cases finish; a log line may be due then
    @property
    def cases_done(self) -> int:
        return self._cases_done

    @cases_done.setter
    def cases_done(self, value: int) -> None:
        self._cases_done = value
        if self._started is None:
            self._start_done = value
        self._maybe_log()

    def __enter__(self) -> Progress:
        self._started = self._last_log = self._clock()
        self._start_done = self._cases_done
        if self.mode == "live":
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(file=self.stream), refresh_per_second=4, transient=False, get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.__exit__(None, None, None)
            self._live = None
        elif self.mode == "log" and self._started is not None:
            self._write_line()

    def bump(self, key: str, delta: int = 1) -> None:
        self.counts[key] += delta
        self._maybe_log()

    # ------------------------------------------------------------------------ figures
    def elapsed(self) -> float:
        return 0.0 if self._started is None else self._clock() - self._started

    def rate(self) -> float | None:
        """Cases finished per second by this invocation (resumed cases do not count)."""
        elapsed = self.elapsed()
        finished = self._cases_done - self._start_done
        return finished / elapsed if elapsed > 0 and finished > 0 else None

    def eta(self) -> float | None:
        rate = self.rate()
        remaining = max(self.cases_total - self._cases_done, 0)
        return remaining / rate if rate else (0.0 if remaining == 0 else None)

    def line(self) -> str:
        """The plain progress line (also what the live display shows)."""
        total = self.cases_total
        share = f" ({100 * self._cases_done / total:.1f}%)" if total else ""
        rate, eta = self.rate(), self.eta()
        c = self.counts
        return (
            f"{self.title}: {self._cases_done}/{total} cases{share} · "
            f"{'—' if rate is None else f'{rate:.2f}'} cases/s · elapsed {_clock_text(self.elapsed())} · "
            f"ETA {'—' if eta is None else _clock_text(eta)} · "
            f"nodes done {c['computed']} cached {c['cached']} running {c['running']} retrying {c['retrying']} failed {c['failed']}"
        )

    def _maybe_log(self) -> None:
        if self.mode != "log" or self._started is None:
            return
        now = self._clock()
        if now - self._last_log >= self.log_every:
            self._last_log = now
            self._write_line()

    def _write_line(self) -> None:
        try:
            print(self.line(), file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed or broken log stream never stops a run
            self.mode = "off"

    def _render(self) -> Text:
        from rich.text import Text

        c = self.counts
        rate, eta = self.rate(), self.eta()
        text = Text(f"{self.title}  cases {self._cases_done}/{self.cases_total}  ")
        text.append(f"{_clock_text(self.elapsed())} elapsed  ")
        text.append(f"{'—' if rate is None else f'{rate:.2f}'}/s  ETA {'—' if eta is None else _clock_text(eta)}  ", style="bold")
        text.append(f"done {c['computed']}  ", style="green")
        text.append(f"cached {c['cached']}  ", style="cyan")
        text.append(f"running {c['running']}  ", style="yellow")
        text.append(f"retrying {c['retrying']}  ", style="magenta")
        text.append(f"failed {c['failed']}", style="red" if c["failed"] else "")
        return text
