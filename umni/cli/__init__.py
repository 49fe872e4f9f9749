"""The `umni` command line.

Exit codes: 0 when a run completed (recorded node failures included: they are results too),
1 when it could not complete, 2 on usage or input errors (nothing was run), 3 when it completed
but the share of failed nodes exceeds `--fail-on-error`.
"""

from __future__ import annotations

import argparse
import sys

from umni.cli.commands import COMMANDS
from umni.cli.parser import EXIT_FAILURES, EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, build_parser, invoked_as, parse_args
from umni.util.errors import InputError, UmniError
from umni.util.memory import limit_malloc_arenas
from umni.util.secrets import scrub
from umni.util.stopping import Terminated, on_sigterm

__all__ = ["EXIT_FAILURES", "EXIT_INCOMPLETE", "EXIT_INPUT", "EXIT_OK", "build_parser", "invoked_as", "main", "parse_args"]


def _interruption(group: BaseExceptionGroup) -> KeyboardInterrupt | None:
    """The interruption a group of failed tasks holds (Ctrl-C or SIGTERM reach one task of a sweep)."""
    for exc in group.exceptions:
        found = _interruption(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, KeyboardInterrupt):
            return found
    return None


def _stopped(exc: KeyboardInterrupt) -> int:
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    print(f"umni: {what}; run the same command again to resume", file=sys.stderr)
    return EXIT_INCOMPLETE


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    limit_malloc_arenas()  # before any thread: a long run's memory stays flat (`umni.util.memory`)
    with on_sigterm():  # SIGTERM (a scheduler's cancel, `kill`) stops the command as Ctrl-C does
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        return COMMANDS[args.command](args)
    except BaseExceptionGroup as group:  # tasks of a sweep stopped together: one line, no traceback
        stop = _interruption(group)
        if stop is None:
            raise
        return _stopped(stop)
    except InputError as exc:
        print(f"umni: error: {scrub(exc.describe())}", file=sys.stderr)  # a spec's base_url password, say
        return EXIT_INPUT
    except ModuleNotFoundError as exc:  # an optional dependency: name the extra that brings it
        from umni.util.extras import describe_missing

        print(f"umni: error: {describe_missing(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except UmniError as exc:
        print(f"umni: error: {scrub(str(exc))}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except OSError as exc:  # a file system fault no layer named more precisely: still one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"umni: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INCOMPLETE


if __name__ == "__main__":
    sys.exit(main())
