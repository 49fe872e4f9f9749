"""Noun phrases for the sim reference backend: a shallow, deterministic chunker.

sim needs to know which words of a clause name things and which describe them, but a real parser
would make its outputs depend on a model. So a phrase starts only where English makes it obvious —
after a determiner, after a possessive ("the lion's mane"), or after "and"/"or" that continues a
phrase — and ends at the first word that cannot belong to it. The word lists below are the guesses
that keep "a puppy plays" (noun, then verb) apart from "a playful puppy" (adjective, then noun).
"""

from __future__ import annotations

from dataclasses import dataclass

from .sim_words import (
    DETERMINERS,
    FAMILY_OF,
    FUNCTION_WORDS,
    is_attribute_only,
    is_word,
)

_ADJECTIVE_SUFFIXES = ("y", "ed", "ful", "ous", "ish", "ic", "al", "ive", "less", "ing", "en")
_KNOWN_ADJECTIVES = frozenset({
    "old", "young", "tall", "short", "long", "bright", "dark", "light", "pale", "deep", "heavy", "thin", "thick",
    "fat", "wide", "narrow", "round", "square", "flat", "soft", "hard", "sharp", "loose", "tight", "clean",
    "fresh", "ripe", "raw", "ancient", "modern", "wild", "tame", "cute", "majestic", "gentle", "fierce",
    "strong", "weak", "quiet", "loud", "slow", "fast", "bold", "vivid", "single", "lone", "giant", "baby",
    "adult", "little", "elegant", "sleek", "tidy", "messy", "neat", "plain", "simple", "ornate", "vast",
})
#: Nouns that end like a participle or an adverb, so the suffix rules would misread them.
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


@dataclass
class Phrase:
    """A noun phrase found in a clause: token span, head noun, modifiers, and an owner for parts."""

    start: int
    end: int  # exclusive
    head: str
    modifiers: list[str]
    possessive: bool = False
    owner: str | None = None


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
        elif found and found[-1].possessive and found[-1].end == i and is_word(token) and token not in FUNCTION_WORDS:
            start = i  # "the lion's mane"
        elif token in ("and", "or") and found and found[-1].end == i and i + 1 < n:
            nxt = tokens[i + 1]
            if is_word(nxt) and _could_be_noun(nxt) and not _looks_adjective(nxt):
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
        bare = _without_possessive(token)
        if not is_word(token) or bare in FUNCTION_WORDS or bare in DETERMINERS or _is_adverb(bare):
            break
        possessive = token != bare
        if _looks_adjective(bare) and not possessive and _can_follow_adjective(tokens, i):
            words.append(bare)
            i += 1
            continue
        if words and _looks_verbal(bare) and words[-1] not in _KNOWN_ADJECTIVES and not is_attribute_only(words[-1]):
            # "a puppy plays": what looked like an adjective was the noun
            head = words.pop()
            return Phrase(start, i, head, words)
        i += 1
        for _ in range(2):  # up to two noun modifiers: "terracotta clay pot"
            singular = not bare.endswith("s") or bare.endswith("ss")
            if possessive or not singular or i >= n or not is_word(tokens[i]) or not _could_be_noun(_without_possessive(tokens[i])):
                break
            words.append(bare)
            bare = _without_possessive(tokens[i])
            possessive = tokens[i] != bare
            i += 1
        return Phrase(start, i, bare, words, possessive=possessive)
    if words:
        head = words.pop()
        return Phrase(start, i, head, words)
    return None


def _can_follow_adjective(tokens: list[str], i: int) -> bool:
    """Whether the word at ``i`` can be followed by more of its noun phrase ("tall gray", "black and white")."""
    if i + 1 >= len(tokens):
        return False
    nxt = tokens[i + 1]
    if nxt in ("and", ","):
        return i + 2 < len(tokens) and _looks_adjective(tokens[i + 2])
    return is_word(nxt) and nxt not in FUNCTION_WORDS and nxt not in DETERMINERS and not _is_adverb(nxt)


def _without_possessive(token: str) -> str:
    return token[:-2] if token.endswith(("'s", "s'")) else token


def _looks_verbal(word: str) -> bool:
    """Third-person, past or adverb endings: a word like this after a noun ends its phrase."""
    return word.endswith("s") and not word.endswith(("ss", "us", "is")) or word.endswith(("ed", "ly"))


def _looks_adjective(word: str) -> bool:
    if word in _ING_NOUNS or word in _LY_NOUNS:
        return False
    return word in FAMILY_OF or word in _KNOWN_ADJECTIVES or (len(word) > 4 and word.endswith(_ADJECTIVE_SUFFIXES))


def _could_be_noun(word: str) -> bool:
    if word in _ING_NOUNS or word in _LY_NOUNS:
        return True
    return not (
        word in FUNCTION_WORDS or word in DETERMINERS or word in _VERBS or word.isdigit()
        or is_attribute_only(word)  # material words can be nouns: "a glass marble", "a stone wall"
        or _looks_verbal(word) or word.endswith("ing")
    )


def _is_adverb(word: str) -> bool:
    return word.endswith("ly") and word not in _LY_NOUNS
