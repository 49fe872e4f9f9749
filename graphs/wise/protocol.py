"""The WISE graph: draw each prompt, then have a judge grade the image against the prompt's note.

Per prompt (node ids in quotes): "image" (generate, from the ``Prompt`` text alone — the model must
supply the knowledge the ``Explanation`` spells out, so it never sees it) -> "judge" (the image, the
prompt and the explanation, graded with the rubric of the chosen scoring).

Options pick the rubric and the prompt set apart, because the official code pairs them but the
scoring functions do not need to: ``scoring=legacy`` is the paper's three 0-2 marks folded into
WiScore, ``scoring=verified`` the current binary judgement; ``set`` (default: the scoring's own set)
picks the prompts and so the id ranges and category weights. ``rewrite`` swaps in the legacy set's
explicit rewrites for the paper's ablation; as in the official code, the rewritten record (its
prompt and the unchanged explanation) is what both the generator and the judge see.

The judge is asked as the official scripts ask it: the rubric text first, then the image; a system
message; temperature 0; the verified script's ``chat_template_kwargs`` turning thinking off
(``judge_thinking``); its reply-length limit. The wording is umni's own unless ``judge_prompt`` names
a template file. Replies are read by the official rules (`prompts`), and each record keeps the
official script's reading of the kept reply, so the summary can put the official figure
(``official_equivalent``) beside umni's and list the deviations (`deviations`).

Failures stay out of the means: a missing image and a judge reply that is still unusable after the
engine's bounded retries are counted per category by kind, and prompts the case set lacks are
listed by id in the summary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from umni.plugin import (
    GENERATE,
    JUDGE,
    CaseSet,
    Graph,
    HeadlineParts,
    InputError,
    Note,
    Outcome,
    Protocol,
    Ref,
    View,
    node_status,
)

from . import prompts as P
from . import scoring as S
from .cases import (
    CATEGORIES,
    OFFICIAL_CATEGORY,
    REWRITE_SUFFIX,
    Variant,
    WisePrompt,
    category_of,
    expected_ids,
    load_prompts,
    load_set,
    missing_ids,
    refuse_other_set_file,
    refuse_other_set_labels,
    set_folder,
)
from .deviations import deviations
from .scores import OfficialEquivalent, WiseScores

IMAGE_NODE = "image"
JUDGE_NODE = "judge"

#: Column titles of the paper's main table.
CATEGORY_TITLES = {
    "culture": "Cultural",
    "time": "Time",
    "space": "Space",
    "biology": "Biology",
    "physics": "Physics",
    "chemistry": "Chemistry",
}

#: The legacy judge's marks (record keys) and how the paper names them.
MARKS = {"consistency": "Consistency", "realism": "Realism", "aesthetic_quality": "Aesthetic Quality"}

#: Reply-length limits of the official judge requests (verified ``vllm_eval.py``: 500 tokens; legacy
#: ``gpt_eval.py``: 2000); part of the judge's cache key.
JUDGE_MAX_TOKENS = {"verified": 500, "legacy": 2000}
#: The official requests sample greedily.
JUDGE_TEMPERATURE = 0.0
#: What the verified script sends to turn a reasoning judge's thinking off (vLLM/SGLang chat templates).
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False}}


class WiseOptions(BaseModel):
    """WISE variants (``--option key=value``)."""

    model_config = ConfigDict(extra="forbid")

    scoring: Variant = Field("verified", description="legacy: 0-2 marks and WiScore; verified: binary Score")
    set: Variant | None = Field(None, description="prompt set (ids, categories, weights); default: the scoring's own")
    rewrite: bool = Field(False, description="legacy set only: generate from the *_rewrite.json explicit prompts")
    judge_thinking: Literal["off", "server"] | None = Field(
        None,
        description="off: turn the judge's thinking off through chat_template_kwargs (as the verified script does; "
        "vLLM/SGLang); server: send nothing (hosted APIs that refuse the field); default: off for verified "
        "scoring, server for legacy (whose script called a hosted API)",
    )

    judge_prompt: Path | None = Field(
        None,
        description="a YAML file with 'user' (holding {prompt} and {explanation}) and optional 'system': ask the "
        "judge with this text (the authors' own protocol, say) instead of umni's wording",
    )

    @model_validator(mode="after")
    def _resolve_set(self) -> WiseOptions:
        """Fill in the set so run.json, summaries and leaderboards name it explicitly."""
        if self.set is None:
            self.set = self.scoring
        if self.judge_thinking is None:
            self.judge_thinking = "off" if self.scoring == "verified" else "server"
        if self.rewrite and self.set != "legacy":
            raise ValueError(
                "rewrite=true uses the legacy set's *_rewrite.json prompts; add set=legacy (or scoring=legacy)"
            )
        return self

    @property
    def prompt_set(self) -> Variant:
        assert self.set is not None
        return self.set


@dataclass(frozen=True)
class WiseHandles:
    """The nodes of one prompt's graph, as `record` reads them."""

    image: Ref
    judge: Ref


