"""Pydantic models of JSON files umni writes, whose optional sections are absent rather than null.

A file such as summary.json has sections that only some runs produce (a fleet's ``servers``, a
re-judged run's ``lineage``): a reader of the JSON finds them missing, not ``null``. A model lists
those fields in `optional_sections`; left as None they are omitted, while any other None is written
as ``null`` (a score with nothing scored). Field order is the order of the JSON object.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeAlias

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

#: A score, count or cost as it was computed: an int stays an int in the JSON, a float a float
#: (a bare ``float`` field would turn a count, or ``round(0, 4)``, into ``0.0`` and change the file).
Number: TypeAlias = int | float


class JsonModel(BaseModel):
    """Base of such a model; see the module docstring."""

    #: Fields left out of the JSON while they are None (sections only some files have).
    optional_sections: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_absent_sections(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.optional_sections:
            if data.get(name, 0) is None:
                del data[name]
        return data
