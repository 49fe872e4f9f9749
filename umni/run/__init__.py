"""Run orchestration: the run configuration every entry point shares (`RunConfig`), one evaluation
from options to a finished run directory (`evaluate`), sweeps over models and protocols, and
re-judging a finished run with another judge.
"""

from __future__ import annotations

from umni.run.config import RunConfig, build_config
from umni.run.evaluation import Prepared, RunResult, evaluate, evaluate_async, prepare
from umni.run.rejudge import rejudge
from umni.run.rundir import RunDir, run_identity
from umni.run.sweep import expand, load_sweep, run_sweep

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
