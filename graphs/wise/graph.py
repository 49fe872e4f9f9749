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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from umni.plugin import Graph, Ref, RoleTemplate

from ..keyed import keyed_as
from . import prompts as P
from .cases import WiseCase
from .options import WiseOptions

IMAGE_NODE = "image"
JUDGE_NODE = "judge"

#: Reply-length limits of the official judge requests (verified ``vllm_eval.py``: 500 tokens; legacy
#: ``gpt_eval.py``: 2000); part of the judge's cache key.
JUDGE_MAX_TOKENS = {"verified": 500, "legacy": 2000}
#: The official requests sample greedily.
JUDGE_TEMPERATURE = 0.0
#: What the verified script sends to turn a reasoning judge's thinking off (vLLM/SGLang chat templates).
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False}}


@dataclass(frozen=True)
class WiseHandles:
    """The nodes of one prompt's graph, as `record` reads them."""

    image: Ref
    judge: Ref


# --------------------------------------------------------------------------------------------------
# Judge reply parsers (module level: their names enter the judge's cache key, and are kept as they
# were first keyed by `keyed_as` below). They return plain dicts so the cache can keep them, and
# raise ParseFailure / InvalidAnswer on unusable replies.


def parse_legacy_marks(text: str) -> dict[str, int]:
    marks = P.parse_legacy_answer(text)
    return {"consistency": marks.consistency, "realism": marks.realism, "aesthetic_quality": marks.aesthetic_quality}


def parse_verified_score(text: str) -> dict[str, int]:
    return {"score": P.parse_verified_answer(text)}


keyed_as(parse_legacy_marks, "umni_graphs.wise.protocol")
keyed_as(parse_verified_score, "umni_graphs.wise.protocol")


def judge_template(options: WiseOptions) -> RoleTemplate:
    """The judge's template and request settings, for the run's provenance: umni's wording of the
    official request, or the user's template (``judge_prompt``)."""
    if options.judge_prompt is not None:
        own = P.judge_template(options.judge_prompt)
        texts: tuple[str, ...] = (own.system or "", own.user)
        follows = f"the user's template {options.judge_prompt.name} (judge_prompt), asked as the official {options.scoring} request"
    else:
        texts, follows = P.judge_texts(options.scoring), P.OFFICIAL_JUDGE[options.scoring]
    return RoleTemplate(texts, follows, temperature=JUDGE_TEMPERATURE, max_tokens=JUDGE_MAX_TOKENS[options.scoring])


def build_case_graph(case: WiseCase, options: WiseOptions) -> Graph[WiseHandles]:
    g: Graph[WiseHandles] = Graph(case.id)
    image = g.generate(IMAGE_NODE, [case.prompt.Prompt])
    rubric: Callable[[str, str], str]
    system: str | None
    if options.scoring == "legacy":
        rubric, parse, system = P.legacy_judge_prompt, parse_legacy_marks, P.LEGACY_SYSTEM
    else:
        rubric, parse, system = P.verified_judge_prompt, parse_verified_score, P.VERIFIED_SYSTEM
    if options.judge_prompt is not None:
        template = P.judge_template(options.judge_prompt)
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
