"""Bindings: which backend fills each role of a run.

`--model SPEC` binds every role that backend fills; `--role ROLE=SPEC` overrides one role. Equal
specs share one backend instance, so a model bound to several roles is loaded once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from umni.backends.contract import Backend
from umni.backends.factory import create_backend
from umni.backends.roles import DERIVED_ROLES, known_roles, role_interface
from umni.util.errors import ConfigError
from umni.util.spec import Spec, parse_role_binding


class Bindings:
    """Role → backend, with the specs that made them."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        self.backends = dict(backends)

    @classmethod
    def from_specs(
        cls,
        model: str | Spec | None = None,
        roles: Iterable[str | tuple[str, Spec]] = (),
        *,
        shared: dict[str, Backend] | None = None,
    ) -> Bindings:
        """`shared` maps spec text to instances reused across several bindings (a sweep's runs)."""
        instances: dict[str, Backend] = shared if shared is not None else {}

        def instance(spec: Spec) -> Backend:
            key = str(spec)
            if key not in instances:
                instances[key] = create_backend(spec)
            return instances[key]

        bound: dict[str, Backend] = {}
        if model is not None:
            backend = instance(Spec.parse(model) if isinstance(model, str) else model)
            for role in sorted(backend.fills()):
                bound[role] = backend
        for item in roles:
            role, spec = parse_role_binding(item) if isinstance(item, str) else item
            if role not in known_roles() and role not in DERIVED_ROLES:
                raise ConfigError(f"unknown role '{role}'; known roles: {', '.join((*known_roles(), *DERIVED_ROLES))}")
            backend = instance(spec)
            if DERIVED_ROLES.get(role, role) not in backend.fills():
                raise ConfigError(
                    f"backend '{spec}' cannot fill role '{role}'; it fills: {', '.join(sorted(backend.fills())) or 'nothing'}"
                )
            bound[role] = backend
        for role, backend in bound.items():
            interface = role_interface(DERIVED_ROLES.get(role, role))
            if interface is None or not isinstance(backend, interface):
                raise ConfigError(f"backend '{backend.spec}' claims role '{role}' but lacks its methods")
        return cls(bound)

    def __contains__(self, role: str) -> bool:
        return role in self.backends or DERIVED_ROLES.get(role) in self.backends

    def __getitem__(self, role: str) -> Backend:
        """The backend of `role`; a derived role left unbound (the critic) gets its source role's."""
        if role not in self.backends and role in DERIVED_ROLES:
            return self.backends[DERIVED_ROLES[role]]
        return self.backends[role]

    def roles(self) -> list[str]:
        return sorted(self.backends)

    def unique(self) -> list[Backend]:
        seen: dict[int, Backend] = {}
        for backend in self.backends.values():
            seen.setdefault(id(backend), backend)
        return list(seen.values())

    def specs(self) -> dict[str, str]:
        return {role: str(b.spec) for role, b in sorted(self.backends.items())}

    def identities(self) -> dict[str, dict[str, Any]]:
        return {role: b.identity_for(role) for role, b in sorted(self.backends.items())}

    def replaced(self, role: str, spec: Spec) -> Bindings:
        """A copy with one role rebound (used by rejudge)."""
        reuse = {str(b.spec): b for b in self.unique()}
        backend = reuse.get(str(spec)) or create_backend(spec)
        if role not in backend.fills():
            raise ConfigError(f"backend '{spec}' cannot fill role '{role}'")
        return Bindings({**self.backends, role: backend})
