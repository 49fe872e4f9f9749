"""The numbers a protocol's paper reports, kept as data beside the protocol (``paper.json``), so that
a run labelled as one of the paper's models can be set beside the paper's row
(`umni leaderboard --compare-paper`).

The file mirrors the printed tables: per table its number and short name, its columns as printed
with the umni score each one is (a flattened ``scores`` key: ``questions/Q1``, ``main_table/editing/STEM``),
and its rows as printed, each value as the paper prints it (None where it prints "-"). A table with
the models as columns (UmniBench's) is ``transposed``: its columns are the models, its rows the
metrics. ``scale`` converts the paper's unit to umni's (``umni = paper × scale``), so a comparison is
always in one unit. What the paper says of how its numbers were made (the judge, the options that
define the metric, facts it states) is ``settings``, compared with a run's own by the comparison;
what it does not say is listed as such, never guessed.

The values are facts transcribed from the paper; ``tests/leaderboard/test_paper_numbers.py`` checks
every one against the paper's text, so a typo fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from umni.util.errors import ConfigError

#: The settings a paper may or may not state; those it does not state are named as unknown.
STATED_KINDS = ("judge", "sampling", "seed", "resolution")


class PaperSettings(BaseModel):
    """How the paper's numbers were made, as far as it says."""

    model_config = ConfigDict(extra="forbid")

    #: role -> the model the paper names for it (``judge: Gemini-2.5-Pro``)
    roles: dict[str, str] = {}
    #: roles the paper's model filled itself (UmniBench's unified runs: it draws, edits and answers)
    one_model: list[str] = []
    #: protocol options the paper's numbers correspond to (a list: any of these values)
    options: dict[str, Any] = {}
    #: option names among `options` that define the metric itself: a run with another value is not
    #: compared at all (WISE's Table 1 is WiScore, ``scoring=legacy``)
    defining: list[str] = []
    #: other facts the paper states about its runs, each a short sentence
    stated: list[str] = []
    #: of `STATED_KINDS`, those the paper does not state
    unstated: list[str] = []


class Heading(BaseModel):
    """A column or row heading: as printed, the umni score it is (metrics), other names a run label
    may use (models)."""

    model_config = ConfigDict(extra="forbid")

    printed: str
    #: the flattened ``scores`` key of a metric heading; None for a model heading
    key: str | None = None
    aliases: list[str] = []


class PaperRow(Heading):
    #: as printed, in column order; None where the paper prints "-"
    values: list[float | None]
    #: options this row's run had beyond the table's (GENIUS's Interleaved column)
    options: dict[str, Any] = {}


class PaperTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the paper's table number as it prints it ("Table 2")
    id: str
    #: a short name for the table
    name: str
    #: the caption's first words, which find the table in the paper's text
    caption: str
    #: models as columns, metrics as rows (UmniBench)
    transposed: bool = False
    columns: list[Heading]
    rows: list[PaperRow]
    #: umni's value = the paper's × scale
    scale: float = 1.0
    #: decimals the paper prints its values with
    decimals: int = 2
    #: why rows hold fewer values than the printed line (the values kept are the line's first ones)
    truncated: str | None = None
    #: settings of this table's numbers where they differ from the paper's (an appendix's other judge)
    settings: PaperSettings | None = None
    #: how the table is laid out and what its rows are, for a reader of this file
    note: str = ""
    #: model (as printed) -> what a comparison with its values must say (a value the paper's own
    #: figures contradict)
    caveats: dict[str, str] = {}

    @model_validator(mode="after")
    def _shape(self) -> PaperTable:
        for row in self.rows:
            if len(row.values) > len(self.columns):
                raise ValueError(f"{self.id}: row {row.printed!r} has {len(row.values)} values for {len(self.columns)} columns")
            if len(row.values) < len(self.columns) and self.truncated is None:
                raise ValueError(f"{self.id}: row {row.printed!r} has {len(row.values)} values for {len(self.columns)} columns "
                                 "(say why in `truncated`)")
        metrics = self.rows if self.transposed else self.columns
        if any(m.key is None for m in metrics):
            raise ValueError(f"{self.id}: every metric heading needs the umni score key it is")
        return self

    def models(self) -> list[Heading]:
        return self.columns if self.transposed else list(self.rows)

    def cells(self) -> Iterator[PaperCell]:
        """Every printed value with its model and metric."""
        for row in self.rows:
            for column, value in zip(self.columns, row.values):
                model, metric = (column, row) if self.transposed else (row, column)
                assert metric.key is not None
                yield PaperCell(self, model, metric.printed, metric.key, value, row.options if not self.transposed else {})


@dataclass(frozen=True)
class PaperCell:
    table: PaperTable
    model: Heading
    metric: str
    key: str
    #: as printed (the paper's unit; `umni_value` in umni's)
    value: float | None
    options: dict[str, Any]

    @property
    def umni_value(self) -> float | None:
        return None if self.value is None else self.value * self.table.scale


class PaperNumbers(BaseModel):
    """A protocol's ``paper.json``."""

    model_config = ConfigDict(extra="forbid")

    protocol: str
    paper: str
    #: where the paper is (its arXiv id), where the paper's text says
    source: str | None = None
    settings: PaperSettings
    tables: list[PaperTable] = Field(min_length=1)

    def table_settings(self, table: PaperTable) -> PaperSettings:
        return table.settings or self.settings

    def model_names(self) -> list[str]:
        """The paper's model names as printed, each once, in table order."""
        names: list[str] = []
        for table in self.tables:
            names += [m.printed for m in table.models() if m.printed not in names]
        return names

    def cells_of(self, label: str) -> list[PaperCell]:
        """The paper's values for the model a run's label names: its printed name or an alias,
        case-insensitive; a label ``Group/name`` (`leaderboard --group`) matches by its name too."""
        wanted = {label.strip().casefold()}
        if "/" in label:
            wanted.add(label.split("/", 1)[1].strip().casefold())
        return [cell for table in self.tables for cell in table.cells()
                if {n.casefold() for n in [cell.model.printed, *cell.model.aliases]} & wanted]


def load_paper_numbers(path: Path) -> PaperNumbers:
    """A ``paper.json``; a broken one is a ConfigError naming the file and the field."""
    try:
        return PaperNumbers.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the paper's numbers ({exc.strerror})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
