"""How a run's numbers were made, in words: `umni methods`' appendix paragraph and settings table,
the leaderboard's "how made" footnote per run, and the viewer's provenance section.

Everything here reads summary.json's ``provenance`` (`umni.store.runfolder.Provenance`, written when
the run finished): which model and revision filled each role, with which dtype, device, sampling
settings, seed policy and HTTP shape; the judge template's hash and the official template it
follows; umni's version and commit, the protocol's scoring version and the deviations in effect.
A run made before umni recorded it is named as such, never guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from umni.reporting.runset import Run, find_runs, label_runs
from umni.reporting.tables import markdown_escape, tex_escape
from umni.store.runfolder import Provenance, RoleProvenance, Sampling

#: How many hex digits of a template hash or commit the texts show (the full ones are in summary.json).
SHORT = 12
#: A setting the run did not record, or that does not apply to the role.
UNKNOWN = "-"
FORMATS = ("markdown", "latex")
SETTINGS_HEADER = ["run", "protocol", "role", "model", "revision", "dtype", "device", "temperature", "max tokens", "steps",
                   "guidance", "request", "judge template"]


@dataclass(frozen=True)
class Methods:
    """`umni methods`' output: a paragraph and a settings table (one row per run and role)."""

    paragraph: str
    header: list[str]
    rows: list[list[str]]

    def render(self, fmt: str = "markdown") -> str:
        if fmt == "latex":
            return self.latex()
        if fmt == "markdown":
            return self.markdown()
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")

    def markdown(self) -> str:
        lines = [markdown_escape(self.paragraph), "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(markdown_escape(cell) for cell in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        spec = "l" * len(self.header)
        lines = [tex_escape(self.paragraph), "", "\\begin{tabular}{" + spec + "}", "\\toprule",
                 " & ".join(tex_escape(h) for h in self.header) + " \\\\", "\\midrule"]
        lines += [" & ".join("--" if cell == UNKNOWN else tex_escape(cell) for cell in row) + " \\\\" for row in self.rows]
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines) + "\n"


def methods_of(paths: Iterable[Path]) -> Methods:
    """The methods of the runs in `paths` (run folders, or folders of runs such as a sweep)."""
    return methods(label_runs(find_runs(paths)))


def methods(runs: Sequence[Run]) -> Methods:
    """The paragraph and settings table of labelled `runs`."""
    rows: list[list[str]] = []
    for run in runs:
        provenance = run.summary.provenance
        if provenance is None:
            rows.append([run.label, run.summary.protocol, UNKNOWN, "not recorded (made before umni recorded provenance)",
                         *[UNKNOWN] * (len(SETTINGS_HEADER) - 4)])
            continue
        for role, made in provenance.roles.items():
            rows.append([run.label, run.summary.protocol, role, model_text(made), made.revision or UNKNOWN, made.dtype or UNKNOWN,
                         made.device or UNKNOWN, *sampling_cells(made.sampling), made.http_shape or UNKNOWN,
                         (made.template_hash or "")[:SHORT] or UNKNOWN])
    return Methods(paragraph(runs), list(SETTINGS_HEADER), rows)


def paragraph(runs: Sequence[Run]) -> str:
    """One paragraph: umni's version, then per protocol its scoring version, seeds, the roles'
    models (of a lone run; the table lists every run's), the judge templates and the deviations."""
    recorded = [run for run in runs if run.summary.provenance is not None]
    sentences: list[str] = []
    versions = sorted({_umni_text(run.summary.provenance) for run in recorded if run.summary.provenance})
    if versions:
        sentences.append(f"All numbers were computed with {_and(versions)}.")
    by_protocol: dict[str, list[Run]] = {}
    for run in recorded:
        by_protocol.setdefault(run.summary.protocol, []).append(run)
    for protocol, members in by_protocol.items():
        sentences += _protocol_sentences(protocol, members)
    missing = len(runs) - len(recorded)
    if missing:
        sentences.append(f"{missing} run(s) were made by an umni that did not record how; their settings are unknown here.")
    if len(runs) > 1 and recorded:
        sentences.append("The table lists each run's models, revisions and settings per role.")
    return " ".join(sentences) or "No run found."


