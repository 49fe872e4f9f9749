"""The scene model of the sim reference backend: what a prompt described, kept as data.

sim/umm does not understand language; it keeps a small structured record of what its prompts said
(things with attributes and parts, spatial relations, and the sentences themselves as ordered facts)
and answers later questions from that record. The record travels inside the PNGs sim draws (a text
chunk, see ``SCENE_KEY``), so sim can read back its own images after they were saved and reloaded,
and edits can change the record instead of guessing from pixels. How text changes a scene lives in
``sim_edits``; what counts as a word lives in ``sim_words``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .sim_words import COLOURS, content_stems, stem, tokenize

#: PNG text-chunk key (and ``Image.info`` key) that carries the scene as JSON.
SCENE_KEY = "umni-sim-scene"
#: Written into every scene, so a record from an incompatible sim is rejected rather than misread.
SCENE_FORMAT = 1
#: Things kept in the structured record (every sentence is still kept as a fact).
MAX_THINGS = 6


def attribute_words(attrs: dict[str, list[str]]) -> list[str]:
    """Attribute words in family order, so the same attributes always read (and hash) the same way."""
    return [word for family in sorted(attrs) for word in attrs[family]]


@dataclass
class Thing:
    """Something in the picture: a head noun, its other words, attributes by family, and parts."""

    name: str
    words: list[str] = field(default_factory=list)
    attrs: dict[str, list[str]] = field(default_factory=dict)
    parts: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def colours(self) -> list[str]:
        return self.attrs.get("colour", [])

    def phrase(self) -> str:
        """The thing as an English noun phrase, parts included ("red lion with a golden mane")."""
        text = " ".join(attribute_words(self.attrs) + self.words + [self.name])
        if self.parts:
            text += " with " + " and ".join(
                ("" if part.endswith("s") else "a ") + " ".join(attribute_words(attrs) + [part])
                for part, attrs in self.parts.items()
            )
        return text


@dataclass
class Fact:
    """One sentence of a prompt or edit (as tokens), and the step (0 = generation) that said it."""

    words: list[str]
    step: int
    weight: float = 1.0  # below 1 for facts read from pixels: the share of the image they cover

    def mentions(self, noun_stem: str) -> bool:
        """Whether the sentence talks about the noun with this stem (in any inflection)."""
        return noun_stem in {stem(word) for word in self.words}


@dataclass
class Scene:
    """What sim believes its picture shows."""

    things: list[Thing] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    background: str | None = None
    step: int = 0
    source: str = "scene"  # "scene" when read from sim's own record, "pixels" when read from colours

    # -- lookup -----------------------------------------------------------------------------------
    def find(self, noun: str) -> Thing | None:
        """The most recently added thing named ``noun`` (compared by stem, so plurals match)."""
        key = stem(noun)
        for thing in reversed(self.things):
            if stem(thing.name) == key:
                return thing
        return None

    def find_part(self, noun: str) -> tuple[Thing, str] | None:
        """The owner and name of the most recent part named ``noun`` (compared by stem)."""
        key = stem(noun)
        for thing in reversed(self.things):
            for part in thing.parts:
                if stem(part) == key:
                    return thing, part
        return None

    # -- views ------------------------------------------------------------------------------------
    def state_facts(self) -> list[Fact]:
        """The structured record restated as facts of the latest step (so renames and overrides show)."""
        facts = []
        for thing in self.things:
            facts.append(Fact(attribute_words(thing.attrs) + thing.words + [thing.name], self.step))
            for part, attrs in thing.parts.items():
                facts.append(Fact([thing.name, part] + attribute_words(attrs), self.step))
        for subject, relation, obj in self.relations:
            facts.append(Fact([subject, *relation.split(), obj], self.step))
        if self.background:
            facts.append(Fact(["background", self.background], self.step))
        for text in self.texts:
            facts.append(Fact(["text", "reads", *tokenize(text)], self.step))
        return facts

    def all_facts(self) -> list[Fact]:
        """The sentences as said, then the current record: answers weigh both."""
        return self.facts + self.state_facts()

    def vocabulary(self) -> set[str]:
        """Content stems of everything the scene records (for judging agreement with a text)."""
        words: set[str] = set()
        for fact in self.all_facts():
            words |= content_stems(fact.words)
        return words

    def describe(self) -> str:
        """A short plain-English description of the scene."""
        if self.source == "pixels":
            colours = [w for f in self.facts for w in f.words if w in COLOURS]
            return "mostly " + " and ".join(colours[:3]) if colours else "an image sim cannot read"
        phrases = [thing.phrase() for thing in self.things]
        text = "; ".join(f"a {p}" for p in phrases) if phrases else "nothing sim recognises"
        for subject, relation, obj in self.relations[:3]:
            text += f"; the {subject} is {relation} the {obj}"
        if self.texts:
            text += "; text reading " + ", ".join(f'"{t}"' for t in self.texts)
        latest = [f for f in self.facts if f.step == self.step]
        if latest and self.step > 0:
            text += "; latest change: " + " ".join(w for w in latest[-1].words if w != "\n")
        return text

    # -- serialisation ----------------------------------------------------------------------------
    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal scenes give equal bytes, so cache keys are stable."""
        data: dict[str, Any] = {
            "format": SCENE_FORMAT,
            "step": self.step,
            "background": self.background,
            "things": [{"name": t.name, "words": t.words, "attrs": t.attrs, "parts": t.parts} for t in self.things],
            "relations": [list(r) for r in self.relations],
            "facts": [_fact_json(f) for f in self.facts],
            "texts": self.texts,
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Scene:
        """Read a scene written by ``to_json``; raises ValueError on anything else."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != SCENE_FORMAT:
            raise ValueError("not a sim scene of a known format")
        return cls(
            things=[Thing(t["name"], list(t["words"]), dict(t["attrs"]), dict(t["parts"])) for t in data["things"]],
            relations=[tuple(r) for r in data["relations"]],
            facts=[
                Fact(f["text"].split(" ") if f["text"] else [], int(f["step"]), float(f.get("weight", 1.0)))
                for f in data["facts"]
            ],
            texts=list(data["texts"]),
            background=data["background"],
            step=int(data["step"]),
        )

    def copy(self) -> Scene:
        """A deep copy made through JSON, so it holds exactly what a saved image would carry."""
        twin = Scene.from_json(self.to_json())
        twin.source = self.source
        return twin


def _fact_json(fact: Fact) -> dict[str, Any]:
    data: dict[str, Any] = {"text": " ".join(fact.words), "step": fact.step}
    if fact.weight != 1.0:
        data["weight"] = round(fact.weight, 4)
    return data


def merge(scenes: list[Scene]) -> Scene:
    """Several input images as one context: later images win for things named twice."""
    if not scenes:
        return Scene()
    if len(scenes) == 1:
        return scenes[0].copy()
    out = Scene(step=max(s.step for s in scenes))
    for scene in scenes:
        scene = scene.copy()
        for thing in scene.things:
            old = out.find(thing.name)
            if old is not None:
                out.things.remove(old)
            out.things.append(thing)
        out.relations += [r for r in scene.relations if r not in out.relations]
        out.facts += scene.facts
        out.texts += [t for t in scene.texts if t not in out.texts]
        out.background = out.background or scene.background
    out.things = out.things[-MAX_THINGS:]
    out.source = "pixels" if all(s.source == "pixels" for s in scenes) else "scene"
    return out
