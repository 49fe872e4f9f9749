"""Evaluation graphs: nodes of kinds generate / edit / answer / respond / judge / tool / compute.

A graph is built per case. Edges come from data: a node's prompt, images or inputs name other nodes
(`Ref`), and the node runs once those have finished. Bounded loops (reflection rounds) are unrolled
into ordinary nodes with a `when` condition, so each round caches and resumes like any other node.

    g = Graph("case-1")
    img = g.generate("draw", ["a red cube left of a blue ball"])
    ans = g.answer("q1", ["What colour is the cube?", img], options=["red", "blue"])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from graphlib import CycleError, TopologicalSorter
from typing import Any, Generic, TypeVar

from umni.backends import roles as R
from umni.graph.nodes import ImageFile, Node, OutputType, PromptPart, Ref, _callable_name, _parts
from umni.graph.registry import NodeShape, find_kind, known_kinds
from umni.util.errors import ConfigError
from umni.util.policy import CachePolicy, RetryPolicy

H = TypeVar("H")


class Graph(Generic[H]):
    """The nodes of one case. Builder methods return a `Ref` to the new node's output.

    `handles` is what a protocol's `build` keeps of the Refs it made (any typed object: a
    dataclass or pydantic model of Refs); the runner passes it on with the case's outcomes
    (`umni.outcomes.CaseResult`), so `record` reads outcomes by handle, not by node id string.
    """

    def __init__(self, case_id: str, handles: H | None = None) -> None:
        self.case_id = case_id
        self.nodes: dict[str, Node] = {}
        self.handles: H | None = handles

    def with_handles(self, handles: H) -> Graph[H]:
        """Keep `handles` with the graph (returns the graph, for ``return g.with_handles(...)``)."""
        self.handles = handles
        return self

    def add(self, node: Node) -> Ref:
        if node.id in self.nodes:
            raise ConfigError(f"graph for case '{self.case_id}': node id '{node.id}' is used twice")
        kind = find_kind(node.kind)
        if kind is not None and kind.default_role is not None and node.role is None:
            node.role = kind.default_role
        self.nodes[node.id] = node
        return Ref(node.id, type=kind.output_type(node) if kind is not None else "any")

    def generate(self, id: str, prompt: str | Sequence[PromptPart], *, role: str | None = None, **params: Any) -> Ref:
        """An image from an interleaved prompt."""
        return self.add(Node(id, "generate", role=role, prompt=_parts(prompt), params=params))

    def edit(
        self,
        id: str,
        images: ImageFile | Ref | Sequence[ImageFile | Ref],
        instruction: str | Sequence[PromptPart],
        *,
        role: str | None = None,
        **params: Any,
    ) -> Ref:
        """An image made by editing `images` as `instruction` says."""
        imgs = (images,) if isinstance(images, (ImageFile, Ref)) else tuple(images)
        return self.add(Node(id, "edit", role=role, images=imgs, prompt=_parts(instruction), params=params))

    def answer(
        self, id: str, prompt: str | Sequence[PromptPart], options: Sequence[str], *, role: str | None = None, **params: Any
    ) -> Ref:
        """A multiple-choice answer: output {"index", "text", "mode"}."""
        return self.add(Node(id, "answer", role=role, prompt=_parts(prompt), params={"options": list(options), **params}))

    def respond(self, id: str, prompt: str | Sequence[PromptPart], *, role: str | None = None, **params: Any) -> Ref:
        """Free text (a plan, a rewrite, a critique): output {"text"}."""
        return self.add(Node(id, "respond", role=role, prompt=_parts(prompt), params=params))

    def judge(
        self,
        id: str,
        prompt: str | Sequence[PromptPart],
        parse: Callable[[str], Any],
        *,
        repeat: int = 0,
        role: str | None = None,
        when: Callable[..., bool] | None = None,
        **params: Any,
    ) -> Ref:
        """A judge's verdict: output {"text", "value"} where value = parse(text).

        `parse` raises `ParseFailure` on answers outside the requested format; the call is then
        repeated a bounded number of times and finally recorded as a parse failure.
        """
        params = {"parser": _callable_name(parse), **params}
        node = Node(id, "judge", role=role, prompt=_parts(prompt), params=params, parse=parse, repeat=repeat, when=when)
        return self.add(node)

    def tool(self, id: str, role: str, image: ImageFile | Ref, **params: Any) -> Ref:
        """A tool call (ocr / detect / embed) on one image: output {"value"}."""
        return self.add(Node(id, "tool", role=role, images=(image,), params=params))

    def compute(
        self,
        id: str,
        fn: Callable[..., Any],
        *,
        version: str = "1",
        when: Callable[..., bool] | None = None,
        const: Mapping[str, Any] | None = None,
        **inputs: Ref,
    ) -> Ref:
        """Plain Python over other nodes' outputs (images arrive as PIL images): output {"value"}.

        `const` holds fixed JSON-able arguments (an expected answer, a threshold), passed to `fn`.
        The key covers `fn`'s code, closure values, defaults and the globals it reads (umni.codeid),
        so an edited function or another captured value is other work; `version` remains for
        changes the fingerprint cannot see (a helper reached through a module attribute, data read
        from a file). An input may not be named `version`, `when` or `const`: use `compute_with`.
        """
        for keyword, value in (("version", version), ("when", when), ("const", const)):
            if isinstance(value, Ref):
                raise ConfigError(
                    f"case '{self.case_id}', node '{id}': an input named '{keyword}' collides with compute()'s own "
                    f"keyword; pass the inputs as a mapping with g.compute_with('{id}', fn, {{'{keyword}': ...}})"
                )
        return self.compute_with(id, fn, inputs, version=version, when=when, const=const)

    def compute_with(
        self,
        id: str,
        fn: Callable[..., Any],
        inputs: Mapping[str, Ref],
        *,
        version: str = "1",
        when: Callable[..., bool] | None = None,
        const: Mapping[str, Any] | None = None,
    ) -> Ref:
        """`compute` with the inputs given as a mapping: any input name works, `version` included."""
        node = Node(id, "compute", inputs=dict(inputs), fn=fn, version=version, when=when)
        node.params = {"fn": _callable_name(fn), "const": dict(const or {})}
        return self.add(node)

    def policy(self, ref: Ref, *, retry: RetryPolicy | None = None, cache: CachePolicy | None = None) -> Ref:
        """Attach a retry and/or cache policy to the node behind `ref` (not part of its key)."""
        node = self.nodes[ref.node]
        if retry is not None:
            node.retry = retry
        if cache is not None:
            node.cache = cache
        return ref

    def when(self, ref: Ref, condition: Callable[..., bool], **inputs: Ref) -> None:
        """Run the node behind `ref` only if `condition(**input values)` holds."""
        node = self.nodes[ref.node]
        node.when = condition
        node.gate.update(inputs)

    # ----------------------------------------------------------------- validation
    def required_roles(self) -> set[str]:
        return {n.role for n in self.nodes.values() if n.role}

    def validate(self, bound_roles: Mapping[str, object] | None = None) -> list[str]:
        """Check the graph; return node ids in a dependency order. Errors name the node."""
        kinds: dict[str, NodeShape] = {}
        for node in self.nodes.values():
            found = find_kind(node.kind)
            if found is None:
                raise ConfigError(
                    f"case '{self.case_id}', node '{node.id}': unknown node kind '{node.kind}' (known: {', '.join(known_kinds())})"
                )
            kinds[node.id] = found
        upstream: dict[str, list[str]] = {}
        for node in self.nodes.values():
            kind = kinds[node.id]
            upstream[node.id] = []
            for ref in node.refs():
                if ref.node not in self.nodes:
                    raise ConfigError(
                        f"case '{self.case_id}', node '{node.id}': input refers to node '{ref.node}', which is not in the graph"
                    )
                upstream[node.id].append(ref.node)
            where = f"case '{self.case_id}', node '{node.id}'"
            kind.check(node, where)
            for slot, ref, accepted in kind.slots(node):
                produced = kinds[ref.node].output_type(self.nodes[ref.node])
                _check_ref_type(where, slot, ref, produced, accepted)
            node.code_identity(self.case_id)
            if bound_roles is not None and node.role and node.role not in bound_roles and R.DERIVED_ROLES.get(node.role) not in bound_roles:
                raise ConfigError(
                    f"case '{self.case_id}', node '{node.id}' needs role '{node.role}', which the binding does not fill "
                    f"(bound: {', '.join(sorted(bound_roles)) or 'nothing'}); bind it with --role {node.role}=SPEC"
                )
        return _dependency_order(self.case_id, upstream)

    def produces(self, ref: Ref) -> OutputType:
        """What the node behind `ref` outputs (image / text / value), from its kind."""
        node = self.nodes[ref.node]
        kind = find_kind(node.kind)
        return kind.output_type(node) if kind is not None else "any"


def _check_ref_type(where: str, slot: str, ref: Ref, produced: OutputType, accepted: tuple[OutputType, ...]) -> None:
    if ref.type != "any" and produced != "any" and ref.type != produced:
        raise ConfigError(f"{where}: {slot} is a Ref typed {ref.type}, but node '{ref.node}' outputs {produced}")
    if produced != "any" and "any" not in accepted and produced not in accepted:
        raise ConfigError(f"{where}: {slot} needs {' or '.join(accepted)}, but node '{ref.node}' outputs {produced}")


def _dependency_order(case_id: str, upstream: dict[str, list[str]]) -> list[str]:
    """Every node after its inputs: the nodes with no inputs in graph order, then each node as its
    last input is placed (the order `graphlib.TopologicalSorter.static_order` gives). Written out
    because the sorter's unconditional cycle search cost more than the rest of a case's checks;
    the sorter is still what names a cycle."""
    successors: dict[str, list[str]] = {nid: [] for nid in upstream}
    remaining = {}
    for nid, inputs in upstream.items():
        remaining[nid] = len(inputs)
        for up in inputs:
            successors[up].append(nid)
    order = [nid for nid, count in remaining.items() if count == 0]
    for nid in order:  # grows while it is read
        for after in successors[nid]:
            remaining[after] -= 1
            if remaining[after] == 0:
                order.append(after)
    if len(order) == len(upstream):
        return order
    try:
        TopologicalSorter(upstream).prepare()
    except CycleError as exc:
        cycle = " -> ".join(exc.args[1])  # each node an input of the next
        raise ConfigError(f"case '{case_id}': the graph has a cycle: {cycle}") from None
    raise AssertionError("a graph that cannot be ordered has a cycle")  # pragma: no cover