def _protocol_sentences(protocol: str, runs: list[Run]) -> list[str]:
    made = [run.summary.provenance for run in runs if run.summary.provenance is not None]
    title = runs[0].summary.title or protocol
    scoring = sorted({p.scoring_version for p in made if p.scoring_version})
    seeds = sorted({p.seed for p in made if p.seed is not None})
    said = f"{title} ({protocol}): {len(runs)} runs" if len(runs) > 1 else f"{title} ({protocol})"
    facts = []
    if scoring:
        facts.append(f"scoring version {', '.join(scoring)}")
    if seeds:
        facts.append(f"seed {', '.join(map(str, seeds))}")
    sentences = [said + (f", {', '.join(facts)}" if facts else "") + "."]
    if len(made) == 1:  # roles one backend fills alike are named together
        alike: dict[str, list[str]] = {}
        for role, role_made in made[0].roles.items():
            alike.setdefault(role_text(role_made), []).append(role)
        sentences += [f"The {_and(roles)} role{'s' if len(roles) > 1 else ''}: {text}." for text, roles in alike.items()]
    templates: dict[str, str] = {}
    for p in made:
        for role, role_made in p.roles.items():
            if role_made.template_hash:
                what = f"the {role} prompt template sha256 {role_made.template_hash[:SHORT]}"
                templates[what] = f"{what}, which follows {role_made.template_follows}" if role_made.template_follows else what
    if templates:
        sentences.append(f"Judging used {_and(list(templates.values()))}.")
    deviations = list(dict.fromkeys(d for p in made for d in p.deviations))
    if deviations:
        sentences.append("Scores follow the official code except for these deviations, listed with their effect in "
                         f"summary.json: {', '.join(deviations)}.")
    elif made:
        sentences.append("umni lists no deviation from the official scoring for it.")
    return sentences


def role_text(made: RoleProvenance) -> str:
    """A role's model and settings in one clause."""
    parts = [model_text(made)]
    if made.backend:
        parts[0] += f" ({made.backend} backend)"
    if made.revision:
        parts.append(f"revision {made.revision}")
    where = " on ".join(x for x in (made.dtype, made.device) if x)
    if where:
        parts.append(where)
    settings = sampling_text(made.sampling)
    if settings:
        parts.append(settings)
    if made.http_shape:
        parts.append(f"asked through {made.http_shape}")
    if made.seed_policy:
        parts.append(f"seeds: {made.seed_policy}")
    return ", ".join(parts)


def model_text(made: RoleProvenance) -> str:
    """The model asked for, and the id its server reported where that differs."""
    model = made.model or UNKNOWN
    if made.reported_id and made.reported_id != made.model:
        return f"{model} (server reported {made.reported_id})"
    return model


_SAMPLING: list[tuple[str, Callable[[object], str]]] = [
    ("temperature", lambda v: f"temperature {v:g}" if isinstance(v, (int, float)) else ""),
    ("max_tokens", lambda v: f"at most {v} tokens"),
    ("steps", lambda v: f"{v} steps"),
    ("guidance", lambda v: f"guidance {v:g}" if isinstance(v, (int, float)) else ""),
]


def sampling_text(sampling: Sampling | None) -> str:
    if sampling is None:
        return ""
    return ", ".join(say(getattr(sampling, name)) for name, say in _SAMPLING if getattr(sampling, name) is not None)


def sampling_cells(sampling: Sampling | None) -> list[str]:
    values = [None if sampling is None else getattr(sampling, name) for name, _ in _SAMPLING]
    return [UNKNOWN if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in values]


def how_made(label: str, provenance: Provenance | None) -> str:
    """The leaderboard's footnote on one run: its models and revisions, the judge template's hash,
    the deviations in effect and umni's version."""
    if provenance is None:
        return f"how made, {label}: not recorded (made before umni recorded provenance)"
    roles = []
    for role, made in provenance.roles.items():
        text = f"{role} {model_text(made)}"
        if made.revision:
            text += f" rev {made.revision[:SHORT]}"
        if made.template_hash:
            text += f", template {made.template_hash[:SHORT]}"
        roles.append(text)
    said = f"how made, {label}: {'; '.join(roles)}; {_umni_text(provenance)}"
    if provenance.scoring_version:
        said += f", scoring v{provenance.scoring_version}"
    if provenance.deviations:
        said += f"; deviations: {', '.join(provenance.deviations)}"
    return said


def provenance_lines(provenance: Provenance | None) -> list[str]:
    """A run's provenance as lines (the viewer's section on the run): umni and the protocol's
    scoring version and seed, each role, each template, the deviations."""
    if provenance is None:
        return ["not recorded (made before umni recorded provenance)"]
    head = f"{_umni_text(provenance)}; {provenance.protocol}"
    if provenance.scoring_version:
        head += f" scoring version {provenance.scoring_version}"
    if provenance.seed is not None:
        head += f"; seed {provenance.seed}"
    lines = [head]
    for role, made in provenance.roles.items():
        lines.append(f"{role}: {role_text(made)}")
        if made.template_hash:
            follows = f", follows {made.template_follows}" if made.template_follows else ""
            lines.append(f"{role} template: sha256 {made.template_hash}{follows}")
    lines.append(f"deviations in effect: {', '.join(provenance.deviations)}" if provenance.deviations else "deviations in effect: none listed")
    return lines


def _umni_text(provenance: Provenance | None) -> str:
    if provenance is None:
        return "an unknown umni"
    commit = f" (commit {provenance.umni_commit[:SHORT]})" if provenance.umni_commit else ""
    return f"umni {provenance.umni_version}{commit}"


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
