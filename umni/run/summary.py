"""summary.json: what a run did (counts, failures by kind, calls, usage, cost) and the protocol's
scores, built from the finished case records and this invocation's statistics. Calls and usage add up
over every invocation of a resumed run; `this_invocation` keeps the latest one's own figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel

from umni.backends.bindings import Bindings
from umni.engine.kinds import RunStats
from umni.graph.outcomes import FAILURE_KINDS
from umni.protocols.protocol import CaseSet, Protocol, sum_tallies
from umni.protocols.scores import scores_json
from umni.run.provenance import run_provenance
from umni.store.runfolder import CaseRecord, Counts, Invocation, RunScores, SkippedCase, Summary, Totals


def _sum_counts(a: Mapping[str, int | None], b: Mapping[str, int | None]) -> dict[str, int | None]:
    """Field-wise sum of two usage records; a count unknown (None) on either side stays unknown."""
    total: dict[str, int | None] = {}
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name, 0), b.get(name, 0)
        total[name] = None if x is None or y is None else x + y
    return total


def add_cumulative(summary: Summary, before: Totals, nodes: dict[str, dict[str, int]]) -> None:
    """Make `calls` and `usage` the run's totals over every invocation, and keep this invocation's
    own figures under `this_invocation` (a resume of a finished run reports 0 calls there, not in the
    totals), with its `nodes` by role and status (`RunStats.nodes_by_role`)."""
    now_calls, now_usage = summary.calls, summary.usage
    summary.this_invocation = Invocation(calls=now_calls, usage=now_usage, nodes=nodes)
    calls = dict(before.get("calls", {}))
    for role, n in now_calls.items():
        calls[role] = calls.get(role, 0) + n
    usage = {role: dict(u) for role, u in before.get("usage", {}).items()}
    for role, used in now_usage.items():
        usage[role] = _sum_counts(usage.get(role, {}), used)
    summary.calls = dict(sorted(calls.items()))
    summary.usage = dict(sorted(usage.items()))


def build_summary(
    protocol: Protocol[Any, Any, Any, Any],
    options: BaseModel,
    case_set: CaseSet[Any],
    bindings: Bindings,
    records: Iterable[CaseRecord],
    stats: RunStats,
    done_before: Container[str],
    seconds: float,
    cases_taken: str | None = None,
    seed: int | None = None,
) -> Summary:
    """summary.json. `records` may be read more than once (a run's are streamed from run.db, one
    at a time on each pass: `umni.store.cache.StoredRecords`). The nodes of `done_before` cases
    (finished by an earlier invocation) count with the status their record keeps: a result as
    cached, a skipped node as skipped, so a repeated or resumed run counts what an uninterrupted one does.
    `cases_taken` says what --limit or --shard left of the case set, when they left anything out
    (`why_no_overall`). `seed` is the run's, for its provenance."""
    failures: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    node_notes: Counter[str] = Counter()
    total = Counter(stats.statuses)  # this invocation's nodes, then the reused ones
    cases = 0
    for record in records:
        cases += 1
        reused = record.get("case_id") in done_before
        for node in record.get("nodes", {}).values():
            statuses[node["status"]] += 1
            if reused:
                total["cached" if node["status"] == "done" else node["status"]] += 1
            if "failure" in node:
                failures[node["failure"]["kind"]] += 1
            for note in node.get("notes", ()):
                node_notes[note.partition(":")[0].strip()] += 1
    counts = Counts(
        cases=cases,
        nodes=sum(total.values()),
        computed=total["computed"],
        cached=total["cached"],
        failed=total["failed"],
        blocked=total["blocked"],
        skipped=total["skipped"],
        skipped_cases=len(case_set.skipped),
        # a --phase run: work left for another phase
        pending=total["pending"] or None,
    )
    scores, why_not = _scores(protocol, records, options, bindings)
    return Summary(
        protocol=protocol.name,
        title=protocol.title,
        bindings=bindings.specs(),
        backends=bindings.identities(),
        options=options.model_dump(mode="json"),
        counts=counts,
        # every kind a node failed with is counted, a kind not listed in FAILURE_KINDS (a plugin's) too
        failures={kind: failures[kind] for kind in FAILURE_KINDS}
        | {kind: n for kind, n in sorted(failures.items()) if kind not in FAILURE_KINDS}
        | {"blocked": statuses["blocked"]},
        calls=dict(sorted(stats.calls.items())),
        usage={role: asdict(u) for role, u in sorted(stats.usage.items())},
        wall_seconds=round(seconds, 3),
        skipped_cases=[SkippedCase(case_id=s.case_id, reason=s.reason) for s in case_set.skipped],
        notes=len(case_set.notes),
        # inputs a backend could not honour (context images a text-only model ignored, prompts cut to
        # the text encoder's length), by kind; each is listed on its node in results.jsonl
        node_notes=dict(sorted(node_notes.items())),
        scores=scores,
        why_no_overall=why_no_overall(why_not, cases, statuses, case_set, cases_taken) if _empty_overall(scores) else None,
        provenance=run_provenance(protocol, options, bindings, scores.root, seed=seed, called=stats.calls),
    )


def _empty_overall(scores: RunScores) -> bool:
    return "overall" in scores and scores["overall"] is None


def _scores(
    protocol: Protocol[Any, Any, Any, Any], records: Iterable[CaseRecord], options: BaseModel, bindings: Bindings
) -> tuple[RunScores, str | None]:
    """The protocol's scores as JSON, and its reason when their headline is empty; a judged protocol
    also names its judge there, pinned for leaderboards. A protocol that scores from tallies is
    summed one record at a time; others get the list."""
    totals = sum_tallies(protocol, records, options)
    made = protocol.score_tallies(totals, options) if totals is not None else protocol.summarize(list(records), options)
    scores = scores_json(made)
    if "judge" in protocol.roles and scores.get("judge") is None:
        scores["judge"] = bindings.specs().get("judge")
    run_scores = RunScores(scores)
    return run_scores, protocol.why_no_overall(made, options) if _empty_overall(run_scores) else None


def why_no_overall(
    protocol_says: str | None, cases: int, statuses: Counter[str], case_set: CaseSet[Any], cases_taken: str | None
) -> str:
    """Why a run's headline is empty, for its `overall:` line: no case ran, every node failed, or
    the protocol's own reason (`Protocol.why_no_overall`); with what --limit or --shard took."""
    if cases and not statuses["done"] and statuses["failed"] + statuses["blocked"]:
        return "every node failed or was blocked (see failures)"
    if cases:
        said = protocol_says or "nothing was scored"
    else:
        skipped = len(case_set.skipped)
        said = "no case was run" + (f" ({skipped} skipped, reasons in summary.json)" if skipped else "")
    return f"{said}: {cases_taken}" if cases_taken else said
