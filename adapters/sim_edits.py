"""Applying prompt and edit text to a sim scene: replacements, attribute overrides, relations, facts.

A generation prompt and an edit instruction are handled by the same rules (a prompt is step 0 applied
to an empty scene), so what an edit changes is exactly what a prompt would have said. The rules are
deliberately shallow: a clause either replaces or removes a thing, or names things and parts, gives
them attribute words, and relates them in space; every clause is also kept as a fact. A new attribute
word of a family replaces the older one everywhere it was recorded, which is what makes "make the
lion's mane red" answerable as red afterwards.
"""

from __future__ import annotations

import re

from .sim_phrases import Phrase, noun_phrases
from .sim_scene import MAX_THINGS, Fact, Scene, Thing
from .sim_words import (
    DETERMINERS,
    FAMILY_OF,
    FUNCTION_WORDS,
    NOT_THINGS,
    is_attribute_only,
    is_word,
    stem,
    tokenize,
)

#: Simple spatial relations sim can draw, longest phrase first; value = canonical relation.
RELATION_PHRASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("to", "the", "left", "of"), "left of"), (("on", "the", "left", "of"), "left of"), (("left", "of"), "left of"),
    (("to", "the", "right", "of"), "right of"), (("on", "the", "right", "of"), "right of"),
    (("right", "of"), "right of"), (("on", "top", "of"), "on"), (("in", "front", "of"), "in front of"),
    (("next", "to"), "next to"), (("beside",), "next to"), (("near",), "next to"), (("above",), "above"),
    (("over",), "above"), (("below",), "below"), (("beneath",), "under"), (("underneath",), "under"),
    (("under",), "under"), (("behind",), "behind"), (("on",), "on"), (("atop",), "on"), (("inside",), "inside"),
)
#: Heads that name an attribute, so the words before them describe the thing mentioned earlier.
ATTRIBUTE_NOUNS = frozenset({
    "texture", "color", "colour", "pattern", "finish", "shade", "look", "material", "tone", "hue", "coat", "paint",
    "glaze", "sheen",
})
#: Nouns that are usually part of something, so "the P of the X" makes P a part of X.
_PART_WORDS = frozenset({
    "mane", "tail", "head", "eyes", "eye", "ears", "ear", "fur", "wings", "wing", "leaves", "leaf", "petals",
    "petal", "stem", "roof", "door", "handle", "lid", "hair", "shell", "feathers", "beak", "legs", "paws",
    "horn", "horns", "trunk", "collar", "shirt", "hat", "label", "cover", "screen", "wheels", "wheel", "spots",
    "stripes", "scales", "fins", "skin", "body", "nose", "mouth", "surface", "top", "base", "seat", "cap",
})
_REPLACE_PATTERNS = (
    re.compile(r"\b(?:replace|replaces|replaced)\s+(?P<old>.+?)\s+(?:with|by)\s+(?P<new>(?:a|an|the|some|one|two|three)\s.+)"),
    re.compile(r"\b(?:swap|swaps|exchange)\s+(?:out\s+)?(?P<old>.+?)\s+(?:for|with)\s+(?P<new>(?:a|an|the|some|one|two|three)\s.+)"),
    re.compile(r"(?P<old>(?:a|an|the)\s.+?)\s+(?:is|are)\s+replaced\s+(?:by|with)\s+(?P<new>(?:a|an|the|some)\s.+)"),
    re.compile(r"\b(?:turn|turns|transform|transforms|change|changes|convert)\s+(?P<old>(?:a|an|the)\s.+?)\s+(?:into|to)\s+(?P<new>(?:a|an|some)\s.+)"),
    re.compile(r"(?P<old>(?:a|an|the)\s.+?)\s+(?:becomes|become|turns\s+into|transforms\s+into|changes\s+into)\s+(?P<new>(?:a|an|some)\s.+)"),
)
_REMOVE_VERBS = frozenset({"remove", "removes", "delete", "erase", "erases"})
_CLAUSE_ENDS = frozenset({".", ";", "!", "?", "\n", ":"})
_QUOTED = re.compile(r"[\"\u201c\u2018]([^\"\u201d\u2019\n]{1,40})[\"\u201d\u2019]")

#: One attribute setting within a clause: (id of the thing, part or None, family).
_Said = set[tuple[int, str | None, str]]


def quoted_texts(text: str) -> list[str]:
    """Text the prompt asks to be written in the picture (between double or curly quotes)."""
    return [m.strip() for m in _QUOTED.findall(text) if m.strip()][:3]


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
        replaced = _apply_replacements(scene, _without_negated(clause), step)
        if replaced is None:
            continue
        clause = replaced
        phrases = noun_phrases(clause)
        _register_things(scene, clause, phrases)
        _apply_attributes(scene, clause, phrases, step)
        _apply_relations(scene, clause, phrases)
        if any(is_word(t) for t in clause):
            scene.facts.append(Fact([t for t in clause if t != ","], step))
    return scene


