"""The scene model of the sim reference backend: what a prompt describes, kept as data.

sim/umm does not understand language; it keeps a small structured record of what its prompts said
(things with attributes and parts, spatial relations, and the sentences themselves as ordered facts)
and answers later questions from that record. The record travels inside the PNGs sim draws (a text
chunk, see ``SCENE_KEY``), so sim can read back its own images after they were saved and reloaded,
and edits can change the record instead of guessing from pixels.

Parsing is deliberately shallow and deterministic: noun phrases start at a determiner, attributes are
words from closed vocabularies (colours, sizes, textures, …), and a new attribute of a vocabulary
replaces the old one everywhere it was recorded — that is what makes "make the lion's mane red"
answerable as red afterwards.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

#: PNG text-chunk key (and ``Image.info`` key) that carries the scene as JSON.
SCENE_KEY = "umni-sim-scene"
SCENE_FORMAT = 1
#: Things kept in the structured record (every sentence is still kept as a fact).
MAX_THINGS = 6

# --------------------------------------------------------------------------------------------------
# Vocabularies

#: Colour names and the RGB sim paints them with.
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (214, 40, 40), "crimson": (170, 20, 50), "scarlet": (230, 36, 20), "maroon": (120, 20, 30),
    "ruby": (190, 15, 70), "orange": (245, 140, 30), "amber": (255, 180, 0), "coral": (250, 120, 95),
    "peach": (250, 200, 160), "yellow": (245, 215, 40), "golden": (218, 165, 32), "gold": (218, 165, 32),
    "green": (50, 160, 70), "lime": (160, 220, 50), "olive": (120, 130, 40), "emerald": (20, 150, 90),
    "mint": (160, 230, 190), "teal": (20, 128, 128), "cyan": (40, 200, 220), "turquoise": (60, 210, 200),
    "blue": (40, 90, 210), "azure": (60, 150, 250), "navy": (20, 30, 110), "indigo": (75, 0, 130),
    "purple": (130, 50, 170), "violet": (150, 90, 220), "lavender": (190, 170, 230), "magenta": (220, 40, 180),
    "pink": (245, 150, 190), "brown": (130, 80, 40), "tan": (210, 180, 140), "beige": (225, 210, 180),
    "khaki": (195, 185, 130), "rust": (170, 70, 20), "bronze": (180, 120, 50), "copper": (190, 110, 60),
    "black": (25, 25, 25), "charcoal": (60, 60, 65), "gray": (128, 128, 128), "grey": (128, 128, 128),
    "silver": (192, 192, 200), "white": (250, 250, 250), "ivory": (250, 245, 225), "cream": (250, 240, 205),
}
#: The colours sim names when it reads pixels (a coarse palette, so names are the common ones).
PIXEL_PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (210, 40, 40), "orange": (240, 140, 30), "yellow": (240, 215, 50), "green": (50, 160, 70),
    "blue": (40, 90, 210), "purple": (130, 50, 170), "pink": (245, 150, 190), "brown": (130, 80, 40),
    "black": (20, 20, 20), "white": (245, 245, 245), "gray": (128, 128, 128), "cyan": (40, 200, 220),
    "golden": (218, 165, 32),
}

#: Mutually exclusive attribute vocabularies: a new word of a family replaces the old ones.
FAMILIES: dict[str, frozenset[str]] = {
    "colour": frozenset(COLOURS),
    "size": frozenset({"tiny", "small", "little", "medium", "large", "big", "huge", "giant", "enormous", "massive"}),
    "texture": frozenset({
        "smooth", "rough", "fluffy", "furry", "fuzzy", "scaly", "spiky", "shiny", "glossy", "matte", "striped",
        "spotted", "checkered", "plaid", "wrinkled", "bumpy", "silky", "polka", "dotted", "glittery", "metallic",
    }),
    "material": frozenset({
        "wooden", "plastic", "rubber", "stone", "paper", "ceramic", "steel", "iron", "cotton", "woolen",
        "leather", "crystal", "marble", "cardboard", "clay", "velvet", "glass", "wood", "metal",
    }),
    "fill": frozenset({"full", "empty", "half-full", "overflowing"}),
    "temperature": frozenset({"hot", "warm", "cold", "frozen", "icy", "boiling", "chilled"}),
    "moisture": frozenset({"wet", "dry", "soaked", "damp"}),
    "openness": frozenset({"open", "closed", "shut"}),
    "mood": frozenset({"happy", "sad", "angry", "calm", "scared", "surprised", "smiling", "frowning", "crying"}),
}
FAMILY_OF: dict[str, str] = {word: family for family, words in FAMILIES.items() for word in words}

DETERMINERS = frozenset({
    "a", "an", "the", "one", "two", "three", "four", "five", "six", "some", "its", "their", "his", "her",
    "this", "that", "these", "those", "another", "each", "every", "several", "many", "my", "your", "our",
})
#: Words that never head a noun phrase (prepositions, conjunctions, auxiliaries, pronouns, adverbs).
FUNCTION_WORDS = frozenset({
    "to", "of", "in", "on", "at", "by", "with", "from", "into", "onto", "over", "under", "above", "below",
    "behind", "beside", "besides", "near", "next", "left", "right", "front", "top", "bottom", "and", "or", "but",
    "while", "then", "as", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "it",
    "they", "them", "that", "which", "who", "whom", "whose", "so", "now", "after", "before", "when", "because",
    "not", "no", "very", "also", "there", "here", "will", "would", "can", "could", "should", "must", "may",
    "might", "shall", "do", "does", "did", "than", "too", "up", "down", "out", "off", "away", "around",
    "through", "across", "between", "beneath", "underneath", "inside", "outside", "toward", "towards",
    "against", "along", "about", "for", "if", "where", "what", "how", "why", "still", "just", "only", "all",
    "both", "either", "neither", "such", "same", "other", "more", "most", "less", "least", "again", "yet",
    "he", "she", "we", "you", "i", "me", "him", "us", "itself", "themselves", "each", "onto", "upon", "within",
    "without", "during", "until", "since", "instead", "becomes", "become", "turns", "turn", "into",
})
#: Words ignored when comparing texts: function words plus words every prompt or edit uses.
NUMBER_WORDS = frozenset({"one", "two", "three", "four", "five", "six"})
STOPWORDS = FUNCTION_WORDS | (DETERMINERS - NUMBER_WORDS) | frozenset({
    "make", "makes", "made", "change", "changes", "changed", "set", "let", "show", "shows", "showing", "shown",
    "image", "picture", "photo", "scene", "depict", "depicts", "depicting", "please", "draw", "render", "generate",
    "edit", "now", "new", "should", "appear", "appears", "look", "looks", "like", "view", "visible", "there",
    "s", "its", "it's", "this", "these", "what", "which", "who", "color", "colour", "colored", "coloured",
    "question", "answer", "option", "options", "following", "best", "describes", "describe", "given", "based",
    "currently", "happens", "happen", "happened", "object", "entity", "thing",
})
#: Simple spatial relations sim can draw, longest phrase first; value = canonical relation.
RELATION_PHRASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("to", "the", "left", "of"), "left of"), (("on", "the", "left", "of"), "left of"), (("left", "of"), "left of"),
    (("to", "the", "right", "of"), "right of"), (("on", "the", "right", "of"), "right of"),
    (("right", "of"), "right of"), (("on", "top", "of"), "on"), (("in", "front", "of"), "in front of"),
    (("next", "to"), "next to"), (("beside",), "next to"), (("near",), "next to"), (("above",), "above"),
    (("over",), "above"), (("below",), "below"), (("beneath",), "under"), (("underneath",), "under"),
    (("under",), "under"), (("behind",), "behind"), (("on",), "on"), (("atop",), "on"), (("inside",), "inside"),
)
_ADJECTIVE_SUFFIXES = ("y", "ed", "ful", "ous", "ish", "ic", "al", "ive", "less", "ing", "en")
_KNOWN_ADJECTIVES = frozenset({
    "old", "young", "tall", "short", "long", "bright", "dark", "light", "pale", "deep", "heavy", "thin", "thick",
    "fat", "wide", "narrow", "round", "square", "flat", "soft", "hard", "sharp", "loose", "tight", "clean",
    "fresh", "ripe", "raw", "ancient", "modern", "wild", "tame", "cute", "majestic", "gentle", "fierce",
    "strong", "weak", "quiet", "loud", "slow", "fast", "bold", "vivid", "single", "lone", "giant", "baby",
    "adult", "little", "elegant", "sleek", "tidy", "messy", "neat", "plain", "simple", "ornate", "vast",
})
#: Heads that name an attribute, so the words before them describe the thing mentioned earlier.
ATTRIBUTE_NOUNS = frozenset({
    "texture", "color", "colour", "pattern", "finish", "shade", "look", "material", "tone", "hue", "coat", "paint",
    "glaze", "sheen",
})
#: Heads that name the picture rather than something in it.
NOT_THINGS = frozenset({
    "scene", "image", "picture", "photo", "background", "foreground", "side", "way", "time", "moment", "style",
    "shape", "size", "texture", "color", "colour", "view", "result", "outcome", "middle", "center", "centre",
    "edge", "corner", "rest", "kind", "type", "sort", "lot", "bit", "part", "number", "pair", "group", "order",
    "distance", "air", "amount", "piece",
})
_CANONICAL = {"grey": "gray", "gold": "golden", "colour": "color", "big": "large", "little": "small"}


# --------------------------------------------------------------------------------------------------
# Words


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (possessive ``'s`` kept on the word) and sentence punctuation."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return _TOKEN.findall(text)


_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:'s|s')?|[.;!?,:\n]")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stem, so 'shatters', 'shattered' and 'shattering' compare equal (no stemming library is installed)."""
    word = _CANONICAL.get(word, word)
    if word.endswith("'s") or word.endswith("s'"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return _CANONICAL.get(word, word)


def content_stems(words: list[str] | tuple[str, ...]) -> set[str]:
    """Stems of the words that carry content (no punctuation, no stop words)."""
    return {stem(w) for w in words if w[0].isalnum() and w not in STOPWORDS and stem(w) not in STOPWORDS}


def quoted_texts(text: str) -> list[str]:
    """Text the prompt asks to be written in the picture (between double or curly quotes)."""
    return [m.strip() for m in _QUOTED.findall(text) if m.strip()][:3]


_QUOTED = re.compile(r"[\"\u201c\u2018]([^\"\u201d\u2019\n]{1,40})[\"\u201d\u2019]")


# --------------------------------------------------------------------------------------------------
# Scene


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
        adjectives = [w for family in sorted(self.attrs) for w in self.attrs[family]]
        text = " ".join(adjectives + self.words + [self.name])
        if self.parts:
            text += " with " + " and ".join(
                ("" if p.endswith("s") else "a ") + " ".join([w for fam in sorted(a) for w in a[fam]] + [p])
                for p, a in self.parts.items()
            )
        return text


@dataclass
class Fact:
    """One sentence of a prompt or edit (as tokens), and the step (0 = generation) that said it."""

    words: list[str]
    step: int
    weight: float = 1.0  # below 1 for facts read from pixels: the share of the image they cover


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
        key = stem(noun)
        for thing in reversed(self.things):
            if stem(thing.name) == key:
                return thing
        return None

    def find_part(self, noun: str) -> tuple[Thing, str] | None:
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
            facts.append(Fact([w for f in sorted(thing.attrs) for w in thing.attrs[f]] + thing.words + [thing.name], self.step))
            for part, attrs in thing.parts.items():
                facts.append(Fact([thing.name, part] + [w for f in sorted(attrs) for w in attrs[f]], self.step))
        for subject, relation, obj in self.relations:
            facts.append(Fact([subject, *relation.split(), obj], self.step))
        if self.background:
            facts.append(Fact(["background", self.background], self.step))
        for text in self.texts:
            facts.append(Fact(["text", "reads", *tokenize(text)], self.step))
        return facts

    def all_facts(self) -> list[Fact]:
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
        parts = [thing.phrase() for thing in self.things]
        text = "; ".join(f"a {p}" for p in parts) if parts else "nothing sim recognises"
        for subject, relation, obj in self.relations[:3]:
            text += f"; the {subject} is {relation} the {obj}"
        if self.texts:
            text += "; text reading " + ", ".join(f'"{t}"' for t in self.texts)
        latest = [f for f in self.facts if f.step == self.step]
        if latest and self.step > 0:
            text += "; latest change: " + _join(latest[-1].words)
        return text

    # -- serialisation ----------------------------------------------------------------------------
    def to_json(self) -> str:
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
    def from_json(cls, text: str) -> "Scene":
        """Read a scene written by ``to_json``; raises ValueError on anything else."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != SCENE_FORMAT:
            raise ValueError("not a sim scene of a known format")
        return cls(
            things=[Thing(t["name"], list(t["words"]), dict(t["attrs"]), dict(t["parts"])) for t in data["things"]],
            relations=[tuple(r) for r in data["relations"]],  # type: ignore[misc]
            facts=[
                Fact(f["text"].split(" ") if f["text"] else [], int(f["step"]), float(f.get("weight", 1.0)))
                for f in data["facts"]
            ],
            texts=list(data["texts"]),
            background=data["background"],
            step=int(data["step"]),
        )

    def copy(self) -> "Scene":
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


def _join(words: list[str]) -> str:
    return " ".join(w for w in words if w != "\n")


# --------------------------------------------------------------------------------------------------
# Applying text to a scene


@dataclass
class Phrase:
    """A noun phrase found in a clause: token span, head noun, modifiers, and an owner for parts."""

    start: int
    end: int  # exclusive
    head: str
    modifiers: list[str]
    possessive: bool = False
    owner: str | None = None


def _looks_verbal(word: str) -> bool:
    return (word.endswith("s") and not word.endswith(("ss", "us", "is"))) or word.endswith("ed") or word.endswith("ly")


def _looks_adjective(word: str) -> bool:
    if word in _ING_NOUNS or word in _LY_NOUNS:
        return False
    return word in FAMILY_OF or word in _KNOWN_ADJECTIVES or (len(word) > 4 and word.endswith(_ADJECTIVE_SUFFIXES))


def _is_word(token: str) -> bool:
    return token[0].isalnum()


def noun_phrases(tokens: list[str]) -> list[Phrase]:
    """Noun phrases that start at a determiner, after a possessive, or coordinated by 'and'/'or'."""
    found: list[Phrase] = []
    i = 0
    n = len(tokens)
    while i < n:
        token = tokens[i]
        start: int | None = None
        if token in DETERMINERS:
            start = i + 1
        elif found and found[-1].possessive and found[-1].end == i and _is_word(token) and token not in FUNCTION_WORDS:
            start = i  # "the lion's mane"
        elif token in ("and", "or") and found and found[-1].end == i and i + 1 < n:
            nxt = tokens[i + 1]
            if _is_word(nxt) and _could_be_noun(nxt) and not _looks_adjective(nxt):
                start = i + 1  # "a lion and zebra"
        phrase = _read_phrase(tokens, start) if start is not None else None
        if phrase is None:
            i += 1
            continue
        if start == i and found:
            phrase.owner = found[-1].head
        phrase.start = i  # include the determiner, so the words between phrases are the linking words
        found.append(phrase)
        i = phrase.end
    return found


def _bare(token: str) -> str:
    return token[:-2] if token.endswith(("'s", "s'")) else token


def _can_follow_adjective(tokens: list[str], i: int) -> bool:
    """Whether the word at ``i`` can be followed by more of its noun phrase ("tall gray", "black and white")."""
    if i + 1 >= len(tokens):
        return False
    nxt = tokens[i + 1]
    if nxt in ("and", ","):
        return i + 2 < len(tokens) and _looks_adjective(tokens[i + 2])
    return _is_word(nxt) and nxt not in FUNCTION_WORDS and nxt not in DETERMINERS and not _adverb(nxt)


def _read_phrase(tokens: list[str], i: int) -> Phrase | None:
    """Adjectives, then a head noun, maybe after one noun modifier ("rubber ball", "coffee cup")."""
    start = i
    n = len(tokens)
    words: list[str] = []
    while i < n:
        token = tokens[i]
        if token in ("and", ",") and words and _looks_adjective(words[-1]) and i + 1 < n and _looks_adjective(tokens[i + 1]):
            i += 1
            continue
        bare = _bare(token)
        if not _is_word(token) or bare in FUNCTION_WORDS or bare in DETERMINERS or _adverb(bare):
            break
        possessive = token != bare
        if _looks_adjective(bare) and not possessive and _can_follow_adjective(tokens, i):
            words.append(bare)
            i += 1
            continue
        if words and _looks_verbal(bare) and words[-1] not in _KNOWN_ADJECTIVES and not _attribute_only(words[-1]):
            # "a puppy plays": what looked like an adjective was the noun
            head = words.pop()
            return Phrase(start, i, head, words)
        i += 1
        for _ in range(2):  # up to two noun modifiers: "terracotta clay pot"
            singular = not bare.endswith("s") or bare.endswith("ss")
            if possessive or not singular or i >= n or not _is_word(tokens[i]) or not _could_be_noun(_bare(tokens[i])):
                break
            words.append(bare)
            bare = _bare(tokens[i])
            possessive = tokens[i] != bare
            i += 1
        return Phrase(start, i, bare, words, possessive=possessive)
    if words:
        head = words.pop()
        return Phrase(start, i, head, words)
    return None


def _could_be_noun(word: str) -> bool:
    if word in _ING_NOUNS or word in _LY_NOUNS:
        return True
    return not (
        word in FUNCTION_WORDS or word in DETERMINERS or word in _VERBS or word.isdigit()
        or _attribute_only(word)  # material words can be nouns: "a glass marble", "a stone wall"
        or _looks_verbal(word) or word.endswith("ing")
    )


def _attribute_only(word: str) -> bool:
    """Attribute words that are never nouns (colours, sizes, …; materials such as 'glass' can be)."""
    return word in FAMILY_OF and FAMILY_OF[word] != "material"


def _adverb(word: str) -> bool:
    return word.endswith("ly") and word not in _LY_NOUNS


_ING_NOUNS = frozenset({
    "ceiling", "building", "painting", "ring", "king", "wing", "string", "swing", "pudding", "icing", "frosting",
    "railing", "seedling", "sapling", "duckling", "earring", "stuffing", "clothing", "evening", "morning",
    "spring", "wedding", "dumpling", "bedding", "lightning", "sibling", "awning", "drawing", "filling", "topping",
})
_LY_NOUNS = frozenset({"fly", "lily", "belly", "jelly", "butterfly", "dragonfly", "firefly", "family", "holly", "bully"})


#: Verbs that often follow a singular noun ("make the cat jump", "the cat sat"), so they end a phrase.
_VERBS = frozenset({
    "jump", "roar", "pop", "melt", "fall", "run", "fly", "eat", "drink", "sit", "stand", "chase", "hunt", "play",
    "sleep", "swim", "grow", "bloom", "break", "shatter", "spill", "pour", "roll", "bounce", "burn", "freeze",
    "boil", "float", "sink", "move", "push", "pull", "hit", "kick", "throw", "catch", "look", "wilt", "crack",
    "explode", "burst", "glow", "shine", "rise", "drop", "slide", "climb", "dance", "sing", "bark", "bite",
    "attack", "flee", "escape", "hide", "wait", "rest", "lie", "sway", "bend", "collapse", "tip", "leak",
    "drip", "fade", "rot", "ripen", "fill", "land", "appear", "stay", "remain", "hold", "carry", "wear",
    "sat", "ran", "fell", "ate", "broke", "flew", "drank", "caught", "threw", "took", "bit", "froze", "grew",
    "drew", "sank", "swam", "rose", "stood", "lay", "hid", "got", "went", "came", "saw", "made", "put", "cut",
    "held", "kept", "found", "gave", "began", "blew", "shook", "spun", "stuck", "struck", "swung", "tore",
    "wore", "woke", "won", "fed", "led", "met", "sent", "built", "burnt", "lit", "slid", "split", "spread", "shut",
    # imperatives that start an edit's next clause ("… and make the cube green")
    "make", "let", "paint", "add", "place", "show", "give", "keep", "set", "draw", "change", "replace", "swap",
    "remove", "switch", "lift", "wipe", "take", "open", "close", "cover", "wrap", "tie", "mix", "bake", "colour",
    "color", "turn", "become", "leave", "bring", "pick", "tilt", "flip", "rotate",
})


_REPLACE_PATTERNS = (
    re.compile(r"\b(?:replace|replaces|replaced)\s+(?P<old>.+?)\s+(?:with|by)\s+(?P<new>(?:a|an|the|some|one|two|three)\s.+)"),
    re.compile(r"\b(?:swap|swaps|exchange)\s+(?:out\s+)?(?P<old>.+?)\s+(?:for|with)\s+(?P<new>(?:a|an|the|some|one|two|three)\s.+)"),
    re.compile(r"(?P<old>(?:a|an|the)\s.+?)\s+(?:is|are)\s+replaced\s+(?:by|with)\s+(?P<new>(?:a|an|the|some)\s.+)"),
    re.compile(r"\b(?:turn|turns|transform|transforms|change|changes|convert)\s+(?P<old>(?:a|an|the)\s.+?)\s+(?:into|to)\s+(?P<new>(?:a|an|some)\s.+)"),
    re.compile(r"(?P<old>(?:a|an|the)\s.+?)\s+(?:becomes|become|turns\s+into|transforms\s+into|changes\s+into)\s+(?P<new>(?:a|an|some)\s.+)"),
)
_REMOVE_VERBS = frozenset({"remove", "removes", "delete", "erase", "erases"})


def _clauses(tokens: list[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for token in tokens:
        if token in (".", ";", "!", "?", "\n", ":"):
            if clauses[-1]:
                clauses.append([])
        else:
            clauses[-1].append(token)
    return [c for c in clauses if c]


def apply_text(scene: Scene, text: str, *, step: int) -> Scene:
    """Apply a prompt or edit instruction to ``scene`` (in place) as step ``step``; returns the scene.

    Order within each clause: replacement or removal first (so "replace the glass with a red ball"
    colours the ball), then things and parts, attributes (overriding same-family words), relations,
    and finally the clause itself is kept as a fact.
    """
    scene.step = max(scene.step, step)
    for quoted in quoted_texts(text):
        if quoted not in scene.texts:
            scene.texts.append(quoted)
    # quoted text is something to write, not words describing the scene
    for clause in _clauses(tokenize(_QUOTED.sub(" quoted text ", text))):
        clause = _apply_replacements(scene, _without_negated(clause), step)
        if clause is None:
            continue
        phrases = noun_phrases(clause)
        _register_things(scene, clause, phrases)
        _apply_attributes(scene, clause, phrases, step)
        _apply_relations(scene, clause, phrases)
        if any(_is_word(t) for t in clause):
            scene.facts.append(Fact([t for t in clause if t != ","], step))
    return scene


def _without_negated(clause: list[str]) -> list[str]:
    """Drop "instead of <phrase>": it names what the picture must not show."""
    for k in range(len(clause) - 1):
        if clause[k] == "instead" and clause[k + 1] == "of":
            rest = clause[k + 2:]
            phrases = noun_phrases(rest)
            if phrases and phrases[0].start == 0:
                end = phrases[0].end
            else:  # "instead of white", "instead of red and blue"
                end = 0
                while end < len(rest) and (rest[end] in FAMILY_OF or rest[end] in ("and", "or", ",")):
                    end += 1
            return clause[:k] + _without_negated(rest[end:])
    return clause


def _apply_replacements(scene: Scene, clause: list[str], step: int) -> list[str] | None:
    """Handle 'replace the X with a Y' and 'remove the X'; returns the clause left to process."""
    for k, token in enumerate(clause):
        if token in _REMOVE_VERBS:
            rest = clause[k + 1:]
            phrases = noun_phrases(rest)
            if phrases and phrases[0].start == 0 and rest[0] in DETERMINERS:
                _drop(scene, phrases[0].head, step)
                remaining = rest[phrases[0].end:]
                return remaining if any(_is_word(t) and t not in FUNCTION_WORDS for t in remaining) else None
    text = " ".join(clause)
    for pattern in _REPLACE_PATTERNS:
        match = pattern.search(text)
        if not match:
            continue
        old_tokens = tokenize(match.group("old"))
        new_tokens = tokenize(match.group("new"))
        old = noun_phrases(old_tokens) or ([Phrase(0, len(old_tokens), old_tokens[-1], [])] if old_tokens else [])
        new = noun_phrases(new_tokens)
        if not old or not new or _attribute_only(new[0].head) or new[0].head in ATTRIBUTE_NOUNS:
            continue  # "turn the mane red", "change the fur to a golden colour": attribute changes
        if any(p.owner is not None or p.possessive for p in old):
            continue  # "change the eraser's back to …" changes a part, it does not replace a thing
        if scene.find(old[-1].head) is None and scene.find_part(old[-1].head) is not None:
            continue
        _replace(scene, old[-1].head, new[0], step)
        return new_tokens
    return clause


def _replace(scene: Scene, old_name: str, new: Phrase, step: int) -> None:
    thing = scene.find(old_name)
    if thing is None:
        return
    previous = thing.name
    thing.name = new.head
    thing.words = [w for w in new.modifiers if w not in FAMILY_OF]
    thing.attrs = {}
    thing.parts = {}
    for word in new.modifiers:
        if word in FAMILY_OF:
            thing.attrs.setdefault(FAMILY_OF[word], []).append(word)
    key = stem(previous)
    scene.relations = [
        (new.head if stem(a) == key else a, r, new.head if stem(b) == key else b) for a, r, b in scene.relations
    ]
    # sentences about the replaced thing described it, not its replacement
    scene.facts = [f for f in scene.facts if f.step >= step or key not in {stem(w) for w in f.words}]


def _drop(scene: Scene, name: str, step: int) -> None:
    """Remove a thing (or a part) and the older sentences that described it."""
    thing = scene.find(name)
    part = scene.find_part(name) if thing is None else None
    if thing is not None:
        key = stem(thing.name)
        scene.things.remove(thing)
        scene.relations = [r for r in scene.relations if key not in (stem(r[0]), stem(r[2]))]
    elif part is not None:
        key = stem(part[1])
        del part[0].parts[part[1]]
    else:
        return
    scene.facts = [f for f in scene.facts if f.step >= step or key not in {stem(w) for w in f.words}]


def _register_things(scene: Scene, clause: list[str], phrases: list[Phrase]) -> None:
    """New heads become things; 'X with a P', 'X's P' and 'P of the X' become parts of X."""
    for index, phrase in enumerate(phrases):
        if phrase.head in NOT_THINGS or phrase.head in ATTRIBUTE_NOUNS or _attribute_only(phrase.head) or phrase.head.isdigit():
            continue
        owner = _owner_of(scene, clause, phrases, index)
        if owner is not None:
            phrase.owner = owner.name
            if scene.find(phrase.head) is None or scene.find(phrase.head) is owner:
                owner.parts.setdefault(phrase.head, {})
            continue
        if scene.find(phrase.head) is None and scene.find_part(phrase.head) is None and len(scene.things) < MAX_THINGS:
            scene.things.append(Thing(phrase.head, [w for w in phrase.modifiers if w not in FAMILY_OF]))


def _owner_of(scene: Scene, clause: list[str], phrases: list[Phrase], index: int) -> Thing | None:
    phrase = phrases[index]
    if phrase.owner is not None:
        owner = scene.find(phrase.owner)
        if owner is None and len(scene.things) < MAX_THINGS:
            owner = Thing(phrase.owner)
            scene.things.append(owner)
        return owner
    if index > 0:
        before = phrases[index - 1]
        between = clause[before.end:phrase.start]
        if between == ["with"] and scene.find(before.head) is not None:
            return scene.find(before.head)
        if between == ["and"] and before.owner is not None and scene.find(before.owner) is not None:
            return scene.find(before.owner)  # "with a grey pad and a blue back"
    if index + 1 < len(phrases):
        after = phrases[index + 1]
        between = clause[phrase.end:after.start]
        if between == ["of"] and scene.find(phrase.head) is None and scene.find(after.head) is not None:
            known_part = scene.find_part(phrase.head)
            if known_part is not None or phrase.head in _PART_WORDS:
                return scene.find(after.head)
    return None


_PART_WORDS = frozenset({
    "mane", "tail", "head", "eyes", "eye", "ears", "ear", "fur", "wings", "wing", "leaves", "leaf", "petals",
    "petal", "stem", "roof", "door", "handle", "lid", "hair", "shell", "feathers", "beak", "legs", "paws",
    "horn", "horns", "trunk", "collar", "shirt", "hat", "label", "cover", "screen", "wheels", "wheel", "spots",
    "stripes", "scales", "fins", "skin", "body", "nose", "mouth", "surface", "top", "base", "seat", "cap",
})


def _target(scene: Scene, phrase: Phrase) -> tuple[Thing, str | None] | None:
    """What an attribute applies to: (thing, None) for the thing itself, (thing, part) for a part."""
    if phrase.owner is not None:
        owner = scene.find(phrase.owner)
        if owner is not None:
            if phrase.head in owner.parts:
                return owner, phrase.head
            thing = scene.find(phrase.head)
            if thing is not None:
                return thing, None
            owner.parts.setdefault(phrase.head, {})
            return owner, phrase.head
    thing = scene.find(phrase.head)
    if thing is not None:
        return thing, None
    part = scene.find_part(phrase.head)
    if part is not None:
        return part
    return None


def _apply_attributes(scene: Scene, clause: list[str], phrases: list[Phrase], step: int) -> None:
    """Attach each attribute word to the phrase it modifies or, said of something, the nearest one before."""
    said: set[tuple[int, str | None, str]] = set()
    inside: set[int] = set()
    for index, phrase in enumerate(phrases):
        target = phrase
        if phrase.head in ATTRIBUTE_NOUNS and index > 0:
            target = phrases[index - 1]  # "… back to a fuzzy pink texture": the back is fuzzy and pink
        for word in phrase.modifiers:
            if word in FAMILY_OF:
                _set_attribute(scene, target, word, step, said)
        inside.update(range(phrase.start, phrase.end))
    for pos, token in enumerate(clause):
        if pos in inside or token not in FAMILY_OF:
            continue
        before = [p for p in phrases if p.end <= pos]
        after = [p for p in phrases if p.start > pos]
        phrase = before[-1] if before else (after[0] if after else None)
        if phrase is not None:
            _set_attribute(scene, phrase, token, step, said)


def _set_attribute(scene: Scene, phrase: Phrase, word: str, step: int, said: set[tuple[int, str | None, str]]) -> None:
    """Set one attribute word; several of one family in a clause add up ("black and white"), a later clause replaces."""
    family = FAMILY_OF[word]
    if phrase.head == "background" and family == "colour":
        scene.background = word
        return
    target = _target(scene, phrase)
    if target is None:
        return
    thing, part = target
    attrs = thing.attrs if part is None else thing.parts.setdefault(part, {})
    old = attrs.get(family, [])
    key = (id(thing), part, family)
    if key in said:
        if word not in old:
            attrs[family] = old + [word]
        return
    said.add(key)
    attrs[family] = [word]
    stale = [w for w in old if w != word]
    if stale:
        _forget(scene, part or thing.name, stale, step)


def _forget(scene: Scene, noun: str, words: list[str], step: int) -> None:
    """Remove overridden attribute words from earlier facts that talk about ``noun``."""
    key = stem(noun)
    gone = set(words)
    for fact in scene.facts:  # the clause being applied is not among them yet
        if key in {stem(w) for w in fact.words}:
            fact.words = [w for w in fact.words if w not in gone]


def _apply_relations(scene: Scene, clause: list[str], phrases: list[Phrase]) -> None:
    things = [p for p in phrases if p.owner is None and scene.find(p.head) is not None]
    if len(things) < 2:
        return
    pos = 0
    while pos < len(clause):
        for phrase_words, relation in RELATION_PHRASES:
            width = len(phrase_words)
            if tuple(clause[pos:pos + width]) == phrase_words:
                subject = [p for p in things if p.end <= pos]
                obj = [p for p in things if p.start >= pos + width]
                if subject and obj and subject[-1].head != obj[0].head:
                    triple = (scene.find(subject[-1].head).name, relation, scene.find(obj[0].head).name)  # type: ignore[union-attr]
                    scene.relations = [r for r in scene.relations if (r[0], r[2]) != (triple[0], triple[2])]
                    scene.relations.append(triple)
                pos += width - 1
                break
        pos += 1
