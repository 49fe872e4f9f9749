"""A run made of passes (issue 35 item 7: one run whose Ray pools do not fit together takes turns,
`umni.run.turns.plan_stages`): the generator's roles in one pass, the judge's in the next, over the
same cases and store. It must end where the run in one pass ends: the same records, each node counted
once and with the status it would have had (computed, not cached), failures kept as they were met
without calling the generator again, and the same calls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from umni.backends.bindings import Bindings
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.graph.outcomes import Outcome
from umni.protocols.protocol import get_protocol
from umni.store.cache import Cache
from umni.util.events import EventLog
from umni.util.policy import RetryPolicy

GENERATOR = "sim/umm?skill=0.5&error_rate=0.3"  # about a third of its calls fail, never retried
JUDGE = "sim/umm?skill=0.7"


def run(out: Path, phases: list[frozenset[str]] | None) -> tuple[dict[str, Any], Runner, list[dict[str, Any]]]:
    protocol = get_protocol("umnibench")
    options = protocol.parse_options({})
    cases = protocol.load(protocol.bundled_cases(), options).cases[:4]
    bindings = Bindings.from_specs(GENERATOR, [f"understand={JUDGE}"])
    jobs = [CaseJob(i, protocol.case_id(c), lambda c=c: protocol.build(c, options)) for i, c in enumerate(cases)]
    # each case once more under another id: its nodes share the first's keys, so they come from the
    # store (or from the first's computation in flight) as cached, or share its failure
    jobs += [CaseJob(len(cases) + i, f"again-{i}", lambda c=c: protocol.build(c, options)) for i, c in enumerate(cases)]
    records: dict[str, Any] = {}

    def record(job: CaseJob, graph: Graph, outcomes: dict[str, Outcome]) -> None:
        records[job.case_id] = {nid: (o.status, o.output, o.failure) for nid, o in outcomes.items()}

    runner = Runner(bindings, Cache(out / "cache"), retry=RetryPolicy(max_attempts=1), events=EventLog(out / "events.jsonl"))

    async def go() -> None:
        for phase in phases or [None]:
            if phases is not None:
                runner.next_pass(phase)
            await runner.run(jobs, record)

    anyio.run(go)
    runner.events.close()
    failed = [line for line in (out / "events.jsonl").read_text().splitlines() if '"node.failed"' in line]
    return records, runner, failed


def test_a_run_in_passes_ends_where_the_run_in_one_pass_ends(tmp_path: Path) -> None:
    whole, one, failed_once = run(tmp_path / "one", None)
    parts, passes, failed_in_passes = run(tmp_path / "passes", [frozenset({"generate", "edit"}), frozenset({"understand"})])
    assert parts == whole
    assert passes.stats.statuses == one.stats.statuses and one.stats.statuses["cached"] > 0
    assert one.stats.statuses["failed"] > 0 and one.stats.statuses["computed"] > 0  # both kinds of outcome are met
    assert passes.stats.role_statuses == one.stats.role_statuses and passes.stats.failures == one.stats.failures
    assert passes.stats.calls == one.stats.calls  # a failed generate node is not called again in the judge's pass
    assert len(failed_in_passes) == len(failed_once)  # each failure logged once, by the pass that met it
    statuses = Counter(s for record in parts.values() for s, _, _ in record.values())
    assert "pending" not in statuses


def test_the_first_pass_alone_leaves_the_judge_pending(tmp_path: Path) -> None:
    records, runner, _ = run(tmp_path / "first", [frozenset({"generate", "edit"})])
    assert runner.stats.statuses["pending"] > 0 and runner.stats.calls["understand"] == 0 and runner.held_back["understand"] > 0
