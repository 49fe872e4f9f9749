"""sim/umm: umni's offline reference backend — deterministic, no network, no weights.

This is NOT a model and its scores say nothing about any model. It exists so that every protocol can
run anywhere (demos, tests, CI, benchmarks of the engine itself) with outputs that are exactly
reproducible and still *depend on their inputs* the way a model's would: images show what the prompt
described, edits change what was asked, answers come from what the image shows, so a broken graph,
a lost image or a swapped binding shows up as a different score.

How it works, in short:

* ``generate`` parses the prompt into a scene (things, colours and other attributes, parts,
  spatial relations, the sentences as facts; see ``sim_scene``, ``sim_edits`` and ``sim_words``),
  draws it (``sim_render``) and embeds the scene as JSON in the image (``info["umni-sim-scene"]``,
  a PNG text chunk once saved).
* ``edit`` applies the instruction to the scene of its input image (replacements, attribute changes
  that override older ones, new facts) and draws again. For an image without an embedded scene it
  starts from what the pixels show (dominant colours).
* ``choose`` picks the option whose distinctive words the scene supports best, weighting facts that
  share words with the question and facts from later steps. It never sees an answer key. With
  probability ``1 - skill`` (a deterministic draw per seed, question and image) it guesses instead.
* ``respond`` fills judge answer templates (``Label: <lo-hi>``) from the word agreement between the
  images' scenes and the prompt's text, answers ``answer_list`` checklists item by item, and
  otherwise writes a short description of what it sees and what the prompt asks.

Spec parameters: ``latency`` (seconds per call), ``error_rate`` (share of calls that fail with a
retryable BackendError; the draw includes an attempt counter, so a retry may succeed), ``skill``
(0–1, how often ``choose`` and judging read the image rather than guess), ``judge_bias`` (a whole number
of steps every mark sim gives as a judge is moved along its scale, clipped at its ends: ``Score: <0-2>``
marks by B, a checklist's N/Y answers by B on the two-mark scale N < Y; the ``Copy`` question, a yes/no
about two images rather than a rating, is left as it is; so tests know a substitute judge's bias
exactly) and ``seed``. ``latency``
and ``error_rate`` are operational: they do not change any output, so they are not part of the
backend identity and changing them keeps the cache.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

import anyio
from PIL import Image
from pydantic import Field

from umni.plugin import (
    EDIT,
    GENERATE,
    JUDGE,
    UNDERSTAND,
    Backend,
    BackendError,
    BackendParams,
    ChoiceReply,
    ConfigError,
    ImageReply,
    Part,
    RoleProvenance,
    Spec,
    TextReply,
    Usage,
)

from .sim_edits import apply_text
from .sim_phrases import noun_phrases
from .sim_render import pixel_scene, render
from .sim_scene import SCENE_KEY, Scene, merge
from .sim_words import NOT_THINGS, content_stems, stem, tokenize

#: Bumped whenever sim's outputs change for the same inputs, so cached results are not reused.
SIM_REVISION = "2"
MODEL_NAME = "umm"

#: Words of judge prompts and checklist items that say how to judge rather than what to look for.
_JUDGE_WORDS = frozenset(
    content_stems(tokenize(
        "image images picture output response generated generation model correctly accurately clearly visible "
        "show shows shown depict depicts depicted display displays contain contains include includes present "
        "appear appears text consistency consistent reference correct whether yes true false answer score rate "
        "rating judge evaluate evaluation explanation prompt instruction task user item items checklist"
    ))
)
_TEMPLATE = re.compile(
    r"^[ \t>*_\-]*(?P<label>[A-Za-z][A-Za-z0-9 _&'/()\-]{0,60}?)[*_ \t]*[:\uff1a][ \t]*"
    r"<\s*(?P<lo>\d+)\s*(?:-|\u2013|to|\.\.)\s*(?P<hi>\d+)\s*>[ \t]*$",
    re.MULTILINE,
)
_NUMBERED = re.compile(r"^\s*(\d{1,3})[.)]\s+(\S.*?)\s*$")
_INSTRUCTION_HEADS = frozenset({
    "prompt", "plan", "answer", "response", "instruction", "question", "description", "task", "output", "judge",
    "rating", "score", "format", "json", "image", "images", "following", "reply", "list", "item", "user", "model",
})


class SimParams(BackendParams):
    """sim/umm's spec parameters (validated by pydantic; errors name the parameter)."""

    operational: ClassVar[frozenset[str]] = BackendParams.operational | {"latency", "error_rate"}

    latency: float = Field(0.0, ge=0, allow_inf_nan=False, description="seconds each call waits")
    error_rate: float = Field(0.0, ge=0, le=1, description="the share of calls that fail with a retryable error")
    skill: float = Field(1.0, ge=0, le=1, description="how often sim reads the image instead of guessing")
    judge_bias: int = Field(0, description="steps every judge mark is moved along its scale (clipped at its ends)")
    seed: int = 0


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2.0**64


