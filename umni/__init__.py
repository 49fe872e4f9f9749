"""umni: evaluate unified multimodal models as async graphs.

The names most users need are importable from here (`from umni import evaluate, RunConfig, Graph`);
they load on first use, so `import umni` (and the CLI's start-up) stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> module that defines it.
_EXPORTS = {
    "evaluate": "umni.evaluation",
    "evaluate_async": "umni.evaluation",
    "RunResult": "umni.evaluation",
    "RunConfig": "umni.config",
    "Graph": "umni.graph",
    "Ref": "umni.graph",
    "ImageFile": "umni.graph",
    "Runner": "umni.runner",
    "Bindings": "umni.bindings",
    "Cache": "umni.store",
    "Outcome": "umni.outcomes",
    "CaseResult": "umni.outcomes",
    "RetryPolicy": "umni.policy",
    "CachePolicy": "umni.policy",
    "Kind": "umni.kinds",
    "Protocol": "umni.protocol",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from .bindings import Bindings as Bindings
    from .config import RunConfig as RunConfig
    from .evaluation import RunResult as RunResult
    from .evaluation import evaluate as evaluate
    from .evaluation import evaluate_async as evaluate_async
    from .graph import Graph as Graph
    from .graph import ImageFile as ImageFile
    from .graph import Ref as Ref
    from .kinds import Kind as Kind
    from .outcomes import CaseResult as CaseResult
    from .outcomes import Outcome as Outcome
    from .policy import CachePolicy as CachePolicy
    from .policy import RetryPolicy as RetryPolicy
    from .protocol import Protocol as Protocol
    from .runner import Runner as Runner
    from .store import Cache as Cache


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'umni' has no attribute '{name}'")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