@dataclass(frozen=True)
class WiseCase:
    """One prompt of the chosen set, with the category its id falls in and the file it came from."""

    prompt: WisePrompt
    set: Variant
    category: str
    file: str
    rewrite: bool = False

    @property
    def id(self) -> str:
        return str(self.prompt.prompt_id)


# --------------------------------------------------------------------------------------------------
# Judge reply parsers (module level: their names enter the judge's cache key). They return plain
# dicts so the cache can keep them, and raise ParseFailure / InvalidAnswer on unusable replies.


def parse_legacy_marks(text: str) -> dict[str, int]:
    marks = P.parse_legacy_answer(text)
    return {"consistency": marks.consistency, "realism": marks.realism, "aesthetic_quality": marks.aesthetic_quality}


def parse_verified_score(text: str) -> dict[str, int]:
    return {"score": P.parse_verified_answer(text)}


# --------------------------------------------------------------------------------------------------


class Wise(Protocol[WiseCase, WiseOptions, dict[str, Any], WiseScores]):
    name = "wise"
    title = "WISE world-knowledge text-to-image"
    roles = (GENERATE, JUDGE)
    Options = WiseOptions

    def case_schema(self) -> dict[str, Any]:
        """A WISE file is a JSON list of prompt records."""
        return TypeAdapter(list[WisePrompt]).json_schema()

    def judgements(self, record: dict[str, Any]) -> dict[str, float | None]:
        """The judge's marks of a prompt (verified: score; legacy: consistency, realism, aesthetic quality)."""
        marks = record.get("marks") or {}
        return {name: float(value) for name, value in marks.items() if isinstance(value, (int, float))}

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("wise")

    # ------------------------------------------------------------------ loading
    def load(self, path: Path, options: WiseOptions) -> CaseSet[WiseCase]:
        """Read a single WISE JSON file, a set folder (official file names), a folder holding
        ``legacy/`` and ``verified/`` set folders, or the published repository as cloned
        (``data_verified/``, ``WISE_legacy/data/``). Files of the other set are refused, named or
        recognised by their labels: their id ranges differ, so they are never scored with these."""
        if options.judge_prompt is not None:
            if not options.judge_prompt.is_file():
                raise InputError("the judge template file (judge_prompt) does not exist", path=options.judge_prompt)
            _judge_template(options.judge_prompt)  # a bad template fails here, before any work
        variant = options.prompt_set
        path = Path(path)
        if path.is_file():
            if options.rewrite and not path.name.endswith(REWRITE_SUFFIX):
                raise InputError(
                    f"rewrite=true reads the explicit rewrite prompts (*{REWRITE_SUFFIX}); pass one of those files "
                    "or the legacy set folder",
                    path=path,
                )
            refuse_other_set_file(path, variant)
            prompts = sorted(load_prompts(path), key=lambda p: p.prompt_id)
            refuse_other_set_labels(prompts, variant, path)
            files = [path]
            sources: dict[int, Path] = {}
            missing = missing_ids((p.prompt_id for p in prompts), expected_ids(variant))
            where = path
        else:
            where = set_folder(path, variant)
            loaded = load_set(where, variant, rewrite=options.rewrite)
            prompts, files, missing, sources = loaded.prompts, loaded.files, loaded.missing, loaded.sources
        if not prompts:
            raise InputError(f"no WISE prompts in {'this file' if path.is_file() else 'these files'}", path=where)
        cases = [
            WiseCase(
                p, variant, category_of(p.prompt_id, variant), sources.get(p.prompt_id, files[0]).name, options.rewrite
            )
            for p in prompts
        ]
        notes = [
            Note(
                f"prompt_id {c.prompt.prompt_id}",
                "Category",
                f"labelled {c.prompt.Category!r}, but its id places it in {c.category} "
                f"({OFFICIAL_CATEGORY[c.category]!r}); the id decides, as in the official scoring",
            )
            for c in cases
            if c.prompt.Category != OFFICIAL_CATEGORY[c.category]
        ]
        if missing:
            notes.append(
                Note(
                    "(whole set)",
                    "prompt_id",
                    f"{len(missing)} of the {len(expected_ids(variant))} {variant} prompt ids are not in these files; "
                    "the summary lists them and scores only the prompts present",
                )
            )
        return CaseSet(path=where, cases=cases, notes=notes)

    def case_id(self, case: WiseCase) -> str:
        return case.id

    # ------------------------------------------------------------------ graph
    def build(self, case: WiseCase, options: WiseOptions) -> Graph[WiseHandles]:
        g: Graph[WiseHandles] = Graph(case.id)
        image = g.generate(IMAGE_NODE, [case.prompt.Prompt])
        rubric: Callable[[str, str], str]
        system: str | None
        if options.scoring == "legacy":
            rubric, parse, system = P.legacy_judge_prompt, parse_legacy_marks, P.LEGACY_SYSTEM
        else:
            rubric, parse, system = P.verified_judge_prompt, parse_verified_score, P.VERIFIED_SYSTEM
        if options.judge_prompt is not None:
            template = _judge_template(options.judge_prompt)
            rubric, system = template.render, template.system
        request: dict[str, Any] = {"temperature": JUDGE_TEMPERATURE}
        if system:
            request["system"] = system
        if options.judge_thinking == "off":
            request["extra_body"] = THINKING_OFF
        judge = g.judge(
            JUDGE_NODE,
            [rubric(case.prompt.Prompt, case.prompt.Explanation), image],  # text, then the image, as official
            parse,
            max_tokens=JUDGE_MAX_TOKENS[options.scoring],
            **request,
        )
        return g.with_handles(WiseHandles(image=image, judge=judge))

    # ------------------------------------------------------------------ records
    def record(self, case: WiseCase, outcomes: Mapping[str, Outcome], options: WiseOptions) -> dict[str, Any]:
        handles: WiseHandles = self.handles(case, outcomes, options)
        image = outcomes.get(handles.image.node)
        judge = outcomes.get(handles.judge.node)
        marks: dict[str, int] | None = judge.value if judge is not None and judge.ok else None
        failure, detail = _failure(image, judge)
        score: float | int | None = None
        if marks is not None:
            score = S.wiscore(**marks) if options.scoring == "legacy" else marks["score"]
        reply = None
        if judge is not None and judge.ok and judge.output:
            reply = judge.output.get("text")
        elif judge is not None and judge.failure is not None:
            reply = judge.failure.raw
        return {
            "case_id": case.id,
            "prompt_id": case.prompt.prompt_id,
            "set": case.set,
            "rewrite": case.rewrite,
            "file": case.file,
            "category": case.category,
            "category_label": case.prompt.Category,
            "subcategory": case.prompt.Subcategory,
            "prompt": case.prompt.Prompt,
            "explanation": case.prompt.Explanation,
            "image_name": case.prompt.image_name,
            "image": image.image.sha256 if image is not None and image.image else None,
            "scoring": options.scoring,
            "marks": marks,
            "score": score,
            "failure": failure,
            "detail": detail,
            "judge_reply": reply,
            "official": _official_reading(options.scoring, image, reply),
            "judge_attempts": _attempts(judge),
            "nodes": node_status(outcomes),
        }

    # ------------------------------------------------------------------ summary
    def summarize(
        self, records: list[dict[str, Any]], options: WiseOptions, *, judge: str | None = None
    ) -> WiseScores:
        """The paper's main table (six categories and Overall, 0-1), failures and missing ids beside.

        `judge` is the judge role's spec; it is echoed as ``scores.judge`` so tables that compare
        runs show which judge (and version) produced each number.
        """
        variant = options.prompt_set
        if options.scoring == "legacy":
            judged = [_legacy_judgement(r) for r in records]
            summary = S.summarize_legacy(judged, variant=variant)
        else:
            summary = S.summarize_verified([_verified_judgement(r) for r in records], variant=variant)
        expected = len(expected_ids(variant))
        missing = summary.missing_ids
        cats = summary.categories
        overall_score = _round(summary.overall)
        official = S.summarize_official(
            [(r["prompt_id"], r.get("official")) for r in records], variant=variant, metric=summary.metric
        )
        means = {name: _round(official.means[name]) for name in CATEGORIES}
        official_scores = OfficialEquivalent(
            overall=_round(official.overall),
            culture=means["culture"],
            time=means["time"],
            space=means["space"],
            biology=means["biology"],
            physics=means["physics"],
            chemistry=means["chemistry"],
            scored=official.scored,
            # the official Calculate script prints an Overall only when all 1000 prompt ids have a score
            official_script_gives_overall=official.scored == expected,
            note="every kept judge reply re-read by the official rules and averaged by the official "
            "arithmetic; prompts the official script would drop (no image, unreadable reply) are left out",
        )
        # legacy: one flat table per mark (categories as columns), as in the paper's appendix
        legacy = options.scoring == "legacy"
        marks = {mark: {name: _round(cats[name].components.get(mark)) for name in CATEGORIES} for mark in MARKS}
        means = {name: _round(cats[name].mean) for name in CATEGORIES}
        return WiseScores(
            set=variant,
            scoring=options.scoring,
            rewrite=options.rewrite,
            judge=judge,
            metric=summary.metric,
            scale=_SCALE[summary.metric],
            overall=overall_score,
            culture=means["culture"],
            time=means["time"],
            space=means["space"],
            biology=means["biology"],
            physics=means["physics"],
            chemistry=means["chemistry"],
            scored=sum(c.scored for c in cats.values()),
            failed=sum(c.failed for c in cats.values()),
            missing=len(missing),
            expected=expected,
            scored_by_category={name: cats[name].scored for name in CATEGORIES},
            failed_by_category={name: cats[name].failed for name in CATEGORIES},
            failures=dict(sorted(summary.failures.items())),
            failures_by_category={
                f"{name}/{kind}": count for name in CATEGORIES for kind, count in sorted(cats[name].failures.items())
            },
            weights=summary.weights,
            missing_ids=missing,
            coverage=_coverage_statement(len(records), expected, missing, variant, summary.overall),
            official_equivalent=official_scores,
            deviations=deviations(records, overall_score, official_scores.overall, judge_prompt=options.judge_prompt),
            consistency=marks["consistency"] if legacy else None,
            realism=marks["realism"] if legacy else None,
            aesthetic_quality=marks["aesthetic_quality"] if legacy else None,
        )

    def stratum(self, record: dict[str, Any], options: WiseOptions) -> str:
        """The prompt's category: the Overall weights all six, so each resample keeps each one."""
        return category_of(record["prompt_id"], options.prompt_set)

    def headline_parts(self, records: Sequence[dict[str, Any]], options: WiseOptions) -> HeadlineParts:
        """Overall = Σ weight · category mean: a scored prompt adds its score (WiScore, or the
        binary mark) and a count of one to its category; a failed one adds neither."""
        cases = []
        for record in records:
            scored = record.get("failure") is None and record.get("marks") is not None
            cases.append({self.stratum(record, options): (float(record["score"]), 1.0) if scored else (0.0, 0.0)})
        return HeadlineParts(dict(S.OVERALL_WEIGHTS[options.prompt_set]), cases)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        s = summary["scores"]
        label = "WiScore" if s["metric"] == "wiscore" else "Accuracy"
        header = ["", *(CATEGORY_TITLES[c] for c in CATEGORIES), "Overall"]
        main = [
            [label, *(s[c] for c in CATEGORIES), s["overall"]],
            ["Scored", *(s["scored_by_category"][c] for c in CATEGORIES), s["scored"]],
            ["Failed (not scored)", *(s["failed_by_category"][c] for c in CATEGORIES), s["failed"]],
        ]
        setting = f"{s['set']} prompts{' (rewrite)' if s['rewrite'] else ''}, {s['scoring']} scoring"
        if s.get("judge"):
            setting += f", judge {s['judge']}"
        tables = [(f"WISE {label} by category ({setting})", header, main)]
        if s["failures"]:
            kinds = sorted(s["failures"])
            rows = [
                [kind, *(s["failures_by_category"].get(f"{c}/{kind}", 0) for c in CATEGORIES), s["failures"][kind]]
                for kind in kinds
            ]
            tables.append(("Failures by kind (counted apart from scores)", ["Kind", *header[1:-1], "Total"], rows))
        if s["metric"] == "wiscore":
            rows = [[MARKS[key], *(s[key][c] for c in CATEGORIES)] for key in MARKS]
            tables.append(("Mean marks (0-2) by category", ["Mark", *header[1:-1]], rows))
        shown = ", ".join(map(str, s["missing_ids"][:20])) + (" …" if s["missing"] > 20 else "")
        tables.append(
            (
                "Coverage",
                ["", "Value"],
                [
                    ["Expected prompts", s["expected"]],
                    ["With a result", s["expected"] - s["missing"]],
                    ["Missing prompt ids", f"{s['missing']}: {shown}" if s["missing"] else "none"],
                    ["Statement", s["coverage"]],
                ],
            )
        )
        return tables

    def views(self, record: dict[str, Any]) -> list[View]:
        rows = [
            ("prompt (given to the model)", record["prompt"]),
            ("explanation (judge only)", record["explanation"]),
            ("category", f"{record['category']} · {record['subcategory']} (file label: {record['category_label']})"),
            ("source", f"{record['file']} · {record['set']} set" + (" · rewrite" if record["rewrite"] else "")),
        ]
        if record["image"] is None:
            rows.append(("image", "— (not produced)"))
        views = [View(f"Prompt {record['prompt_id']} · {record['image_name']}", record["image"], rows)]
        judge_rows: list[tuple[str, str]] = []
        if record["marks"] is not None:
            judge_rows += [(key.replace("_", " "), str(value)) for key, value in record["marks"].items()]
        if record["score"] is not None and record["scoring"] == "legacy":
            judge_rows.append(("WiScore", f"{record['score']:.2f}"))
        if record["failure"] is not None:
            judge_rows.append((f"failure ({record['failure']})", record["detail"]))
        judge_rows.append(("judge reply", record["judge_reply"] if record["judge_reply"] is not None else "—"))
        official = record.get("official")
        if record["judge_reply"] is not None and official != record["marks"]:
            read = ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in official.items()) if official else "unreadable"
            judge_rows.append(("official script's reading", f"{read} (a listed deviation)"))
        if record["judge_attempts"]:
            judge_rows.append(("judge attempts", str(record["judge_attempts"])))
        if record["failure"] is not None:
            title, verdict = f"Judge · {record['failure']} failure", None
        elif record["scoring"] == "legacy":
            title, verdict = f"Judge · WiScore {record['score']:.2f}", None
        else:
            title, verdict = f"Judge · Score {record['score']}", record["score"] == 1
        views.append(View(title, None, judge_rows, verdict=verdict))
        return views


