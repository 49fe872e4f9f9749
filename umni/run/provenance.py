"""How a run's numbers were made (summary.json's and tables.json's ``provenance``, `umni methods`).

Each fact comes from the part that knows it: a role's model, revision, dtype, device, seed policy
and HTTP shape from its backend (`Backend.provenance`); the judge's template hash, the official
template it follows and the request settings its nodes ask for from the protocol
(`Protocol.templates`), with the protocol's scoring version and the deviations in effect; umni's
version and commit from the code running. A sampling setting the backend's spec sets wins over the
protocol's (the backend sends its own), as it does in the requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from umni.backends.bindings import Bindings
from umni.protocols.protocol import Protocol, RoleTemplate
from umni.store.runfolder import Provenance, RoleProvenance, Sampling
from umni.util.version import __version__, source_commit


def run_provenance(
    protocol: Protocol[Any, Any, Any, Any],
    options: BaseModel,
    bindings: Bindings,
    scores: Mapping[str, Any],
    *,
    seed: int | None = None,
    called: Iterable[str] = (),
) -> Provenance:
    """The provenance of a run of `protocol` with `options`, `bindings` and `seed` that scored
    `scores`. Its roles are the bound ones the protocol uses: its own, those it has templates for,
    and any the run `called` (a plan or critic role an option brings in); a role a single
    ``--model`` binds but the protocol never asks is left out."""
    templates = protocol.templates(options)
    used = set(protocol.roles) | set(templates) | set(called)
    return Provenance(
        umni_version=__version__,
        umni_commit=source_commit(),
        protocol=protocol.name,
        scoring_version=protocol.scoring_version,
        seed=seed,
        deviations=protocol.deviations_in_effect(scores, options),
        roles={
            role: role_provenance(bindings[role].provenance(role), templates.get(role), bindings[role].request_settings(role))
            for role in bindings.roles()
            if role in used
        },
    )


def role_provenance(backend: RoleProvenance, template: RoleTemplate | None, applied: frozenset[str]) -> RoleProvenance:
    """What the backend says of a role, with the protocol's template and the request settings the
    backend `applied` added."""
    if template is None:
        return backend
    asked = Sampling(
        temperature=template.temperature if "temperature" in applied else None,
        max_tokens=template.max_tokens if "max_tokens" in applied else None,
    )
    return backend.model_copy(
        update={
            "sampling": _fill(backend.sampling, asked),
            "template_hash": template.digest(),
            "template_follows": template.follows,
        }
    )


def _fill(own: Sampling | None, asked: Sampling) -> Sampling | None:
    """The backend's settings, each unset one taken from the protocol's request."""
    if own is None:
        return asked if asked.model_dump(exclude_none=True) else None
    gaps = {name: value for name, value in asked.model_dump().items() if value is not None and getattr(own, name) is None}
    return own.model_copy(update=gaps)
