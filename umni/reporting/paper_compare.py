"""A run beside the paper's own row for the model it is labelled as (`leaderboard --compare-paper`).

A run labelled as one of a paper's models (``umni run --label``, ``labels:`` in a sweep) is matched
to that model's rows in the protocol's stored paper numbers (`umni.protocols.paper`); per paper table
it gets a table of the paper's value, this run's and their difference for every column both have,
in umni's unit. A number far from the paper's usually comes from different settings, so each
table's note says which settings of the paper's run are known to differ from this run's (the judge
and other models the paper names, the options its numbers correspond to) and which the paper does
not state. Options that define the metric itself (WISE's Table 1 is WiScore, ``scoring=legacy``)
are not compared across: the table is left out with one line saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from umni.protocols.paper import PaperCell, PaperNumbers, PaperSettings, PaperTable, load_paper_numbers
from umni.protocols.protocol import get_protocol
from umni.reporting.intervals import flatten_scores, run_intervals
from umni.reporting.runset import Run, as_number
from umni.reporting.tables import Cell, Row, Table
from umni.store.runfolder import Summary
from umni.util.errors import ConfigError

COLUMNS = ["paper", "this run", "difference"]


@dataclass
class PaperComparison:
    """The comparison tables, and one line for each run that could not be compared (and why)."""

    tables: list[Table] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def paper_numbers_of(protocol_name: str) -> PaperNumbers | None:
    """The protocol's stored paper numbers (None: the protocol stores none, or is not installed)."""
    try:
        path = get_protocol(protocol_name).paper_numbers
    except ConfigError:
        return None
    return load_paper_numbers(path) if path is not None else None


def compare_with_papers(runs: Iterable[Run]) -> PaperComparison:
    """Every labelled run beside its paper rows. `runs` are labelled (`label_runs`)."""
    done = PaperComparison()
    loaded: dict[str, PaperNumbers | None] = {}
    for run in runs:
        protocol = run.summary.protocol
        if protocol not in loaded:
            loaded[protocol] = paper_numbers_of(protocol)
        numbers = loaded[protocol]
        if numbers is None:
            done.lines.append(f"{run.label}: protocol '{protocol}' stores no paper numbers to compare with")
            continue
        label = (run.summary.label or "").strip()
        if not label:
            done.lines.append(f"{run.label}: no label; label the run as one of the paper's models to compare it "
                              f"(umni run --label NAME; the paper's models: {', '.join(numbers.model_names())})")
            continue
        cells = numbers.cells_of(label)
        if not cells:
            done.lines.append(f"{run.label}: no model of the {protocol} paper is called '{label}'; "
                              f"the paper's models: {', '.join(numbers.model_names())}")
            continue
        by_table: dict[tuple[str, str], list[PaperCell]] = {}  # a label two rows answer to: a table each
        for cell in cells:
            by_table.setdefault((cell.table.id, cell.model.printed), []).append(cell)
        for table_cells in by_table.values():
            made = _table(run, numbers, table_cells)
            if isinstance(made, str):
                done.lines.append(made)
            else:
                done.tables.append(made)
    return done


def _table(run: Run, numbers: PaperNumbers, cells: list[PaperCell]) -> Table | str:
    paper_table = cells[0].table
    settings = numbers.table_settings(paper_table)
    where = f"{paper_table.id} ({paper_table.name})"
    model = cells[0].model.printed
    options = {**settings.options, **cells[0].options}
    defining = [d for d in _differing_options(run.summary, options) if d[0] in settings.defining]
    if defining:
        said = "; ".join(f"{name}: the paper's {_options_text(want)}, this run's {have}" for name, want, have in defining)
        return f"{run.label}: not compared with {where}: {said} (another metric)"
    flat = flatten_scores(run.summary.scores.root)
    intervals = run_intervals(run)
    # the rows are scores and the columns sources, as a runs-as-columns table: no coverage columns
    table = Table(f"{run.label} beside the paper: {where}, {model}", run.summary.protocol, ["score", "paper's column"], COLUMNS,
                  note=_note(run, paper_table, model, settings, options), run_columns=True)
    for cell in cells:
        ours = as_number(flat.get(cell.key))
        theirs = cell.umni_value
        if ours is None or theirs is None:
            continue
        decimals = paper_table.decimals
        table.rows.append(Row("", [cell.key, cell.metric], [
            Cell(theirs, decimals=decimals),
            Cell(ours, ci=intervals.get(cell.key), decimals=decimals),
            Cell(round(ours - theirs, 6), decimals=decimals),
        ], None, None))
    if not table.rows:
        return f"{run.label}: matches {model} of {where}, but no column has a value in both"
    return table


