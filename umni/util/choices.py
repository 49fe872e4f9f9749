"""The one reading of a multiple-choice reply, shared by every backend.

A reply counts as an answer only when it clearly names exactly one option: the letter alone
(``B``, ``(b)``, ``**C.**``), the letter after an answer cue (``Answer: C``, ``The answer is (C).``),
the letter set off as a label at the start (``C. a cube``, provided the text after it does not name
another option), or the option's own text. Anything else — two letters, a capital that is only the
article ("A cube."), a garbled reply that happens to contain a capital ("consist\\ufffd D-...") —
yields None, which the engine records as an ``invalid`` answer with the raw reply. A letter is never
guessed from loose text, because a guess would be scored as a (wrong or right) answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["parse_choice"]

#: Wrappers models put around a bare answer: markdown emphasis, quotes.
_DECORATION = re.compile(r"[*_`\"'\u201c\u201d\u2018\u2019]")
#: A cue word, then the letter: "Answer: B", "the answer is (B)", "Option D", "answer - A".
#: The cue ignores case; the letter must be a capital unless a colon or '=' sets it off ("Answer: a"),
#: so "the answer is a cube" names nothing.
_CUED = re.compile(
    r"\b(?i:answer|option|choice)\s*(?i:is|would be)?\s*"
    r"(?:[:\uff1a=-]\s*[\(\[]?([A-Za-z])|[\(\[]?([A-Z]))"
    r"[\)\]]?(?=$|[\s.,;:!)\]])"
)
#: The whole first line is one letter (any case), maybe bracketed or punctuated: "B", "(b)", "[B]:".
_BARE = re.compile(r"^[\(\[]?([A-Za-z])[\)\]]?[.:;,!]?$")
#: A capital that opens the reply as a label: "B. a cube", "(B) a cube", "B) cube", "B: cube".
_LABELLED = re.compile(r"^[\(\[]?([A-Z])(?:[\)\]][.:]?|[.:])(?:\s+|$)(.*)$", re.DOTALL)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _letter_index(letter: str, n_options: int) -> int | None:
    index = ord(letter.upper()) - ord("A")
    return index if 0 <= index < n_options else None


def parse_choice(reply: str, options: Sequence[str]) -> int | None:
    """The index of the one option `reply` clearly names, or None (none, several, or unclear)."""
    text = _DECORATION.sub("", reply or "").strip()
    if not text or not options:
        return None
    n = len(options)

    bare = _BARE.match(text.splitlines()[0].strip())
    if bare:
        return _letter_index(bare.group(1), n)

    labelled = _LABELLED.match(text)
    if labelled:
        index = _letter_index(labelled.group(1), n)
        rest = _normalise(labelled.group(2))
        # "B. red cube" contradicts itself when "red cube" is another option's text
        if index is not None and (not rest or _text_match(rest, options) in (None, index)):
            return index
        return None

    cued = {(m.group(1) or m.group(2)).upper() for m in _CUED.finditer(text)}
    if len(cued) == 1:
        return _letter_index(cued.pop(), n)
    if cued:
        return None
    return _text_match(_normalise(text), options)


def _text_match(normalised_reply: str, options: Sequence[str]) -> int | None:
    """The option whose text is the reply, else the one option whose text the reply contains
    (an option contained in another found option, "red" in "dark red", does not count)."""
    texts = [_normalise(o) for o in options]
    exact = [i for i, t in enumerate(texts) if t and t == normalised_reply]
    if exact:
        return exact[0] if len(exact) == 1 else None
    padded = f" {normalised_reply} "
    found = [i for i, t in enumerate(texts) if t and f" {t} " in padded]
    found = [i for i in found if not any(j != i and f" {texts[i]} " in f" {texts[j]} " for j in found)]
    return found[0] if len(found) == 1 else None
