"""A small scripted backend for engine tests: deterministic, counts its calls, fails on request.

It is the system under test's counterpart, not a stand-in for it: the runner, cache and store
under test are the real ones.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import anyio
from PIL import Image, ImageDraw

from umni.backends.contract import Backend
from umni.backends.roles import ChoiceReply, ImageReply, TextReply
from umni.util.errors import BackendError
from umni.util.spec import Spec


def _digest(*parts: object) -> int:
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


class ScriptedBackend(Backend):
    """Draws a colour derived from its prompt; answers option `digest % n`; counts every call.

    `fail_times[method]` makes the first N calls of that method raise; `retryable` picks the kind.
    """

    provider = "scripted"
    roles = frozenset({"understand", "generate", "edit", "judge"})

    def __init__(self, name: str = "m", *, delay: float = 0.0, fail_times: dict[str, int] | None = None,
                 retryable: bool = True, judge_text: str = "Score: 1", tag: str = "") -> None:
        super().__init__(Spec(provider="scripted", name=name, params=(("tag", tag),) if tag else ()))
        self.delay = delay
        self.fail_times = Counter(fail_times or {})
        self.retryable = retryable
        self.judge_text = judge_text
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0

    async def _enter(self, method: str) -> None:
        self.calls[method] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await anyio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if self.fail_times[method] > 0:
            self.fail_times[method] -= 1
            raise BackendError(f"scripted failure of {method}", retryable=self.retryable)

    def _image(self, *key: object) -> Image.Image:
        d = _digest(self.spec.name, *key)
        image = Image.new("RGB", (32, 32), ((d >> 16) & 255, (d >> 8) & 255, d & 255))
        ImageDraw.Draw(image).text((2, 2), str(d % 97), fill=(0, 0, 0))
        return image

    async def generate(self, parts: Sequence[object], *, seed: int = 0) -> ImageReply:
        await self._enter("generate")
        return ImageReply(self._image("gen", [p for p in parts if isinstance(p, str)], seed))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        await self._enter("edit")
        return ImageReply(self._image("edit", images[0].tobytes()[:64], instruction, seed))

    async def choose(self, parts: Sequence[object], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        await self._enter("choose")
        images = [p.tobytes()[:64] for p in parts if isinstance(p, Image.Image)]
        index = _digest(self.spec.name, images, [p for p in parts if isinstance(p, str)]) % len(options)
        return ChoiceReply(index, options[index], "letter")

    async def respond(self, parts: Sequence[object], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        await self._enter("respond")
        return TextReply(self.judge_text)
