"""Faults over real HTTP: a UmniBench run against the stub OpenAI server, with failures on cue.

Transient faults (429, 503, resets, stalls past the timeout, cut-off JSON, truncated images) are
retried with backoff and leave results identical to a fault-free run; permanent ones (400) are not
retried and end as counted node failures; every call is bounded in attempts and in time.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from reliability_support import FAST_RETRY, TimedStub, letter_by_hash, openai_spec, read_results

from tests.support.openai_server import Fault, OpenAIStubServer
from umni.run.evaluation import RunRequest, RunResult, evaluate
from umni.util.policy import RetryPolicy
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend

CASES = 3
#: Calls one UmniBench case makes: generate, two edits, nine questions.
CALLS_PER_CASE = {"/images/generations": 1, "/images/edits": 2, "/chat/completions": 9}


def run_against(server: OpenAIStubServer, tmp: Path, name: str, *, retry: RetryPolicy = FAST_RETRY,
                limit: int = CASES, timeout: float = 0.5, **params: str) -> RunResult:
    request = RunRequest(
        protocol="umnibench", out=tmp / name, cache=tmp / f"{name}-cache", model=openai_spec(server, timeout=timeout, **params),
        limit=limit, concurrency=1, retry=retry, progress=False,
    )  # fmt: skip
    return evaluate(request)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """results.jsonl of a fault-free run: what every faulty run must reproduce where it succeeded."""
    tmp = tmp_path_factory.mktemp("baseline")
    with OpenAIStubServer(responder=letter_by_hash) as server:
        result = run_against(server, tmp, "clean")
        assert server.count() == CASES * sum(CALLS_PER_CASE.values())
    assert all(n == 0 for n in result.summary.failures.values())
    return read_results(tmp / "clean")


def retry_events(out: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e["event"] == "node.retry"]


def test_transient_faults_are_retried_and_leave_results_unchanged(tmp_path, baseline):
    schedule = [
        Fault.rate_limit(retry_after="0.4"), None,
        Fault.unavailable(), None,
        Fault.reset(), None,
        Fault.stall(3.0), None,  # longer than the 0.5 s client timeout
        Fault.malformed_json(), None,
        Fault.server_error(502), None,
        Fault.bad_image(path="/images/edits"),
    ]  # fmt: skip
    faults = sum(f is not None for f in schedule)
    with TimedStub(faults=schedule, responder=letter_by_hash) as server:
        started = time.monotonic()
        result = run_against(server, tmp_path, "faulty")
        elapsed = time.monotonic() - started
        arrivals = server.arrivals()
        assert server.faults_remaining == 0
        assert server.count() == CASES * sum(CALLS_PER_CASE.values()) + faults
        assert server.last("/images/edits").status == 200  # the truncated image was fetched again

    assert read_results(tmp_path / "faulty") == baseline
    summary = result.summary
    assert all(n == 0 for n in summary.failures.values()), summary.failures
    assert sum(summary.calls.values()) == CASES * sum(CALLS_PER_CASE.values()) + faults
    assert len(retry_events(tmp_path / "faulty")) == faults
    # The first request got the 429 with Retry-After: 0.4, so its retry came no sooner.
    assert arrivals[1] - arrivals[0] >= 0.35
    # One stall (0.5 s timeout) and one Retry-After wait dominate; backoff waits are tiny.
    assert elapsed < 12


def test_retry_after_is_honoured_and_capped(tmp_path):
    policy = replace(FAST_RETRY, max_wait=0.6)
    with TimedStub(faults=[Fault.rate_limit(retry_after="0.3"), None, Fault.rate_limit(retry_after="3600")],
                   responder=letter_by_hash) as server:  # fmt: skip
        run_against(server, tmp_path, "ra", retry=policy, limit=1)
        t = server.arrivals()
    assert 0.25 <= t[1] - t[0] < 0.3 + 0.5, "a 0.3 s Retry-After was not honoured"
    # A server asking for an hour is capped at max_wait: the run cannot be parked by a header.
    assert 0.55 <= t[3] - t[2] < 0.6 + 0.5


@pytest.mark.parametrize(
    ("path", "passed", "failed_node", "blocked"),
    [
        ("/chat/completions", 0, r"(generation|interaction|counterfactual)/Q\d", 0),
        ("/images/generations", 0, "generation/image", 11),
        # The first request (always a case's first image: nothing else can start before one) passes,
        # so the fault lands on a later one, usually not the first case's.
        ("/images/generations", 1, "generation/image", 11),
    ],
)
def test_permanent_error_is_not_retried_and_is_counted(tmp_path, baseline, path, passed, failed_node, blocked):
    """The server refuses one request to `path`, whichever case's node sent it (cases run side by
    side, so the first to arrive is not always the first case's)."""
    fault = Fault.bad_request("Invalid value for 'model': no such model", path=path)
    with OpenAIStubServer(faults=[None] * passed + [fault], responder=letter_by_hash) as server:
        result = run_against(server, tmp_path, "perm")
        calls = {p: server.count(p) for p in CALLS_PER_CASE}
    expected_calls = {p: CASES * n for p, n in CALLS_PER_CASE.items()}
    if blocked:  # one case's image failed, so nothing downstream of it was called
        expected_calls = {p: n - (CALLS_PER_CASE[p] if p != path else 0) for p, n in expected_calls.items()}
    assert calls == expected_calls  # exactly one request to `path` failed, and it was not repeated

    records = read_results(tmp_path / "perm")
    failed = [(record, nid, node) for record in records for nid, node in record["nodes"].items() if node["status"] == "failed"]
    assert len(failed) == 1
    record, nid, node = failed[0]
    assert re.fullmatch(failed_node, nid), nid
    assert node["failure"]["kind"] == "backend" and node["failure"]["attempts"] == 1
    assert "HTTP 400" in node["failure"]["message"]
    assert sum(n["status"] == "blocked" for n in record["nodes"].values()) == blocked
    assert result.summary.failures["backend"] == 1
    assert result.summary.failures["blocked"] == blocked
    assert result.summary.counts.failed == 1

    # Every case the fault did not touch is exactly the fault-free record.
    hit = records.index(record)
    assert [r["case_id"] for r in records] == [r["case_id"] for r in baseline]
    assert records[:hit] + records[hit + 1 :] == baseline[:hit] + baseline[hit + 1 :]
    if not blocked:
        question = nid.split("/")[1]
        answer = record["questions"][question]
        assert answer["correct"] is None and answer["failure"] == "backend"  # missing, not wrong
        others = {k: v for k, v in record["questions"].items() if k != question}
        assert others == {k: v for k, v in baseline[hit]["questions"].items() if k != question}
        assert result.summary.scores["failed"][question] == 1
        assert result.summary.scores["answered"][question] == CASES - 1