def _clauses(tokens: list[str]) -> list[list[str]]:
    """Split at sentence punctuation: each clause is applied, and kept as a fact, on its own."""
    clauses: list[list[str]] = [[]]
    for token in tokens:
        if token in _CLAUSE_ENDS:
            if clauses[-1]:
                clauses.append([])
        else:
            clauses[-1].append(token)
    return [c for c in clauses if c]


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


# -- replacing and removing -------------------------------------------------------------------------


def _apply_replacements(scene: Scene, clause: list[str], step: int) -> list[str] | None:
    """Handle 'replace the X with a Y' and 'remove the X'; returns the clause left to process."""
    for k, token in enumerate(clause):
        if token in _REMOVE_VERBS:
            rest = clause[k + 1:]
            phrases = noun_phrases(rest)
            if phrases and phrases[0].start == 0 and rest[0] in DETERMINERS:
                _remove(scene, phrases[0].head, step)
                remaining = rest[phrases[0].end:]
                return remaining if any(is_word(t) and t not in FUNCTION_WORDS for t in remaining) else None
    text = " ".join(clause)
    for pattern in _REPLACE_PATTERNS:
        match = pattern.search(text)
        if not match:
            continue
        old_tokens = tokenize(match.group("old"))
        new_tokens = tokenize(match.group("new"))
        old = noun_phrases(old_tokens) or ([Phrase(0, len(old_tokens), old_tokens[-1], [])] if old_tokens else [])
        new = noun_phrases(new_tokens)
        if not old or not new or is_attribute_only(new[0].head) or new[0].head in ATTRIBUTE_NOUNS:
            continue  # "turn the mane red", "change the fur to a golden colour": attribute changes
        if any(p.owner is not None or p.possessive for p in old):
            continue  # "change the eraser's back to …" changes a part, it does not replace a thing
        if scene.find(old[-1].head) is None and scene.find_part(old[-1].head) is not None:
            continue
        _replace(scene, old[-1].head, new[0], step)
        return new_tokens
    return clause


def _replace(scene: Scene, old_name: str, new: Phrase, step: int) -> None:
    """Turn a thing into another in place, keeping its position in relations but none of its looks."""
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
    _drop_older_facts_about(scene, key, step)


def _remove(scene: Scene, name: str, step: int) -> None:
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
    _drop_older_facts_about(scene, key, step)


def _drop_older_facts_about(scene: Scene, noun_stem: str, step: int) -> None:
    """Forget what steps before ``step`` said about a noun that is gone or has become something else."""
    scene.facts = [f for f in scene.facts if f.step >= step or not f.mentions(noun_stem)]


# -- things and parts -------------------------------------------------------------------------------


def _register_things(scene: Scene, clause: list[str], phrases: list[Phrase]) -> None:
    """New heads become things; 'X with a P', 'X's P' and 'P of the X' become parts of X."""
    for index, phrase in enumerate(phrases):
        if phrase.head in NOT_THINGS or phrase.head in ATTRIBUTE_NOUNS or is_attribute_only(phrase.head) or phrase.head.isdigit():
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
    """The thing that phrase ``index`` is a part of, judged from the words linking it to its neighbours."""
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


# -- attributes -------------------------------------------------------------------------------------


def _apply_attributes(scene: Scene, clause: list[str], phrases: list[Phrase], step: int) -> None:
    """Attach each attribute word to the phrase it modifies or, said of something, the nearest one before."""
    said: _Said = set()
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
        nearest = before[-1] if before else (after[0] if after else None)
        if nearest is not None:
            _set_attribute(scene, nearest, token, step, said)


def _set_attribute(scene: Scene, phrase: Phrase, word: str, step: int, said: _Said) -> None:
    """Set one attribute word; several of one family in a clause add up ("black and white"), a later clause replaces."""
    family = FAMILY_OF[word]
    if phrase.head == "background" and family == "colour":
        scene.background = word
        return
    target = _attribute_target(scene, phrase)
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
        _strike_words(scene, part or thing.name, stale)


def _attribute_target(scene: Scene, phrase: Phrase) -> tuple[Thing, str | None] | None:
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


def _strike_words(scene: Scene, noun: str, words: list[str]) -> None:
    """Remove overridden attribute words from earlier facts that talk about ``noun``.

    Without this an old "the mane is golden" would still support "golden" after the mane was made red.
    """
    key = stem(noun)
    gone = set(words)
    for fact in scene.facts:  # the clause being applied is not among them yet
        if fact.mentions(key):
            fact.words = [w for w in fact.words if w not in gone]


# -- relations --------------------------------------------------------------------------------------


def _apply_relations(scene: Scene, clause: list[str], phrases: list[Phrase]) -> None:
    """Record "X <relation> Y" between known things; a new relation of the same pair replaces the old."""
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