def read_image(image: Image.Image) -> tuple[Scene, str]:
    """The scene sim embedded in ``image`` or, failing that, what its pixels show; plus a key for hashing.

    The scene may be shared with other calls that read the same record: read it, or `merge` it
    (which copies) before changing it."""
    raw = image.info.get(SCENE_KEY)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        try:
            return _recorded_scene(raw), raw
        except (ValueError, KeyError, TypeError):
            pass  # not a scene sim can read: fall back to the pixels
    scene, thumb = pixel_scene(image)
    return scene, "pixels:" + hashlib.blake2b(thumb, digest_size=16).hexdigest()


@lru_cache(maxsize=256)
def _recorded_scene(raw: str) -> Scene:
    """A scene record parsed once: every question about one image reads the same record, and
    parsing it was a large share of the reference backend's time per answer."""
    return Scene.from_json(raw)


def _context(scenes: list[Scene]) -> Scene:
    """The images' scenes as one context to read (not to change): one image's own scene, uncopied."""
    return scenes[0] if len(scenes) == 1 else merge(scenes)


def _split(parts: Sequence[Part]) -> tuple[list[str], list[Image.Image]]:
    texts = [p for p in parts if isinstance(p, str)]
    images = [p for p in parts if isinstance(p, Image.Image)]
    return texts, images


def _words(texts: Sequence[str]) -> int:
    return sum(len(t.split()) for t in texts)


# --------------------------------------------------------------------------------------------------
# Understanding


def score_options(scene: Scene, question: str, options: Sequence[str]) -> list[float]:
    """How well the scene supports each option (0 = no support).

    Only an option's distinctive words count (words every option shares say nothing); each counts
    with the weight of the best fact containing it, where facts weigh more when they share words
    with the question and when they are more recent. Words the question itself uses count less, so
    an option cannot win by echoing the question.
    """
    question_words = content_stems(tokenize(question))
    best: dict[str, float] = {}
    for fact in scene.all_facts():
        stems = _fact_stems(tuple(fact.words))
        if not stems:
            continue
        relevance = len(stems & question_words) / max(1, len(question_words))
        weight = 2.0**fact.step * (1 + relevance) * fact.weight
        for word in stems:
            if weight > best.get(word, 0.0):
                best[word] = weight
    option_words = [content_stems(tokenize(option)) for option in options]
    shared = set.intersection(*option_words) if option_words else set()
    scores = []
    for words in option_words:
        distinct = words - shared
        if not distinct:
            scores.append(0.0)
            continue
        total = sum((0.3 if w in question_words else 1.0) * best.get(w, 0.0) for w in distinct)
        scores.append(total / math.sqrt(len(distinct)))
    return scores


@lru_cache(maxsize=4096)
def _fact_stems(words: tuple[str, ...]) -> frozenset[str]:
    """A fact's content stems, worked out once: each image is asked several questions, and its
    facts were stemmed again for every one of them."""
    return frozenset(content_stems(words))


def _seen_words(scenes: list[Scene]) -> set[str]:
    """Content stems of everything the images show, as one set (judging compares texts against it)."""
    seen: set[str] = set()
    for scene in scenes:
        seen |= scene.vocabulary()
    return seen


def _agreement(scenes: list[Scene], text: str) -> float | None:
    """Share of what the images show that the text also mentions; None without images."""
    seen = _seen_words(scenes) - _JUDGE_WORDS
    if not seen:
        return None
    mentioned = content_stems(tokenize(text))
    return len(seen & mentioned) / len(seen)


def _checklist(text: str) -> list[str]:
    """The last run of lines numbered 1., 2., 3., … in the text."""
    runs: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if not match:
            continue
        number = int(match.group(1))
        if number == 1:
            current = [match.group(2)]
            runs.append(current)
        elif current is not None and number == len(current) + 1:
            current.append(match.group(2))
        else:
            current = None
    return runs[-1] if runs else []


def _content_sentences(text: str, limit: int = 4) -> list[str]:
    """Sentences of the prompt that describe something (not instructions about the answer)."""
    chosen = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or _TEMPLATE.match(sentence) or "{" in sentence:
            continue
        heads = [p.head for p in noun_phrases(tokenize(sentence))]
        if any(h not in NOT_THINGS and h not in _INSTRUCTION_HEADS for h in heads):
            chosen.append(sentence)
        if len(chosen) == limit:
            break
    return chosen


