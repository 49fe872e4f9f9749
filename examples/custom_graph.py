"""Compose a custom evaluation graph and run it with the offline reference backend.

    python examples/custom_graph.py
"""

import tempfile

import anyio

from umni.bindings import Bindings
from umni.graph import Graph
from umni.runner import Runner
from umni.store import Cache


def build() -> Graph:
    g = Graph("cube")
    image = g.generate("draw", ["a red cube to the left of a blue ball"])
    edited = g.edit("recolour", image, "make the cube green")
    answer = g.answer("colour", [edited, "What colour is the cube?"], options=["red", "green", "blue"])
    g.compute("correct", lambda a: a == 1, a=answer)
    return g


def main() -> None:
    with tempfile.TemporaryDirectory() as cache_dir:
        runner = Runner(Bindings.from_specs("sim/umm"), Cache(cache_dir))
        outcomes = anyio.run(runner.run_graph, build())
        for name, outcome in outcomes.items():
            print(f"{name:10} {outcome.status:9} {outcome.value}")


if __name__ == "__main__":
    main()
