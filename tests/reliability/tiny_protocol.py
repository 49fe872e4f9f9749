"""Test-only pieces: a two-node protocol (draw, then judge) and a backend that answers from a script.

The protocol exists so judge behaviour can be checked through the real run path (evaluation,
records, summary.json, report.html) without depending on a paper protocol's prompts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean
from typing import Any, ClassVar

import anyio
from PIL import Image
from pydantic import BaseModel, ConfigDict

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import EDIT, GENERATE, JUDGE, UNDERSTAND, ChoiceReply, ImageReply, Part, TextReply
from umni.graph.graph import Graph
from umni.graph.outcomes import Outcome
from umni.protocols.caseio import read_jsonl
from umni.protocols.protocol import CaseSet, NoOptions, Protocol, View, node_status
from umni.run.evaluation import Prepared, RunRequest, RunResult, evaluate_async
from umni.util.errors import ParseFailure
from umni.util.policy import RetryPolicy
from umni.util.spec import Spec

SCORE = re.compile(r"^\s*Score:\s*([0-2])\s*$", re.MULTILINE)


class TinyCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    prompt: str


def parse_score(text: str) -> int:
    match = SCORE.search(text)
    if match is None:
        raise ParseFailure("no 'Score: <0-2>' line in the judge's answer")
    return int(match.group(1))


class DrawAndJudge(Protocol[TinyCase]):
    name = "draw-and-judge"
    title = "Draw and judge (test protocol)"
    roles = (GENERATE, JUDGE)
    Options = NoOptions

    def bundled_cases(self) -> Path:
        raise NotImplementedError("test protocol: pass a case file")

    def load(self, path: Path, options: BaseModel) -> CaseSet[TinyCase]:
        return CaseSet(path=path, cases=read_jsonl(path, TinyCase))

    def case_id(self, case: TinyCase) -> str:
        return case.id

    def build(self, case: TinyCase, options: BaseModel) -> Graph:
        g = Graph(case.id)
        image = g.generate("image", [case.prompt])
        g.judge("verdict", [image, f"Does the picture show: {case.prompt}?\n\nAnswer format:\nScore: <0-2>"], parse=parse_score)
        return g

    def record(self, case: TinyCase, outcomes: dict[str, Outcome], options: BaseModel) -> dict[str, Any]:
        verdict = outcomes["verdict"]
        said = verdict.output["text"] if verdict.ok and verdict.output else (verdict.failure.raw if verdict.failure else None)
        image = outcomes["image"].image
        return {
            "case_id": case.id,
            "prompt": case.prompt,
            "image": image.sha256 if image else None,
            "score": verdict.value if verdict.ok else None,
            "judge_text": said,
            "nodes": node_status(outcomes),
        }

    def summarize(self, records: list[dict[str, Any]], options: BaseModel) -> dict[str, Any]:
        judged = [r["score"] for r in records if r["score"] is not None]
        return {"mean": mean(judged) if judged else None, "judged": len(judged), "unjudged": len(records) - len(judged)}

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        s = summary["scores"]
        return [("Judged", ["mean", "judged", "unjudged"], [[s["mean"], s["judged"], s["unjudged"]]])]

    def views(self, record: dict[str, Any]) -> list[View]:
        rows = [("prompt", record["prompt"]), ("judge said", record["judge_text"] or "—")]
        return [View("verdict", record["image"], rows, verdict=record["score"] == 2 if record["score"] is not None else None)]


class ScriptedModel(Backend):
    """A backend whose every answer comes from the test: images, judge texts, choices.

    `judge` is a list of replies used in turn (the last one repeats); `image` makes each picture;
    `choose` maps the option count to the reply. `calls` counts calls per method.
    """

    provider: ClassVar[str] = "scripted"
    roles: ClassVar[frozenset[str]] = frozenset({GENERATE, EDIT, UNDERSTAND, JUDGE})

    def __init__(
        self,
        name: str = "model",
        *,
        image: Callable[[], Image.Image | None] = lambda: Image.new("RGB", (32, 32), (200, 40, 40)),
        judge: Sequence[str] = ("Score: 2",),
        choose: Callable[[int], ChoiceReply] = lambda n: ChoiceReply(index=0, text="A", mode="letter"),
    ) -> None:
        super().__init__(Spec.parse(f"scripted/{name}"))
        self._image, self._judge, self._choose = image, list(judge), choose
        self.calls: dict[str, int] = {"generate": 0, "edit": 0, "respond": 0, "choose": 0}

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        self.calls["generate"] += 1
        return ImageReply(image=self._image())  # type: ignore[arg-type]

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        self.calls["edit"] += 1
        return ImageReply(image=self._image())  # type: ignore[arg-type]

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        text = self._judge[min(self.calls["respond"], len(self._judge) - 1)]
        self.calls["respond"] += 1
        return TextReply(text=text)

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        self.calls["choose"] += 1
        return self._choose(len(options))


def run_protocol(
    protocol: Protocol[Any], cases: Path, out: Path, bindings: Bindings, *, retry: RetryPolicy = RetryPolicy()
) -> RunResult:
    """The real run path (run.json, run.db, results, summary, report) with test-made bindings."""
    options = protocol.parse_options({})
    prepared = Prepared(protocol, options, protocol.load(cases, options), bindings)
    request = RunRequest(protocol=protocol.name, out=out, cases=cases, cache=out.parent / f"{out.name}-cache",
                         retry=retry, progress=False)  # fmt: skip
    return anyio.run(lambda: evaluate_async(request, prepared))
