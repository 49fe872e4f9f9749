"""Turning a spec into a backend: in this process, or (``placement=ray``) as a pool of Ray actors
that each build the in-process backend. The factory sits above both so that placement only needs
the Backend contract, never the factory that chooses it."""

from __future__ import annotations

from umni.backends.contract import Backend, backend_class
from umni.backends.placement import RayPool, inner_spec, is_placed
from umni.util.spec import Spec


def create_backend(spec: Spec) -> Backend:
    """Instantiate the backend a spec names; fails early with what would work."""
    if "placement" in spec.options:
        return RayPool(spec) if is_placed(spec) else backend_class(spec.provider)(inner_spec(spec))
    return backend_class(spec.provider)(spec)
