"""Run orchestration: the run configuration every entry point shares (`RunConfig`), one evaluation
from options to a finished run directory (`evaluate`), sweeps over models and protocols, and
re-judging a finished run with another judge.

The names load on first use (`umni.util.lazy`): a sweep task that finds its unit done imports
`umni.run.sweep` without the engine, the reports and the backends that an evaluation needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from umni.util.lazy import lazy_front

#: Public name -> module that defines it.
_EXPORTS = {
    "build_config": "umni.run.config",
    "RunConfig": "umni.run.config",
    "evaluate": "umni.run.evaluation",
    "evaluate_async": "umni.run.evaluation",
    "prepare": "umni.run.evaluation",
    "Prepared": "umni.run.evaluation",
    "RunResult": "umni.run.evaluation",
    "rejudge": "umni.run.rejudge",
    "RunDir": "umni.run.rundir",
    "run_identity": "umni.run.rundir",
    "expand": "umni.run.sweep_file",
    "load_sweep": "umni.run.sweep_file",
    "run_sweep": "umni.run.sweep",
}

__all__ = [
    "build_config",
    "evaluate",
    "evaluate_async",
    "expand",
    "load_sweep",
    "prepare",
    "Prepared",
    "rejudge",
    "run_identity",
    "run_sweep",
    "RunDir",
    "RunConfig",
    "RunResult",
]

if TYPE_CHECKING:
    from umni.run.config import RunConfig as RunConfig
    from umni.run.config import build_config as build_config
    from umni.run.evaluation import Prepared as Prepared
    from umni.run.evaluation import RunResult as RunResult
    from umni.run.evaluation import evaluate as evaluate
    from umni.run.evaluation import evaluate_async as evaluate_async
    from umni.run.evaluation import prepare as prepare
    from umni.run.rejudge import rejudge as rejudge
    from umni.run.rundir import RunDir as RunDir
    from umni.run.rundir import run_identity as run_identity
    from umni.run.sweep import run_sweep as run_sweep
    from umni.run.sweep_file import expand as expand
    from umni.run.sweep_file import load_sweep as load_sweep

__getattr__, __dir__ = lazy_front(__name__, _EXPORTS, globals())