# --------------------------------------------------------------------------------------------------

_SCALE = {
    "wiscore": "0-1: mean WiScore = (0.7·C + 0.2·R + 0.1·A)/2 over scored prompts; Overall weights the six categories",
    "accuracy": "0-1: share of scored prompts judged correct (Score 1); Overall weights the six categories",
}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _failure(image: Outcome | None, judge: Outcome | None) -> tuple[str | None, str]:
    """Why a prompt has no score, as a short kind (counted) and a readable detail."""
    if image is None or not image.ok:
        if image is not None and image.failure is not None:
            return S.MISSING_IMAGE, f"the image was not produced ({image.failure.kind}): {image.failure.message}"
        return S.MISSING_IMAGE, f"the image was not produced ({image.status if image else 'no node'})"
    if judge is None:
        return "internal", "the case has no judge node"
    if judge.ok:
        return None, ""
    if judge.failure is not None:
        f = judge.failure
        return f.kind, f"judge {f.kind} failure after {f.attempts} attempt(s): {f.message}"
    return judge.status, f"the judge was {judge.status}"


def _attempts(judge: Outcome | None) -> int | None:
    if judge is None:
        return None
    if judge.ok and judge.output:
        return int(judge.output.get("parse_attempts", 1))
    return judge.failure.attempts if judge.failure else None


