"""umni plugin example: the ``tinydraw`` backend, a model that ships its own code.

The contract a plugin follows (docs/plugins.md): a ``umni.backends.Backend`` subclass with a
``provider`` name and the roles it fills, registered under the ``umni.backends`` entry-point group.
"""

from .backend import TinyDrawBackend, TinyDrawParams

__all__ = ["TinyDrawBackend", "TinyDrawParams"]
