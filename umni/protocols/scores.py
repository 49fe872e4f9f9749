"""A protocol's scores as a typed model: what `Protocol.summarize` returns, and the ``scores`` object
of summary.json.

A protocol declares its own subclass of `Scores`, fields in the order summary.json lists them, so a
reader of the code (and mypy) knows what a run's table holds, and the run layer writes it with one
call (`scores_json`). Two rules keep the file byte for byte what the scoring computed:

- numbers are `Number` (``int | float``), never a bare ``float``: pydantic would turn a count or a
  rounded whole score (``round(0, 4)`` is the int 0) into ``0.0`` and change the JSON;
- a section that only some option settings produce (GENIUS's reflection table, WISE's legacy marks)
  is listed in `optional_sections`: left as None it is omitted from the JSON, where other None
  values (a score with nothing scored) are written as ``null``, as before.

A plugin protocol may still return a plain dict from `summarize`; `scores_json` writes it as it is.
Code that reads a summarize result as a dict (``scores["overall"]``, ``scores.get("overall")``)
keeps working on a model: both read its JSON form, so they answer what summary.json would hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from umni.util.jsonmodel import JsonModel, Number  # noqa: F401 - Number: the scores' number type, importable here too


class Scores(JsonModel):
    """Base of a protocol's scores model (summary.json ``scores``); see the module docstring.
    `optional_sections` lists the sections that depend on an option (`JsonModel`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Reading as summary.json would: for code written when summarize returned a dict.
    def __getitem__(self, key: str) -> Any:
        return self.model_dump(mode="json")[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.model_dump(mode="json").get(key, default)


def scores_json(scores: Scores | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object summary.json holds under ``scores``: a `Scores` model dumped in field order,
    or (the compatibility path for plugins written before typed scores) a plain mapping, copied."""
    if isinstance(scores, Scores):
        return scores.model_dump(mode="json")
    if isinstance(scores, BaseModel):  # a plugin's own model, not derived from Scores
        return scores.model_dump(mode="json")
    if isinstance(scores, Mapping):
        return dict(scores)
    raise TypeError(f"summarize returned {type(scores).__name__}; it must return a Scores model or a dict")