def test_a_server_that_never_recovers_costs_at_most_max_attempts(tmp_path):
    policy = replace(FAST_RETRY, max_attempts=3)
    with OpenAIStubServer(faults=[Fault.unavailable()] * 50) as server:
        started = time.monotonic()
        result = run_against(server, tmp_path, "down", retry=policy, limit=1)
        elapsed = time.monotonic() - started
        assert server.count() == 3
    node = read_results(tmp_path / "down")[0]["nodes"]["generation/image"]
    assert node["failure"]["kind"] == "backend" and node["failure"]["attempts"] == 3
    assert result.summary.failures["blocked"] == 11
    assert elapsed < 5


def test_a_stalling_server_cannot_stall_the_run(tmp_path):
    """Every request hangs; the client timeout bounds each attempt and the budget bounds the call."""
    policy = replace(FAST_RETRY, max_attempts=100, budget_seconds=1.0)
    with OpenAIStubServer(faults=[Fault.stall(30.0)] * 100) as server:
        started = time.monotonic()
        result = run_against(server, tmp_path, "stall", retry=policy, limit=1, timeout=0.3)
        elapsed = time.monotonic() - started
        attempts = server.count()
    node = read_results(tmp_path / "stall")[0]["nodes"]["generation/image"]
    assert node["failure"]["kind"] == "backend" and "timeout" in node["failure"]["message"]
    assert 2 <= attempts == node["failure"]["attempts"] <= 6
    assert result.summary.counts.failed == 1
    assert elapsed < 6


def test_choose_against_the_stub_answers_the_option_with_the_answer_word():
    async def ask() -> Any:
        with OpenAIStubServer(answer_word="glossy") as server:
            backend = OpenAIBackend(Spec.parse(openai_spec(server)))
            await backend.start()
            try:
                return await backend.choose(["How does the bowl look?"], ["Woven", "Glossy glaze", "Rough"])
            finally:
                await backend.aclose()

    reply = anyio.run(ask)
    assert (reply.index, reply.text, reply.mode) == (1, "Answer: B", "letter")
