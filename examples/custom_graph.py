"""Compose a custom evaluation graph and run it over many cases with the offline reference backend.

    python examples/custom_graph.py
"""

import functools
import tempfile

import anyio

from umni import Bindings, Cache, CaseJob, Graph, Outcome, Runner

COLOURS = ["red", "green", "blue"]


def build(case_id: str, colour: str) -> Graph:
    """One case: draw a cube, recolour it, ask which colour it is, and check the answer."""
    g = Graph(case_id)
    image = g.generate("draw", [f"a {colour} cube to the left of a blue ball"])
    edited = g.edit("recolour", image, "make the cube green")
    answer = g.answer("colour", [edited, "What colour is the cube?"], options=COLOURS)
    g.compute("correct", lambda a: a == COLOURS.index("green"), a=answer)
    return g


def main() -> None:
    cases = {f"case-{i}": colour for i, colour in enumerate(["red", "blue", "red", "blue", "red"])}
    jobs = [CaseJob(i, cid, functools.partial(build, cid, colour)) for i, (cid, colour) in enumerate(cases.items())]
    correct: dict[str, object] = {}

    def case_done(job: CaseJob, graph: Graph, outcomes: dict[str, Outcome]) -> None:
        correct[job.case_id] = outcomes["correct"].value

    with tempfile.TemporaryDirectory() as cache_dir:
        runner = Runner(Bindings.from_specs("sim/umm"), Cache(cache_dir), concurrency=8)
        stats = anyio.run(runner.run, jobs, case_done)
    print(dict(sorted(correct.items())), dict(stats.statuses))


if __name__ == "__main__":
    main()
