"""Models as umni sees them: the roles a graph asks for and the async interface each role needs
(`roles`), the Backend contract and its provider registry (`contract`), turning a spec into a backend
(`factory`), bindings of roles to backends for a run (`bindings`), and Ray placement with the wire
format images cross it in (`placement`, `wire`). Backends themselves live in the `umni_adapters`
package above umni and are found through the ``umni.backends`` entry points.
"""

from __future__ import annotations

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend, BackendParams, backend_class, check_roles, known_providers, start_backends
from umni.backends.factory import create_backend
from umni.backends.placement import RayPool, connect
from umni.backends.pool_shape import PLACEMENT_PARAMS, PoolShape
from umni.backends.wire import from_wire, to_wire

__all__ = [
    "Backend",
    "backend_class",
    "BackendParams",
    "Bindings",
    "check_roles",
    "connect",
    "create_backend",
    "from_wire",
    "known_providers",
    "PLACEMENT_PARAMS",
    "PoolShape",
    "RayPool",
    "start_backends",
    "to_wire",
]