def _judge_template(path: Path) -> P.JudgeTemplate:
    """The judge template of `path`, read once per file version (every case's graph asks for it)."""
    stat = path.stat()
    return _read_template(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_template(path: str, mtime_ns: int, size: int) -> P.JudgeTemplate:
    return P.load_judge_template(path)


def _official_reading(scoring: str, image: Outcome | None, reply: str | None) -> dict[str, float] | None:
    """What the official script makes of the judge reply umni kept (or last saw, when it failed);
    None where it would have dropped the prompt (no image, nothing readable)."""
    if image is None or not image.ok or reply is None:
        return None
    if scoring == "legacy":
        return P.official_legacy_reading(reply)
    score = P.official_verified_reading(reply)
    return None if score is None else {"score": score}


def _legacy_judgement(record: dict[str, Any]) -> S.LegacyJudgement:
    if record.get("failure") is not None or record.get("marks") is None:
        return S.LegacyJudgement(prompt_id=record["prompt_id"], failure=record.get("failure") or "internal")
    return S.LegacyJudgement(prompt_id=record["prompt_id"], **record["marks"])


def _verified_judgement(record: dict[str, Any]) -> S.VerifiedJudgement:
    if record.get("failure") is not None or record.get("marks") is None:
        return S.VerifiedJudgement(prompt_id=record["prompt_id"], failure=record.get("failure") or "internal")
    return S.VerifiedJudgement(prompt_id=record["prompt_id"], score=record["marks"]["score"])


def _coverage_statement(records: int, expected: int, missing: list[int], variant: str, overall: float | None) -> str:
    if not missing:
        return f"all {expected} {variant} prompts have a result"
    text = (
        f"{len(missing)} of the {expected} expected {variant} prompt ids have no result (listed in missing_ids); "
        f"the scores cover the {records} prompt(s) run"
    )
    if overall is not None:
        text += ", so the Overall is not comparable with a full-set Overall"
    else:
        text += "; the Overall needs a score in every category and is left empty"
    return text


PROTOCOL = Wise()
