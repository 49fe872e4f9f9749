"""umni: evaluate unified multimodal models as async graphs.

The names most users need are importable from here (`from umni import evaluate, RunConfig, Graph`);
they load on first use, so `import umni` (and the CLI's start-up) stays light. What a backend or a
protocol needs is in the other public front, `umni.plugin`. Everything else lives in one layered
sub-package per responsibility (util, store, backends, graph, protocols, engine, reporting, run, and
the CLI on top), whose layout is not part of the public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from umni import _moved
from umni.util.lazy import lazy_front
from umni.util.version import __version__

_moved.install()  # old flat import paths keep working, with a DeprecationWarning

#: Public name -> module that defines it.
_EXPORTS = {
    "evaluate": "umni.run.evaluation",
    "evaluate_async": "umni.run.evaluation",
    "RunResult": "umni.run.evaluation",
    "RunConfig": "umni.run.config",
    "Summary": "umni.store.runfolder",
    "RunFolder": "umni.store.runfolder",
    "Graph": "umni.graph.graph",
    "Node": "umni.graph.nodes",
    "Ref": "umni.graph.nodes",
    "ImageFile": "umni.graph.nodes",
    "Outcome": "umni.graph.outcomes",
    "CaseResult": "umni.graph.outcomes",
    "Runner": "umni.engine.runner",
    "CaseJob": "umni.engine.runner",
    "Kind": "umni.engine.kinds",
    "Bindings": "umni.backends.bindings",
    "Backend": "umni.backends.contract",
    "Spec": "umni.util.spec",
    "Cache": "umni.store.cache",
    "RetryPolicy": "umni.util.policy",
    "CachePolicy": "umni.util.policy",
    "Protocol": "umni.protocols.protocol",
    "UmniError": "umni.util.errors",
    "ConfigError": "umni.util.errors",
    "InputError": "umni.util.errors",
    "BackendError": "umni.util.errors",
    "ParseFailure": "umni.util.errors",
    "InvalidAnswer": "umni.util.errors",
    "Refusal": "umni.util.errors",
    "DegenerateOutput": "umni.util.errors",
    "StorageError": "umni.util.errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from umni.backends.bindings import Bindings as Bindings
    from umni.backends.contract import Backend as Backend
    from umni.engine.kinds import Kind as Kind
    from umni.engine.runner import CaseJob as CaseJob
    from umni.engine.runner import Runner as Runner
    from umni.graph.graph import Graph as Graph
    from umni.graph.nodes import ImageFile as ImageFile
    from umni.graph.nodes import Node as Node
    from umni.graph.nodes import Ref as Ref
    from umni.graph.outcomes import CaseResult as CaseResult
    from umni.graph.outcomes import Outcome as Outcome
    from umni.protocols.protocol import Protocol as Protocol
    from umni.run.config import RunConfig as RunConfig
    from umni.run.evaluation import RunResult as RunResult
    from umni.run.evaluation import evaluate as evaluate
    from umni.run.evaluation import evaluate_async as evaluate_async
    from umni.store.cache import Cache as Cache
    from umni.store.runfolder import RunFolder as RunFolder
    from umni.store.runfolder import Summary as Summary
    from umni.util.errors import BackendError as BackendError
    from umni.util.errors import ConfigError as ConfigError
    from umni.util.errors import DegenerateOutput as DegenerateOutput
    from umni.util.errors import InputError as InputError
    from umni.util.errors import InvalidAnswer as InvalidAnswer
    from umni.util.errors import ParseFailure as ParseFailure
    from umni.util.errors import Refusal as Refusal
    from umni.util.errors import StorageError as StorageError
    from umni.util.errors import UmniError as UmniError
    from umni.util.policy import CachePolicy as CachePolicy
    from umni.util.policy import RetryPolicy as RetryPolicy
    from umni.util.spec import Spec as Spec

__getattr__, __dir__ = lazy_front(__name__, _EXPORTS, globals())
