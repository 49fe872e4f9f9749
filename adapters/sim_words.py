"""Words for the sim reference backend: closed vocabularies, tokens, crude stems, content words.

sim/umm does not understand language. Everything it "knows" about a text comes from comparing words:
attribute words come from closed vocabularies (so an attribute can be recognised without a parser),
and texts are compared by the stems of their content words (so "shatters" in a prompt matches
"shattered" in an option, and words every prompt uses cannot decide an answer). Keeping these lists in
one module means the scene, the edit rules and the answering code all agree on what a word is.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
NUMBER_WORDS = frozenset({"one", "two", "three", "four", "five", "six"})
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
    "he", "she", "we", "you", "i", "me", "him", "us", "itself", "themselves", "each", "upon", "within",
    "without", "during", "until", "since", "instead", "becomes", "become", "turns", "turn",
})
#: Words ignored when comparing texts: function words, determiners other than numbers (a count is
#: content), and the words every prompt, edit or question uses.
STOPWORDS = FUNCTION_WORDS | (DETERMINERS - NUMBER_WORDS) | frozenset({
    "make", "makes", "made", "change", "changes", "changed", "set", "let", "show", "shows", "showing", "shown",
    "image", "picture", "photo", "scene", "depict", "depicts", "depicting", "please", "draw", "render", "generate",
    "edit", "new", "appear", "appears", "look", "looks", "like", "view", "visible",
    "s", "it's", "color", "colour", "colored", "coloured",
    "question", "answer", "option", "options", "following", "best", "describes", "describe", "given", "based",
    "currently", "happens", "happen", "happened", "object", "entity", "thing",
})
#: Heads that name the picture (or a place or amount in it) rather than something it shows.
NOT_THINGS = frozenset({
    "scene", "image", "picture", "photo", "background", "foreground", "side", "way", "time", "moment", "style",
    "shape", "size", "texture", "color", "colour", "view", "result", "outcome", "middle", "center", "centre",
    "edge", "corner", "rest", "kind", "type", "sort", "lot", "bit", "part", "number", "pair", "group", "order",
    "distance", "air", "amount", "piece",
})
#: Spellings that mean the same to a judge, folded before and after stemming.
_CANONICAL = {"grey": "gray", "gold": "golden", "colour": "color", "big": "large", "little": "small"}

_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:'s|s')?|[.;!?,:\n]")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (possessive ``'s`` kept on the word) and sentence punctuation.

    The possessive stays attached because it is how noun phrases find a part's owner ("the lion's
    mane"); punctuation stays because it is where clauses end.
    """
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return _TOKEN.findall(text)


def is_word(token: str) -> bool:
    """Whether a token is a word rather than punctuation (``tokenize`` yields both)."""
    return token[0].isalnum()


def is_attribute_only(word: str) -> bool:
    """Attribute words that are never nouns (colours, sizes, …; materials such as 'glass' can be)."""
    return word in FAMILY_OF and FAMILY_OF[word] != "material"


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stem, so 'shatters', 'shattered' and 'shattering' compare equal (no stemming library is installed)."""
    word = _CANONICAL.get(word, word)
    if word.endswith(("'s", "s'")):
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
    """Stems of the words that carry content (no punctuation, no stop words).

    A word is dropped when either it or its stem is a stop word, so inflections of a stop word
    ("depicted", "colours") do not count as content either.
    """
    return {stem(w) for w in words if is_word(w) and w not in STOPWORDS and stem(w) not in STOPWORDS}