def _note(run: Run, paper_table: PaperTable, model: str, settings: PaperSettings, options: dict[str, Any]) -> str:
    """The table's note: the unit, then which settings of the paper's run differ from this run's."""
    parts = ["difference = this run − paper, in umni's unit" + ("" if paper_table.scale == 1 else f" (the paper's values × {paper_table.scale:g})")]
    differs = [f"{role}: the paper's {theirs}, this run's {ours or 'none bound'}"
               for role, theirs in settings.roles.items() if not same_model(theirs, ours := _role_model(run.summary, role))]
    differs += [f"{name}: the paper's {_options_text(want)}, this run's {have}" for name, want, have in _differing_options(run.summary, options)]
    bound = {role: run.summary.bindings.get(role) for role in settings.one_model}
    if len(set(bound.values())) > 1:
        differs.append(f"roles: the paper's model fills {_and(settings.one_model)} itself, this run binds "
                       + ", ".join(f"{role}={spec}" for role, spec in bound.items()))
    parts.append("settings that differ from the paper's run: " + ("; ".join(differs) if differs else "none known"))
    if settings.unstated:
        parts.append(f"the paper does not state its {_and(settings.unstated)}: " + _run_settings(run.summary))
    if model in paper_table.caveats:
        parts.append(f"{paper_table.id}: {paper_table.caveats[model]}")
    return "; ".join(parts)


def _differing_options(summary: Summary, options: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(option, the paper's value(s), this run's) for every option the paper's run had that this run has not."""
    out = []
    for name, want in options.items():
        have = summary.options.get(name)
        allowed = want if isinstance(want, list) else [want]
        if have not in allowed:
            out.append((name, want, have))
    return out


def _options_text(want: Any) -> str:
    return " or ".join(map(str, want)) if isinstance(want, list) else str(want)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _role_model(summary: Summary, role: str) -> str | None:
    """The model that filled `role`: as the run's provenance names it (the id its server reported,
    else the model asked for), else the backend's identity (provider/name), else the spec bound."""
    recorded = summary.provenance.roles.get(role) if summary.provenance is not None else None
    if recorded is not None and (recorded.reported_id or recorded.model):
        return recorded.reported_id or recorded.model
    identity = summary.backends.get(role) or {}
    if identity.get("name"):
        return f"{identity.get('provider')}/{identity['name']}" if identity.get("provider") else str(identity["name"])
    return summary.bindings.get(role)


#: What may follow a paper's model name in a model id and still name that model: a date or version
#: number, or a release tag (``gpt-4o-2024-08-06``, ``Qwen2.5-VL-72B-Instruct``, ``gemini-3-pro-preview``).
_RELEASE_TAG = re.compile(r"(\d[\d-]*|latest|preview|instruct|chat|hf)(-(\d[\d-]*|latest|preview|instruct|chat|hf))*")


def _canonical(name: str) -> str:
    return re.sub(r"[\s_.\-]+", "-", name.casefold()).strip("-")


def same_model(paper: str, run: str | None) -> bool:
    """Whether the run's model id names the paper's model: its last path part (a spec's query left
    out) is the paper's name, separators aside, maybe followed by a release tag; ``gpt-4o-mini`` is
    not GPT-4o."""
    if run is None:
        return False
    wanted, have = _canonical(paper), _canonical(run.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    if not wanted or not have.startswith(wanted):
        return False
    rest = have[len(wanted):]
    return rest == "" or (rest.startswith("-") and _RELEASE_TAG.fullmatch(rest[1:]) is not None)


def _run_settings(summary: Summary) -> str:
    """This run's sampling and seed settings per role, as its provenance records them; or that they
    are unknown."""
    if summary.provenance is None:
        return "this run's settings unknown (no provenance in its summary.json)"
    shown = []
    for role, recorded in sorted(summary.provenance.roles.items()):
        facts = [f"{k} {v}" for k, v in (recorded.sampling.model_dump() if recorded.sampling else {}).items() if v is not None]
        if recorded.seed_policy:
            facts.append(f"seed {recorded.seed_policy}")
        if facts:
            shown.append(f"{role} {', '.join(facts)}")
    return "this run's: " + ("; ".join(shown) if shown else "none recorded")
