"""Models as umni sees them: the roles a graph asks for and the async interface each role needs
(`roles`), the Backend contract and its provider registry (`contract`), turning a spec into a backend
(`factory`), bindings of roles to backends for a run (`bindings`), and Ray placement with the wire
format images cross it in (`placement`, `wire`). Backends themselves live in the `umni_adapters`
package above umni and are found through the ``umni.backends`` entry points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from umni.util.lazy import lazy_front

#: Public name -> module that defines it. They load on first use (`umni.util.lazy`): reading a sweep
#: file's placement (`pool_shape`) must not import numpy and PIL with the roles' interfaces.
_EXPORTS = {
    "Bindings": "umni.backends.bindings",
    "Backend": "umni.backends.contract",
    "BackendParams": "umni.backends.contract",
    "backend_class": "umni.backends.contract",
    "check_roles": "umni.backends.contract",
    "known_providers": "umni.backends.contract",
    "start_backends": "umni.backends.contract",
    "create_backend": "umni.backends.factory",
    "RayPool": "umni.backends.placement",
    "connect": "umni.backends.placement",
    "PLACEMENT_PARAMS": "umni.backends.pool_shape",
    "PoolShape": "umni.backends.pool_shape",
    "from_wire": "umni.backends.wire",
    "to_wire": "umni.backends.wire",
}

if TYPE_CHECKING:
    from umni.backends.bindings import Bindings as Bindings
    from umni.backends.contract import Backend as Backend
    from umni.backends.contract import BackendParams as BackendParams
    from umni.backends.contract import backend_class as backend_class
    from umni.backends.contract import check_roles as check_roles
    from umni.backends.contract import known_providers as known_providers
    from umni.backends.contract import start_backends as start_backends
    from umni.backends.factory import create_backend as create_backend
    from umni.backends.placement import RayPool as RayPool
    from umni.backends.placement import connect as connect
    from umni.backends.pool_shape import PLACEMENT_PARAMS as PLACEMENT_PARAMS
    from umni.backends.pool_shape import PoolShape as PoolShape
    from umni.backends.wire import from_wire as from_wire
    from umni.backends.wire import to_wire as to_wire

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

__getattr__, __dir__ = lazy_front(__name__, _EXPORTS, globals())