# --------------------------------------------------------------------------------------------------
# The backend


class SimBackend(Backend):
    """The offline reference backend ``sim/umm`` (see the module docstring; it is not a model)."""

    provider = "sim"
    roles = frozenset({UNDERSTAND, GENERATE, EDIT, JUDGE})
    default_concurrency = 16
    Params = SimParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        if spec.name != MODEL_NAME:
            raise ConfigError(
                f"backend spec '{spec}': sim/{MODEL_NAME} is the only sim model (got sim/{spec.name}); "
                f"use 'sim/{MODEL_NAME}?skill=0.8&seed=1' (quoted in a shell) and similar to vary it"
            )
        self.settings: SimParams = self.params
        self._attempts: dict[bytes, int] = {}

    def identity(self) -> dict[str, Any]:
        """Canonical output-relevant settings (so ``sim/umm`` and ``sim/umm?skill=1`` share a cache) and
        revision. ``judge_bias`` only when set, so the keys of every unbiased judge stay as they were."""
        params = {"seed": str(self.settings.seed), "skill": repr(self.settings.skill)}
        if self.settings.judge_bias:
            params["judge_bias"] = str(self.settings.judge_bias)
        return {"provider": self.provider, "name": MODEL_NAME, "params": params, "revision": SIM_REVISION}

    def provenance(self, role: str) -> RoleProvenance:
        """sim/umm is a program, not a model: its revision is its rules' version, and every output
        is a function of its seed, the node's seed and the call's inputs."""
        return RoleProvenance(
            backend=self.provider,
            model=f"{self.provider}/{MODEL_NAME} (skill={self.settings.skill:g}"
            + (f", judge_bias={self.settings.judge_bias}" if self.settings.judge_bias else "")
            + ")",
            revision=SIM_REVISION,
            device="cpu",
            seed_policy=f"deterministic: each output is drawn from seed={self.settings.seed}, the node's seed and its inputs",
        )

    def request_settings(self, role: str) -> frozenset[str]:
        return frozenset()  # a node's temperature and reply limit change nothing sim says

    # -- call mechanics ---------------------------------------------------------------------------
    async def _gate(self, kind: str, *key_parts: object) -> None:
        """Wait the configured latency, then fail if this attempt's draw says so."""
        settings = self.settings
        if settings.latency > 0:
            await anyio.sleep(settings.latency)
        if settings.error_rate <= 0:
            return
        key = "\x1f".join([kind, *map(str, key_parts)])
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        attempt = self._attempts.get(digest, 0)
        self._attempts[digest] = attempt + 1
        if _unit("error", settings.seed, key, attempt) < settings.error_rate:
            raise BackendError(
                f"sim/umm: simulated failure of a {kind} call (error_rate={settings.error_rate:g}, attempt {attempt + 1})",
                retryable=True,
            )

    def _render_seed(self, seed: int) -> int:
        return self.settings.seed * 1_000_003 + seed

    def _reads(self, seed: int, question: str, image_keys: list[str]) -> bool:
        """The skill draw: whether this (seed, question, image) is read rather than guessed."""
        skill = self.settings.skill
        if skill >= 1:
            return True
        return _unit("skill", self.settings.seed, seed, question, *image_keys) < skill

    # -- Generator / Editor -----------------------------------------------------------------------
    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        texts, images = _split(parts)
        read = [read_image(image) for image in images]
        await self._gate("generate", seed, *texts, *(key for _, key in read))
        context = merge([scene for scene, _ in read])
        step = context.step + 1 if read else 0
        scene = apply_text(context, "\n".join(texts), step=step)
        scene.source = "scene"
        image = render(scene, seed=self._render_seed(seed))
        usage = Usage(input_tokens=_words(texts), images_in=len(images), images_out=1)
        return ImageReply(image=image, usage=usage)

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        if not images:
            raise BackendError("sim/umm: edit needs at least one input image", retryable=False)
        read = [read_image(image) for image in images]
        await self._gate("edit", seed, instruction, *(key for _, key in read))
        scene = merge([scene for scene, _ in read])
        scene = apply_text(scene, instruction, step=scene.step + 1)
        scene.source = "scene"
        image = render(scene, seed=self._render_seed(seed))
        usage = Usage(input_tokens=_words([instruction]), images_in=len(images), images_out=1)
        return ImageReply(image=image, usage=usage)

    # -- Understander -----------------------------------------------------------------------------
    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        if not options:
            raise BackendError("sim/umm: choose was called without options", retryable=False)
        texts, images = _split(parts)
        question = "\n".join(texts)
        read = [read_image(image) for image in images]
        keys = [key for _, key in read]
        await self._gate("choose", seed, question, *options, *keys)
        usage = Usage(input_tokens=_words(texts) + _words(options), output_tokens=1, images_in=len(images))
        candidates = list(range(len(options)))
        mode = "guess"
        if read and self._reads(seed, question, keys):
            scene = _context([scene for scene, _ in read])
            scores = score_options(scene, question, options)
            top = max(scores)
            if top > 0:
                candidates = [i for i, s in enumerate(scores) if s >= top - 1e-9]
                if len(candidates) == 1:
                    mode = scene.source
        index = candidates[int(_unit("guess", self.settings.seed, seed, question, *options) * len(candidates))]
        return ChoiceReply(index=index, text=options[index], mode=mode, usage=usage)

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        texts, images = _split(parts)
        text = "\n".join(texts)
        read = [read_image(image) for image in images]
        keys = [key for _, key in read]
        await self._gate("respond", seed, max_tokens, text, *keys)
        scenes = [scene for scene, _ in read]
        reads = bool(read) and self._reads(seed, text, keys)
        checklist = _checklist(text) if "answer_list" in text.lower() else []
        templates = list(_TEMPLATE.finditer(text))
        if checklist:
            reply = self._answer_checklist(scenes if reads else [], checklist, seed, text)
        elif templates:
            same = keys[0] == keys[1] if reads and len(keys) == 2 else None
            reply = self._fill_templates(scenes if reads else [], templates, seed, text, same_images=same)
        else:
            reply = self._describe(scenes, text, max_tokens)
        usage = Usage(input_tokens=_words(texts), output_tokens=len(reply.split()), images_in=len(images))
        return TextReply(text=reply, usage=usage)

    def _fill_templates(
        self, scenes: list[Scene], templates: list[re.Match[str]], seed: int, text: str, *, same_images: bool | None = None
    ) -> str:
        """Marks by word agreement; a ``Copy: <0-1>`` question about two images it compares the images
        for (0 = the second is the first again, the polarity of the GENIUS copy check)."""
        reference = _TEMPLATE.sub("", text)
        agreement = _agreement(scenes, reference)
        lines = []
        for match in templates:
            label = match.group("label").strip(" *_")
            low, high = sorted((int(match.group("lo")), int(match.group("hi"))))
            copy = label.lower() == "copy"
            if copy and same_images is not None:
                value = low if same_images else high
            elif agreement is None:
                value = low + int(_unit("judge", self.settings.seed, seed, text, label) * (high - low + 1))
            else:
                value = low + math.floor(agreement * (high - low) + 0.5)
            if not copy:
                value += self.settings.judge_bias
            lines.append(f"{label}: {min(high, max(low, value))}")
        return "\n".join(lines)

    def _answer_checklist(self, scenes: list[Scene], items: list[str], seed: int, text: str) -> str:
        seen = _seen_words(scenes)
        answers, reasons = [], []
        for number, item in enumerate(items, 1):
            spelled = {stem(w): w for w in reversed(tokenize(item))}
            wanted = content_stems(tokenize(item)) - _JUDGE_WORDS
            if not seen or not wanted:
                yes = _unit("item", self.settings.seed, seed, text, number) < 0.5
                reasons.append("sim could not compare this item with the image; guessed")
            else:
                found = sorted(spelled[w] for w in wanted & seen)
                missing = sorted(spelled[w] for w in wanted - seen)
                yes = len(found) / len(wanted) >= 0.5
                reasons.append(f"seen: {', '.join(found) or 'nothing relevant'}; not seen: {', '.join(missing) or 'nothing'}")
            answers.append("Y" if min(1, max(0, int(yes) + self.settings.judge_bias)) else "N")
        return json.dumps({"answer_list": answers, "reason_list": reasons})

    def _describe(self, scenes: list[Scene], text: str, max_tokens: int) -> str:
        pieces = []
        for number, scene in enumerate(scenes, 1):
            which = "The image" if len(scenes) == 1 else f"Image {number}"
            pieces.append(f"{which} shows {scene.describe()}.")
        pieces += _content_sentences(text)
        if not pieces:
            pieces.append("sim/umm has nothing to describe in this prompt.")
        words = " ".join(pieces).split()
        return " ".join(words[: max(1, max_tokens)])
